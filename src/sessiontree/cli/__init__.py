"""The ``sessiontree`` command line: a thin typer shell over the library, one module per command group.

No session logic lives here; every command calls a public library function and renders its result.
"""

from __future__ import annotations

from .app import app, main

__all__ = ["app", "main"]
