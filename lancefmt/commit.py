"""pylance's ``lance.commit`` module (the error a commit raises when a concurrent one wins),
which is also lancefmt's ``commit`` function.

``lancefmt.commit(uri, operation, read_version)`` is part of lancefmt's API, and code written
for pylance imports ``lance.commit`` as a module. Importing this module replaces the
``lancefmt.commit`` attribute with it, so the module is made callable: calling it commits, as
:func:`lancefmt.dataset.commit` does.
"""
import sys
import types

from .dataset import commit as _commit_function
from .errors import CommitConflictError, RetryableCommitConflictError

__all__ = ["CommitConflictError", "RetryableCommitConflictError"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return _commit_function(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
