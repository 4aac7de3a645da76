"""The error hierarchy of lancefmt (docs/api.md, "Errors").

Every failure that comes from data or storage is a ``LanceError``; callers can catch one type.
Errors about a file carry its path in ``path`` and in the message, so a user knows which object
in which bucket is bad.
"""
from __future__ import annotations


class LanceError(Exception):
    """Base of every lancefmt error."""


class DatasetNotFoundError(LanceError, FileNotFoundError):
    """No dataset (no committed manifest) at the URI, or no such version or tag."""


class DatasetExistsError(LanceError, FileExistsError):
    """``mode="create"`` on a URI that already holds a dataset."""


class CommitConflictError(LanceError):
    """A concurrent commit made this transaction impossible to apply; nothing was committed."""


class RetryableCommitConflictError(CommitConflictError):
    """A concurrent commit invalidated this transaction's inputs; redoing the operation on the
    new latest version (re-reading, re-planning) can succeed. Nothing was committed."""


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


class CorruptFileError(FileError):
    """A file is truncated, has bad magic, or does not decode (every length/offset is checked)."""


class UnsupportedFeatureError(FileError):
    """A file or dataset uses something this lancefmt does not implement (feature flag, encoding)."""


class InvalidPathError(LanceError, ValueError):
    """A path or base path escapes where it must stay (``..``, absolute where relative is required)."""


class InvalidArgumentError(LanceError, ValueError):
    """A caller passed something that cannot be honoured (bad mode, schema mismatch on append...)."""
