"""Names a package exports but imports only on first use (`lazy_names`): importing the package
stays fast, and the modules below it import its other modules without importing these."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_names(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each of ``names`` is taken from the module it
    maps to (a dotted name) when first asked for."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
