"""The cache files beside the index cache (``context_cache``, ``body_cache``): a 4-byte little-endian length, a
msgpack header of that length, then the body; written whole to a temporary file and moved into place."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from . import _fileio

__all__ = ["read", "write"]


def read(file: Path, fields: int, fmt: int) -> tuple[list[Any], memoryview] | None:
    """The header (a list of ``fields`` values, the first ``fmt``) and the body of ``file``; ``None`` when it
    is missing or is not such a file (``OSError`` and ``msgspec.DecodeError`` are the caller's too: reading
    the body may meet them)."""
    data = file.read_bytes()
    length = int.from_bytes(data[:4], "little")
    header = msgspec.msgpack.decode(data[4 : 4 + length])
    if not isinstance(header, list) or len(header) != fields or header[0] != fmt:
        return None
    return header, memoryview(data)[4 + length :]


def write(file: Path, header: list[Any], body: Iterable[bytes]) -> None:
    """Write ``file`` whole (``OSError`` is the caller's; no temporary file is left behind)."""
    encoded = msgspec.msgpack.encode(header)
    _fileio.ensure_dir(file.parent)
    temp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
    try:
        with open(temp, "wb") as out:
            out.write(len(encoded).to_bytes(4, "little"))
            out.write(encoded)
            out.writelines(body)
        os.replace(temp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
