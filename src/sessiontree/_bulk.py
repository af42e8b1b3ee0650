"""Building many long-lived objects at once without the garbage collector walking them.

Decoding a context or an index creates tens of thousands of dicts and lists and no reference cycles. With
the collector on, every 700 new containers start a pass over the young ones, and the passes that promote
them walk them again; with it off until the end, the first allocation after re-enabling it walks all of
them at once (about 1 ms per 10,000 containers). ``bulk_allocation`` turns the collector off meanwhile and
then files everything young as old (``gc.freeze`` + ``gc.unfreeze``, which move the young and middle
generations into the oldest one without walking them), so these objects are looked at only by the next
full collection, as objects that live on would be anyway (so is any garbage cycle that happened to be
young at that moment: it is freed by that full collection rather than a young one). A program that froze
objects itself (``gc.get_freeze_count()`` is not 0) keeps its frozen set: the collector is then only
turned back on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["bulk_allocation"]


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """No collection passes inside the block; what it built is filed as old objects at its end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()
