"""Names a package exports but imports on first use (PEP 562): importing the package
then loads only the modules its caller asks for (the remote client, for one, needs the
records and never the database layer behind them)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's module ``__getattr__``: each name in ``homes`` is imported from its
    module (relative to ``package``) when first asked for, then kept in the package."""

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
