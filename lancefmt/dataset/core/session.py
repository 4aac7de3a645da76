"""Session: what one opened dataset shares across the versions it moves to (pylance's Session).

pylance gives every ``lance.dataset(...)`` call a session of its own, holding its index and
metadata caches, unless one is passed (``session=``: datasets then share them); checking out
another version or committing keeps the session. lancefmt does the same: loaded index segments
(and the pages they loaded) live in the session, and so do the caches of opened data files,
deletion vectors and row-id sequences of every view made with it (:mod:`.reader_cache`), so
a look-up repeated on one Dataset pays nothing again, and a freshly opened Dataset starts cold.

``metadata_cache_size_bytes`` bounds each view's metadata caches by bytes (0: nothing is
kept); the index cache is bounded by segments (``max_indices``; ``index_cache_size_bytes=0``
keeps none, other sizes are reported, not enforced).
"""
from __future__ import annotations

import weakref

from ...errors import InvalidArgumentError
from ...index.core.catalog import MAX_LOADED, LoadedCache
from .reader_cache import caches_of, value_nbytes


class Session:
    def __init__(self, index_cache_size_bytes: int | None = None,
                 metadata_cache_size_bytes: int | None = None, index_cache_backend=None,
                 metadata_cache_backend=None, *, max_indices: int = MAX_LOADED):
        if index_cache_backend is not None or metadata_cache_backend is not None:
            raise InvalidArgumentError("lancefmt sessions have no pluggable cache backends")
        for name, v in (("index_cache_size_bytes", index_cache_size_bytes),
                        ("metadata_cache_size_bytes", metadata_cache_size_bytes)):
            if v is not None and int(v) < 0:
                raise InvalidArgumentError(f"{name} must be >= 0")
        self.index_cache = LoadedCache(0 if index_cache_size_bytes == 0 else max_indices)
        self.index_cache_limit = None if index_cache_size_bytes is None else int(index_cache_size_bytes)
        self.metadata_cache_limit = None if metadata_cache_size_bytes is None \
            else int(metadata_cache_size_bytes)
        self._views = weakref.WeakSet()   # the metadata caches of views made with it

    def adopt(self, ctx) -> None:
        """Make a view's (its ScanContext's) metadata caches part of this session."""
        self._views.add(caches_of(ctx, self.metadata_cache_limit))

    def index_cache_entry_count(self) -> int:
        return len(self.index_cache)

    def index_cache_size_bytes(self) -> int:
        """Bytes of the arrays the loaded index segments hold."""
        return sum(value_nbytes(v) for v in self.index_cache.values())

    def metadata_cache_size_bytes(self) -> int:
        return sum(c.nbytes() for c in list(self._views))

    def size_bytes(self) -> int:
        return self.index_cache_size_bytes() + self.metadata_cache_size_bytes()

    def is_same_as(self, other: "Session") -> bool:
        return self is other

    def __repr__(self):
        return (f"Session(index_cache_size_bytes={self.index_cache_size_bytes()}, "
                f"metadata_cache_size_bytes={self.metadata_cache_size_bytes()})")
