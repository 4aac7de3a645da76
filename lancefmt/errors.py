"""The error hierarchy of lancefmt (docs/api.md, "Errors").

Every failure that comes from data or storage is a ``LanceError``; callers can catch one type.
Errors about a file carry its path in ``path`` and in the message, so a user knows which object
in which bucket is bad.
"""
from __future__ import annotations

import sqlite3


class LanceError(Exception):
    """Base of every lancefmt error."""


class DatasetNotFoundError(LanceError, FileNotFoundError, ValueError):
    """No dataset (no committed manifest) at the URI, or no such version or tag. Also a
    ``ValueError``: pylance 14 raises ValueError there, so pylance users' handlers still catch it."""


class DatasetExistsError(LanceError, FileExistsError):
    """``mode="create"`` on a URI that already holds a dataset."""


class CommitConflictError(LanceError, OSError):
    """A concurrent commit made this transaction impossible to apply; nothing was committed.
    An ``OSError``, as pylance's ``lance.commit.CommitConflictError``; ``retryable`` says
    whether redoing the operation on the new latest version can succeed."""

    retryable = False

    def __init__(self, message: str = "", retryable: bool | None = None):
        super().__init__(message)
        if retryable is not None:
            self.retryable = bool(retryable)

    def __str__(self) -> str:
        return self.args[0] if self.args else ""

    def __reduce__(self):
        return (type(self), (str(self), self.retryable))


class RetryableCommitConflictError(CommitConflictError):
    """A concurrent commit invalidated this transaction's inputs; redoing the operation on the
    new latest version (re-reading, re-planning) can succeed. Nothing was committed."""

    retryable = True


class ConditionalPutUnsupportedError(LanceError, OSError):
    """The storage cannot commit safely by itself (its conditional put is not honoured, or a
    local file system has neither hard links nor ``renameat2``); nothing was committed. Commit
    through an external manifest store: ``manifest_store=lancefmt.SqliteManifestStore(path)``."""


class FileError(LanceError):
    """An error about one file; ``path`` names it."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)

    def __reduce__(self):
        return (type(self), (self.reason, self.path))


class CorruptFileError(FileError, ValueError):
    """A file is truncated, has bad magic, or does not decode (every length/offset is checked).
    Also a ``ValueError``, as pylance's errors for undecodable files and manifests are."""


class UnsupportedFeatureError(FileError):
    """A file or dataset uses something this lancefmt does not implement (feature flag, encoding)."""


class UnsupportedColumnTypeError(LanceError, TypeError):
    """An index (or operation) cannot take a column of this type; pylance raises TypeError."""


class InvalidPathError(LanceError, ValueError):
    """A path or base path escapes where it must stay (``..``, absolute where relative is required)."""


class InvalidArgumentError(LanceError, ValueError):
    """A caller passed something that cannot be honoured (bad mode, schema mismatch on append...)."""


class StorageError(LanceError, OSError):
    """A storage operation failed (permission, disk full, missing object...). ``path`` and
    ``operation`` name what failed; the OS error is ``__cause__``. Derives from ``OSError``
    (and from its specific subclass, see :func:`storage_error`) so ``except OSError`` and
    ``except FileNotFoundError`` keep working."""

    def __init__(self, operation: str, path: str | None, reason: str = "", errno: int | None = None):
        self.operation = operation
        self.path = path
        self.reason = reason
        message = f"{operation} {path} failed" + (f": {reason}" if reason else "")
        if errno is not None:
            OSError.__init__(self, errno, message)
        else:
            OSError.__init__(self, message)
        self.filename = path
        self._message = message

    def __str__(self) -> str:
        return self._message

    def __reduce__(self):
        return (type(self), (self.operation, self.path, self.reason, self.errno))


class StorageNotFoundError(StorageError, FileNotFoundError):
    """The object a storage operation needed does not exist."""


class StorageExistsError(StorageError, FileExistsError):
    """A storage operation found an object where none was expected."""


class StoragePermissionError(StorageError, PermissionError):
    """Storage refused the operation (credentials, file permissions)."""


class StorageIsADirectoryError(StorageError, IsADirectoryError):
    """A file operation met a directory."""


class StorageNotADirectoryError(StorageError, NotADirectoryError):
    """A path component that must be a directory is a file."""


_STORAGE_ERROR_CLASSES = (
    (FileNotFoundError, StorageNotFoundError),
    (FileExistsError, StorageExistsError),
    (PermissionError, StoragePermissionError),
    (IsADirectoryError, StorageIsADirectoryError),
    (NotADirectoryError, StorageNotADirectoryError),
)


def storage_error(exc: BaseException, operation: str, path: str | None) -> StorageError:
    """The :class:`StorageError` (of the subclass matching ``exc``'s builtin type) that reports
    ``exc`` for ``operation`` on ``path``; the caller raises it ``from exc``."""
    cls = StorageError
    for builtin, wrapper in _STORAGE_ERROR_CLASSES:
        if isinstance(exc, builtin):
            cls = wrapper
            break
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return cls(operation, path, reason, getattr(exc, "errno", None))


class RowOutOfRangeError(InvalidArgumentError, OSError):
    """A row offset/address past the rows there are. pylance raises OSError here and
    ValueError for other bad arguments; this is both, so either handler catches it."""


class InvalidInputError(InvalidArgumentError, OSError):
    """Bad caller input where pylance raises ``OSError`` rather than ``ValueError`` (a delete
    predicate that does not parse or names no column; an append whose schema differs). Both
    builtins catch it, so code written for either library keeps working."""


class NotSupportedError(LanceError, NotImplementedError):
    """An operation a Lance dataset does not offer (``pyarrow.dataset.Dataset`` methods with no
    Lance meaning, such as partitioning or joins). pylance raises ``NotImplementedError`` for
    these, so this derives from it too."""


class ForkedStoreError(LanceError, RuntimeError):
    """This process was forked from inside an operation on a SQLite manifest store, so it must
    not use that file (the transaction in flight belongs to the parent)."""


class SqliteStoreError(StorageError, sqlite3.OperationalError):
    """SQLite failed an operation on the store (locked past the timeout, disk full, corrupt
    file...). A :class:`StorageError` (so an ``OSError``) and still a
    ``sqlite3.OperationalError``; the SQLite error is ``__cause__``."""


class MissingDependencyError(LanceError, ImportError):
    """An optional package lancefmt needs for this operation is not installed (``gcsfs`` for
    ``gs://``, ``adlfs`` for ``az://``...); the message names it and the pip command."""


class LanceWarning(UserWarning):
    """Something lancefmt ignored or could not honour, where pylance goes on silently too (a
    storage option it does not know, ...): the run continues, the warning says what was dropped."""
