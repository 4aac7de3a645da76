"""``import lance`` answered by lancefmt, for running pylance's own tests on lancefmt.

This directory goes first on ``sys.path`` in a ``--impl lancefmt`` run. ``lance`` is this
module, whose names are lancefmt's (``lance.dataset`` is the function, as in pylance), and
``lance.<x>`` (``lance.fragment``, ``lance.lance``, ``lance.file.api``, ...) is the module
``lancefmt.<x>`` itself, not a copy, so classes and module state are shared. A ``lance.<x>``
for which lancefmt has no ``lancefmt.<x>`` fails to import (ModuleNotFoundError): nothing is
faked, so the tests needing it fail and are counted.

With ``PYLANCE_SUITE_PROBE=1`` (``--probe``, a diagnostic that never feeds the counts) a
missing module, or a missing name imported from ``lance`` or one of its modules, is a
placeholder (:mod:`_pylance_suite_probe`) instead of an ImportError: the test file imports,
and each test fails where it first uses something lancefmt lacks, naming it: a to-do list.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types

import _pylance_suite_probe as _probe  # next to this package, not in it (see __path__)


def _drop_editable_finders() -> None:
    """Remove the meta-path finder of an editable install of lancefmt (setuptools'
    ``__editable___lancefmt_*_finder``): it would answer a submodule the checkout on sys.path
    lacks from the installed checkout, mixing two lancefmts. lancefmt comes from sys.path only.
    """
    for finder in list(sys.meta_path):
        mapping = getattr(sys.modules.get(getattr(finder, "__module__", "")), "MAPPING", None)
        if isinstance(mapping, dict) and "lancefmt" in mapping:
            sys.meta_path.remove(finder)


_drop_editable_finders()
import lancefmt as _impl  # noqa: E402

_EXPECTED = os.environ.get("PYLANCE_SUITE_LANCEFMT")  # the checkout the runner asked for
if _EXPECTED and not os.path.abspath(_impl.__file__).startswith(os.path.join(_EXPECTED, "")):
    raise ImportError(f"lancefmt was imported from {_impl.__file__}, not from {_EXPECTED}")

_PROBE = _probe.enabled()

__path__: list = []  # a package, but submodules come only from the finder below


class _Alias(importlib.abc.Loader):
    """Loads ``lance.<x>`` by putting the already imported ``lancefmt.<x>`` in its place."""

    def __init__(self, module: types.ModuleType):
        self.module = module

    def create_module(self, spec):
        return None  # a throwaway module; exec_module swaps in the real one

    def exec_module(self, module):
        # the import system returns what sys.modules holds after exec_module, so the real
        # module is what ``import lance.x`` gives, and its own __spec__ is left untouched
        sys.modules[module.__name__] = self.module


class _AliasFinder(importlib.abc.MetaPathFinder):
    """``lance.<x>`` -> ``lancefmt.<x>`` when lancefmt has that module."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("lance."):
            return None
        real = _impl.__name__ + fullname[len("lance"):]
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name is not None and (real == e.name or real.startswith(e.name + ".")):
                if _PROBE:
                    return importlib.machinery.ModuleSpec(fullname, _probe.MissingLoader(),
                                                          is_package=True)
                return None  # lancefmt has no such module: ``import lance.x`` fails
            raise  # lancefmt has it, but something it imports is missing: show that
        if _PROBE:
            module = _probe.proxy(fullname, module)
        return importlib.machinery.ModuleSpec(fullname, _Alias(module),
                                              is_package=hasattr(module, "__path__"))


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())

# the submodules pylance's own __init__ imports, so that (as there) they are imported before
# the names below are bound, and a later ``import lance.dataset`` does not rebind
# ``lance.dataset`` (the function) to the module
for _sub in ("io", "log", "blob", "dataset", "fragment", "lance", "mem_wal", "progress",
             "schema", "util"):
    if _PROBE and not _probe.exists(f"{_impl.__name__}.{_sub}"):
        continue  # pylance would have it; a placeholder here would shadow a lancefmt name
    try:
        importlib.import_module(f"{__name__}.{_sub}")
    except ImportError:
        pass

for _name, _value in vars(_impl).items():
    if _name.startswith("__") and _name.endswith("__") and _name not in ("__version__",
                                                                           "__all__"):
        continue
    if isinstance(_value, types.ModuleType) and f"{__name__}.{_name}" in sys.modules:
        _value = sys.modules[f"{__name__}.{_name}"]  # the module as imported (a probe proxy)
    globals()[_name] = _value


def __getattr__(name):
    """Names lancefmt binds lazily (a module ``__getattr__``) or after this import."""
    if _PROBE:
        return _probe.attribute(_impl, name, "lance")
    return getattr(_impl, name)
