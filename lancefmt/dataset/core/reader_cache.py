"""Opened data files, deletion vectors and row-id sequences, kept per dataset view for repeated reads.

Opening a data file reads and parses its tail (footer, column metadata, FileDescriptor): a
request and a few milliseconds per file. Random access (``take``, ``sample``, shuffled batches)
touches every fragment on every call, so re-opening dominated small takes. Data files,
deletion files and row-id sequences are immutable once committed (a rewrite gets a new name), so an opened reader
keyed by the file's URI and size stays valid for as long as anyone holds the dataset view.

The cache hangs off the view's :class:`~.context.ScanContext` (weakly: it dies with the view,
and it never travels when a context is pickled to a Spark executor). It is bounded (LRU).
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

from ...file.reader import LanceFileReader

MAX_READERS = 256
MAX_SMALL_VALUES = 4096


class _LRU:
    def __init__(self, limit: int):
        self.limit = limit
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key, value):
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        return value

    def __len__(self):
        return len(self._items)


class _Caches:
    def __init__(self):
        self.readers = _LRU(MAX_READERS)
        self.small = _LRU(MAX_SMALL_VALUES)


_BY_CONTEXT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def caches_of(ctx) -> _Caches:
    with _LOCK:
        c = _BY_CONTEXT.get(ctx)
        if c is None:
            c = _BY_CONTEXT[ctx] = _Caches()
        return c


def open_data_file(ctx, uri: str, file_size: int | None) -> LanceFileReader:
    """A reader of data file ``uri`` (opened once per view; ``file_size`` from the manifest)."""
    cache = caches_of(ctx).readers
    key = (uri, int(file_size or 0))
    reader = cache.get(key)
    if reader is None:
        reader = cache.put(key, LanceFileReader(uri, store=ctx.store_for(uri),
                                                file_size=file_size or None))
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
        cache.put(key, ABSENT if value is None else value)
        return value
    return None if hit is ABSENT else hit
