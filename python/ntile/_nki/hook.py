"""The opt-in import hook: after ``ntile.nki.install()``, ``import nki...`` and
``import neuronxcc.nki...`` (and ``from neuronxcc import nki``) in an unchanged kernel file
resolve to ntile's ``ntile.nki`` and ``ntile.neuronxcc.nki``."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

_ROOTS = {"nki": "ntile.nki", "neuronxcc": "ntile.neuronxcc"}


def _target(fullname: str) -> Optional[str]:
    root = fullname.split(".", 1)[0]
    base = _ROOTS.get(root)
    if base is None:
        return None
    return base + fullname[len(root):]


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: Any) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        pass


class Finder(importlib.abc.MetaPathFinder):
    """Maps ``nki[.x]`` and ``neuronxcc[.x]`` onto ntile's modules of the same path."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None) -> Any:
        real = _target(fullname)
        if real is None:
            return None
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            return None
        if found is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _Alias(real), is_package=found.submodule_search_locations
                                              is not None)
        return spec


_FINDER = Finder()


def install() -> None:
    """Make ``import nki`` / ``import neuronxcc.nki`` load ntile (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Undo :func:`install` (modules already imported under the aliases are dropped too)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in list(sys.modules):
        if _target(name) is not None and getattr(sys.modules[name], "__name__", "").startswith("ntile."):
            del sys.modules[name]
