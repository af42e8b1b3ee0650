"""Lazy re-exports for the packages' ``__init__`` modules: a public name imports its module on first use.

``import sessiontree`` (or ``sessiontree.llm``) then costs next to nothing, and a program pays only for the
parts it touches. Each ``__init__`` keeps its ``__all__`` and the imports under ``TYPE_CHECKING`` (for type
checkers and readers), and calls ``export_lazily(__name__, {name: module})``; ``from pkg import name``,
``pkg.name``, ``dir(pkg)`` and ``from pkg import *`` work as with eager imports.
"""

from __future__ import annotations

import sys
from types import ModuleType

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: importing typing would cost more than everything here
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["export_lazily"]


class _LazyPackage(ModuleType):
    """A package whose exported names are imported from their modules when first asked for."""

    _lazy_exports: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        target = self.__dict__.get("_lazy_exports", {}).get(name)
        if target is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        module = f"{self.__name__}{target}" if target.startswith(".") else target
        if module not in sys.modules:
            from sessiontree._bulk import bulk_allocation

            # An import builds thousands of objects that live as long as the program (functions, classes,
            # constants): no collection passes while it runs, and they are filed as old objects after.
            with bulk_allocation():
                __import__(module)
        value = getattr(sys.modules[module], name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule names it on its package; where the package exports something else under
        # that name (``sessiontree.llm.stream`` is a function from the module ``stream``), the export wins.
        exports = self.__dict__.get("_lazy_exports", {})
        if isinstance(value, ModuleType) and name in exports and value.__name__ == f"{self.__name__}.{name}":
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self.__dict__.get("_lazy_exports", {})})


def export_lazily(package: str, exports: Mapping[str, str]) -> None:
    """Make every ``name`` of ``exports`` an attribute of ``package`` that imports ``exports[name]`` (a
    module name, relative to the package when it starts with ``.``) when first used."""
    module = sys.modules[package]
    module.__dict__["_lazy_exports"] = dict(exports)
    module.__class__ = _LazyPackage
