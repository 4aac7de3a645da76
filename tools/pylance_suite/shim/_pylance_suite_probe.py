"""Placeholders for what lancefmt lacks: the ``lance`` shim's probe mode, a diagnostic only.

A test file that imports something lancefmt does not have (``from lance.indices import
IndexConfig``) fails to import as a whole, which hides what each of its tests needs. In probe
mode the missing module or name is a :class:`Placeholder`; using it (calling it, iterating
it, subclassing it) raises :class:`LancefmtLacks` naming it, and records the name in
:data:`USED`. (LancefmtLacks is an Exception, as pytest's fixture machinery needs; a test
that expects any Exception may take it for its expected error, so the outcome plugin reports
a test that used a placeholder, and the report never counts it as passing.) Probe runs are
never counted as lancefmt's results.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import os
import types

ENV = "PYLANCE_SUITE_PROBE"


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


USED: list[str] = []  # the placeholders used since the outcome plugin last cleared it


class LancefmtLacks(Exception):
    """A placeholder was used: lancefmt has no such module or name."""

    def __init__(self, name: str):
        super().__init__(name)
        USED.append(name)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class _MissingBase:
    """What a class derived from a placeholder derives from: it cannot be instantiated."""

    _missing = "?"

    def __init__(self, *args, **kwargs):
        raise LancefmtLacks(self._missing)


class Placeholder:
    """Stands for the missing ``name``; its attributes are placeholders too (so that
    ``IndexFileVersion.V3`` in a decorator imports), any real use raises."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr):
        if _dunder(attr):
            raise AttributeError(attr)
        return Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise LancefmtLacks(self._name)

    def __iter__(self):
        raise LancefmtLacks(self._name)

    def __mro_entries__(self, bases):
        return (type(self._name.rpartition(".")[2], (_MissingBase,), {"_missing": self._name}),)

    def __repr__(self):
        return f"<lancefmt lacks {self._name}>"


def attribute(real, name: str, alias: str):
    """``real.name``, or a placeholder named ``alias.name`` when ``real`` has none."""
    try:
        return getattr(real, name)
    except AttributeError:
        if _dunder(name):
            raise
        return Placeholder(f"{alias}.{name}")


class MissingModule(types.ModuleType):
    """A module lancefmt does not have: every name in it is a placeholder."""

    def __getattr__(self, attr):
        if _dunder(attr):
            raise AttributeError(attr)
        return Placeholder(f"{self.__name__}.{attr}")


class MissingLoader(importlib.abc.Loader):
    def create_module(self, spec):
        module = MissingModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


class ProxyModule(types.ModuleType):
    """A lancefmt module seen as ``lance.<x>``: its names, and placeholders for the others.
    (Setting a name on it does not set it on the lancefmt module.)"""

    def __init__(self, name: str, real: types.ModuleType):
        super().__init__(name, real.__doc__)
        self.__dict__["_real"] = real
        if hasattr(real, "__path__"):
            self.__path__ = list(real.__path__)

    def __getattr__(self, attr):
        return attribute(self.__dict__["_real"], attr, self.__name__)


def proxy(name: str, real: types.ModuleType) -> ProxyModule:
    return ProxyModule(name, real)


def exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
