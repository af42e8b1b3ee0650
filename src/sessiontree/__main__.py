"""``python -m sessiontree``: the command line, as the ``sessiontree`` script runs it.

Only hands over to ``sessiontree.cli.main``.
"""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    main()
