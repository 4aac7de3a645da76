"""The indices of one dataset version, grouped by name, with their segments loaded on demand.

A :class:`NamedIndex` is what a user calls one index: every manifest entry (segment) with that
name. Its coverage is the union of its segments' fragment bitmaps. Segments are loaded the first
time a query needs them and kept in a process-wide cache keyed by their directory (an index
directory never changes once committed), so reopening a dataset does not reload its indices.
An entry whose type lancefmt does not know is left out with one :class:`LanceWarning`: the rows
it would have answered are scanned.
"""
from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
from pyroaring import BitMap

from ...errors import CorruptFileError, LanceError, LanceWarning
from .metadata import fragment_ids, is_system, uuid_text
from .registry import IndexType, LoadedIndex, by_details, by_files
from .stats import count
from .store import IndexStore

MAX_LOADED = 128


class LoadedCache:
    """Loaded segments by directory, least recently used dropped first (a session's)."""
    def __init__(self, limit: int):
        self.limit = limit
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_load(self, key, load):
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return hit
            self.misses += 1
        value = load()
        if self.limit <= 0:
            return value
        with self._lock:
            value = self._items.setdefault(key, value)
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def hit_rate(self) -> float:
        """Look-ups answered from the cache, of all look-ups (0.0 before the first)."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def __len__(self) -> int:
        return len(self._items)

    def values(self) -> list:
        with self._lock:
            return list(self._items.values())


LOADED = LoadedCache(MAX_LOADED)  # for segments loaded outside any session
_WARNED: set = set()


@dataclass
class Segment:
    meta: object                    # table_pb2.IndexMetadata
    itype: IndexType
    fragments: BitMap
    store: IndexStore
    stable_row_ids: bool = False
    cache: "LoadedCache | None" = None      # the session's; None: the process-wide one

    @property
    def index_version(self) -> int:
        return int(self.meta.index_version) if self.meta.HasField("index_version") else 0

    @property
    def records_addresses(self) -> bool:
        return self.itype.records_addresses(self.index_version, self.stable_row_ids)

    @property
    def uuid(self) -> str:
        return uuid_text(self.meta)

    def load(self) -> LoadedIndex:
        details = self.itype.unpack_details(self.meta.index_details, self.store.dir_uri)
        cache = self.cache if self.cache is not None else LOADED

        def load():
            count("indices_loaded")
            return guarded(self, lambda: self.itype.load(self.store, details))

        return cache.get_or_load(("segment", self.store.dir_uri), load)

    def search(self, query):
        loaded = self.load()
        return guarded(self, lambda: loaded.search(query))


# What a type's reader may raise on bytes that are well-formed Lance files but not the index it
# expects (a missing column, a wrong type, a value out of range): a corrupt index, not a crash.
_MALFORMED = (KeyError, ValueError, TypeError, IndexError, OverflowError, pa.ArrowException)


def guarded(segment: "Segment", call):
    """``call()``, with a malformed index's Python/Arrow error turned into CorruptFileError
    naming the segment's directory (LanceErrors pass as they are)."""
    try:
        return call()
    except LanceError:
        raise
    except _MALFORMED as e:
        raise CorruptFileError(f"index {segment.meta.name!r} ({segment.itype.type_name}) is "
                               f"malformed: {type(e).__name__}: {e}", segment.store.dir_uri) from None


@dataclass
class NamedIndex:
    name: str
    column: str
    itype: IndexType
    segments: list = field(default_factory=list)

    @property
    def coverage(self) -> BitMap:
        out = BitMap()
        for s in self.segments:
            out |= s.fragments
        return out

    @property
    def exact(self) -> bool:
        return self.itype.exact_for(self.segments)

    def serves(self, query) -> bool:
        return self.itype.serves_index(self.segments, query)

    def describe(self) -> str:
        return f"{self.name}({self.itype.plan_type_name(self.segments)})"


def build_catalog(entries, column_of: Callable[[int], str | None],
                  store_of: Callable[[object], IndexStore], stable_row_ids: bool = False,
                  cache: "LoadedCache | None" = None,
                  type_of: Callable[[object], IndexType | None] | None = None) -> dict:
    """``{column: [NamedIndex, ...]}`` from manifest entries. ``column_of(field_id)`` names a
    column (None: not one an index on it can answer); ``store_of(entry)`` opens the entry's
    directory; ``type_of(entry)`` tells its type (default: by its details, or for an entry
    without them by its files)."""
    by_name: dict = {}
    for pb in entries:
        if is_system(pb) or len(pb.fields) != 1:
            continue
        if type_of is not None:
            itype = type_of(pb)
        else:
            itype = by_details(pb.index_details)
            if itype is None and not pb.index_details.type_url:
                itype = by_files(store_of(pb))   # committed without details (distributed builds)
        if itype is None:
            key = (pb.name, pb.index_details.type_url)
            if key not in _WARNED:
                _WARNED.add(key)
                warnings.warn(f"index {pb.name!r} has a type lancefmt does not know "
                              f"({pb.index_details.type_url}); its rows are scanned instead",
                              LanceWarning, stacklevel=4)
            continue
        column = column_of(int(pb.fields[0]))
        if column is None:
            continue
        named = by_name.get(pb.name)
        if named is None:
            named = by_name[pb.name] = NamedIndex(pb.name, column, itype)
        named.segments.append(Segment(pb, itype, fragment_ids(pb), store_of(pb), stable_row_ids,
                                      cache))
    out: dict = {}
    for named in by_name.values():
        out.setdefault(named.column, []).append(named)
    return out
