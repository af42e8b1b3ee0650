"""pi 1.6.0's own code for tests: the bundle that ``bash tools/pi_js/build.sh`` makes (see tools/pi_js/README.md).

``pi_js_or_skip()`` returns it, or skips with the reason (node missing, not built, another pi version); with
``SESSIONTREE_REQUIRE_PI_JS=1`` (CI, after running build.sh) it fails instead. It never installs anything.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
try:
    from bench.pi_js import PiJs, prepare
finally:
    sys.path.remove(str(REPO))

__all__ = ["PiJs", "pi_js_or_skip", "prepare"]


def pi_js_or_skip() -> PiJs:
    """The built bundle (``$SESSIONTREE_PI_JS_DIR`` or ``~/.cache/sessiontree-pi-js``), else skip or fail."""
    found = prepare(build=False)
    if isinstance(found, str):
        if os.environ.get("SESSIONTREE_REQUIRE_PI_JS") == "1":
            pytest.fail(f"SESSIONTREE_REQUIRE_PI_JS=1 but {found}")
        pytest.skip(found)
    return found
