"""The storage layer: one small interface over local files, ``memory://`` and fsspec (``s3://``).

Nothing above this package imports fsspec. See :class:`ObjectStore` for the operations,
including the atomic :meth:`ObjectStore.put_if_absent` the commit protocol relies on.
"""
from . import s3 as _s3  # noqa: F401  (registers the s3 family's store)
from .durable import wait_durable
from .uploads import carry_scope, io_scope
from .store import FileInfo, LocalStore, MemoryStore, FsspecStore, ObjectStore, with_manifest_store
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


def open_store(uri, storage_options: dict | None = None, manifest_store=None) -> ObjectStore:
    """The (cached) store that serves ``uri``; with ``manifest_store`` (an external manifest
    store object, see :func:`lancefmt.table.manifest_stores.as_manifest_store`), a copy that
    commits and resolves versions through it."""
    return with_manifest_store(ObjectStore.for_uri(uri, storage_options), manifest_store)


__all__ = [
    "FileInfo", "ObjectStore", "with_manifest_store", "LocalStore", "MemoryStore", "FsspecStore", "open_store",
    "SplitUri", "split_uri", "join_uri", "normalize_uri", "child", "check_relative",
    "check_base_uri", "has_scheme", "wait_durable", "io_scope", "carry_scope",
]
