"""The storage layer: one small interface over local files, ``memory://`` and fsspec (``s3://``).

Nothing above this package imports fsspec. See :class:`ObjectStore` for the operations,
including the atomic :meth:`ObjectStore.put_if_absent` the commit protocol relies on.
"""
from .store import FileInfo, LocalStore, MemoryStore, FsspecStore, ObjectStore
from .uri import (
    SplitUri,
    check_base_uri,
    check_relative,
    child,
    has_scheme,
    join_uri,
    normalize_uri,
    split_uri,
)


def open_store(uri, storage_options: dict | None = None) -> ObjectStore:
    """The (cached) store that serves ``uri``."""
    return ObjectStore.for_uri(uri, storage_options)


__all__ = [
    "FileInfo", "ObjectStore", "LocalStore", "MemoryStore", "FsspecStore", "open_store",
    "SplitUri", "split_uri", "join_uri", "normalize_uri", "child", "check_relative",
    "check_base_uri", "has_scheme",
]
