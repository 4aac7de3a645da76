"""Opened data files, deletion vectors and row-id sequences, kept per dataset view for repeated reads.

Opening a data file reads and parses its tail (footer, column metadata, FileDescriptor): a
request and a few milliseconds per file. Random access (``take``, ``sample``, shuffled batches)
touches every fragment on every call, so re-opening dominated small takes. Data files,
deletion files and row-id sequences are immutable once committed (a rewrite gets a new name), so an opened reader
keyed by the file's URI and size stays valid for as long as anyone holds the dataset view.

The cache hangs off the view's :class:`~.context.ScanContext` (weakly: it dies with the view,
and it never travels when a context is pickled to a Spark executor). It is bounded (LRU) by
entries and, for a view of a session with a metadata budget (pylance's
``metadata_cache_size_bytes``), by the bytes its entries hold: a reader counts its file's
metadata tail, a value its arrays. The session sums these for ``Session.size_bytes()``.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

from ...file.reader import LanceFileReader

MAX_READERS = 256
MAX_SMALL_VALUES = 4096


class _LRU:
    """Entries with their sizes, least recently used dropped first beyond ``limit`` entries
    or while ``owner`` is over its byte budget."""

    def __init__(self, limit: int, owner: "_Caches"):
        self.limit = limit
        self.owner = owner
        self.nbytes = 0
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key, value, size: int = 0):
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._items[key] = (value, int(size))
            self.nbytes += int(size)
            while self._items and (len(self._items) > self.limit or self.owner.over_budget()):
                _, (_, gone) = self._items.popitem(last=False)
                self.nbytes -= gone
        return value

    def __len__(self):
        return len(self._items)


class _Caches:
    """One view's caches; ``max_bytes`` (None: no byte budget) bounds both together."""

    def __init__(self, max_bytes: int | None = None):
        self.max_bytes = max_bytes
        self.readers = _LRU(MAX_READERS, self)
        self.small = _LRU(MAX_SMALL_VALUES, self)

    def nbytes(self) -> int:
        return self.readers.nbytes + self.small.nbytes

    def over_budget(self) -> bool:
        return self.max_bytes is not None and self.nbytes() > self.max_bytes


_BY_CONTEXT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def caches_of(ctx, max_bytes: int | None = None) -> _Caches:
    """The view's caches (made with ``max_bytes`` the first time they are asked for: a
    session asks first, when its view's context is made)."""
    with _LOCK:
        c = _BY_CONTEXT.get(ctx)
        if c is None:
            c = _BY_CONTEXT[ctx] = _Caches(max_bytes)
        return c


def value_nbytes(value) -> int:
    """Bytes a cached value holds: its arrays (its own, or those of its attributes)."""
    if hasattr(value, "nbytes"):
        return int(value.nbytes)
    total = 0
    for v in getattr(value, "__dict__", {}).values():
        if hasattr(v, "nbytes"):
            total += int(v.nbytes)
    return total


def open_data_file(ctx, uri: str, file_size: int | None) -> LanceFileReader:
    """A reader of data file ``uri`` (opened once per view; ``file_size`` from the manifest)."""
    cache = caches_of(ctx).readers
    key = (uri, int(file_size or 0))
    reader = cache.get(key)
    if reader is None:
        reader = LanceFileReader(uri, store=ctx.store_for(uri), file_size=file_size or None)
        cache.put(key, reader, getattr(reader, "metadata_nbytes", 0))
    return reader


class _Absent:
    """Marks a fragment known to have no deletion file (None cannot be stored in the LRU)."""


ABSENT = _Absent()


def cached_value(ctx, key, load):
    """``load()`` once per ``key`` per view (deletion vectors, row-id sequences: small, and
    immutable once committed)."""
    cache = caches_of(ctx).small
    hit = cache.get(key)
    if hit is None:
        value = load()
        cache.put(key, ABSENT if value is None else value, 0 if value is None else value_nbytes(value))
        return value
    return None if hit is ABSENT else hit
