"""BTREE: sorted values in pages, and a small lookup of each page's first and last value.

Files (what pylance 14 writes):

* ``page_data.lance``: ``values`` (the column's type, sorted, nulls first) and ``ids``
  (uint64 row ids), cut into pages of ``batch_size`` rows (4096);
* ``page_lookup.lance``: one row per page, ``min`` and ``max`` (its first and last value, so
  ``min`` is null when the page starts with nulls), ``null_count`` and ``page_idx`` (uint32);
  schema metadata ``batch_size`` and ``range_partitioned`` ("false").

The older distributed build (``create_scalar_index(..., fragment_ids=, index_uuid=)`` on each
worker, then ``merge_index_metadata``) writes the same two files per worker as
``part_{id}_page_data.lance`` / ``part_{id}_page_lookup.lance`` (``id``: the first fragment id
<< 32, as Lance names them); the merge sorts every part's values together into the two files
and removes the parts.

A search reads the lookup once (cached with the loaded index), picks the pages whose
``[min, max]`` can hold the value(s), and binary-searches inside them. Answers are exact.
Pages are read on demand and kept in a bounded cache.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._proto import index_details_pb2
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedColumnTypeError
from ...sql.float_order import array_keys
from ...sql.sargable import Equals, IsIn, IsNull, Range, normalized, show_value
from ..core.memory import reserve_sort_memory
from ..core.registry import ROW_ID, VALUE, IndexType, LoadedIndex, TrainingData, register
from ..core.rowset import EMPTY, SearchResult, as_rowset
from ..core.stats import count
from ..core.store import IndexStore
from .pages import SortedPage, order_keys, order_kind, order_scalar, order_values

PAGE_DATA = "page_data.lance"
PAGE_LOOKUP = "page_lookup.lance"
PART_PREFIX = "part_"
DEFAULT_BATCH_SIZE = 4096
# Pages a loaded BTREE keeps decoded (about 16 bytes a row for 8-byte values): enough for the
# whole of a 10M-row index, as pylance's index cache holds it.
MAX_CACHED_PAGE_BYTES = 256 << 20


def orderable(t: pa.DataType) -> bool:
    """Types a BTREE (or a BITMAP) can index: what pylance accepts for them."""
    return (pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_decimal(t) or pa.types.is_temporal(t))


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of integer keys. When the keys' span leaves room
    for the row position in 64 bits, (key - min, position) pairs packed in one uint64 are
    sorted instead: all distinct, so any sort is stable, and numpy's vectorised sort of plain
    uint64 takes half the time of its stable argsort (10M keys: 0.9 s against 1.8 s)."""
    n = keys.size
    if n < 2 or keys.dtype.kind not in "iu":
        return np.argsort(keys, kind="stable")
    bits = (n - 1).bit_length()
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo >= 1 << (64 - bits):
        return np.argsort(keys, kind="stable")
    if keys.dtype == np.uint64:
        packed = keys - np.uint64(lo)
    else:
        packed = (keys.astype(np.int64) - lo).astype(np.uint64)
    packed <<= np.uint64(bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    packed &= np.uint64((1 << bits) - 1)
    return packed.astype(np.int64)


def sort_by_value(values: pa.Array, ids: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """``values`` sorted ascending with nulls first, and the ids in the same order (a stable
    sort; floats in IEEE total order, ``-NaN`` first and ``NaN`` last, as pylance sorts)."""
    kind = order_kind(values.type)
    if pa.types.is_floating(values.type):
        keys = array_keys(values)
        if values.null_count:
            valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            rows = np.flatnonzero(valid)
            order = np.concatenate([np.flatnonzero(~valid), rows[stable_order(keys[rows])]])
        else:
            order = stable_order(keys)
    elif kind is not None and values.null_count == 0:
        order = stable_order(order_keys(values, kind))
    else:
        order = pc.array_sort_indices(values, order="ascending", null_placement="at_start").to_numpy()
    return values.take(pa.array(order)), ids[order]


class BTreeType(IndexType):
    name = "BTREE"
    type_name = "BTree"
    details_type_url = "/lance.table.BTreeIndexDetails"
    details_class = index_details_pb2.BTreeIndexDetails
    index_version = 0
    queries = (Equals, Range, IsIn, IsNull)
    exact = True

    def index_version_for(self, stable_row_ids: bool, params: dict | None = None) -> int:
        return 1 if stable_row_ids else 0  # version 1: row addresses (pylance 14)

    def records_addresses(self, index_version: int, stable_row_ids: bool) -> bool:
        return not stable_row_ids or index_version >= 1

    def check_field(self, field: pa.Field) -> None:
        if not orderable(field.type):
            raise UnsupportedColumnTypeError(
                f"BTREE/BITMAP index column {field.name} must be int, float, bool, str, "
                f"large_str, binary, large_binary, decimal, fixed-size-binary, or temporal")

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        table = data.table()
        reserve_sort_memory(table.nbytes)
        values = table.column(VALUE).combine_chunks()
        ids = table.column(ROW_ID).to_numpy()
        write_sorted(store, *sort_by_value(values, ids), int(params.get("batch_size") or DEFAULT_BATCH_SIZE))
        return self.details_class()

    def load(self, store: IndexStore, details) -> "BTreeIndex":
        return BTreeIndex(store)

    stages_by_default = False  # parts only for pylance's create_scalar_index(fragment_ids=)

    def staged_index_version(self, stable_row_ids: bool, params: dict | None = None) -> int:
        return self.index_version  # the older shape's hand-made Index commits version 0

    def stage(self, data: TrainingData, store: IndexStore, params: dict) -> None:
        partition_id = data.fragments[0][0] << 32 if data.fragments else 0
        table = data.table()
        reserve_sort_memory(table.nbytes)
        values = table.column(VALUE).combine_chunks()
        write_sorted(store, *sort_by_value(values, table.column(ROW_ID).to_numpy()),
                     int(params.get("batch_size") or DEFAULT_BATCH_SIZE), f"{PART_PREFIX}{partition_id}_")

    def merge_staged(self, store: IndexStore, field: pa.Field | None = None):
        pages, lookups = partition_files(store)
        first = store.reader(lookups[min(lookups)])
        try:
            batch_size = int(first.schema_metadata.get("batch_size", DEFAULT_BATCH_SIZE))
        except ValueError:
            batch_size = DEFAULT_BATCH_SIZE
        value_type = first.schema.field(0).type
        values, ids = [], []
        for pid in sorted(pages):
            t = store.read_table(pages[pid])
            if t.column_names != ["values", "ids"] or not t.schema.field(0).type.equals(value_type) \
                    or t.column("ids").null_count:
                raise CorruptFileError(f"partition page file has schema {t.schema}", store.uri(pages[pid]))
            values.append(t.column("values").combine_chunks())
            ids.append(t.column("ids").to_numpy())
        merged = pa.concat_arrays(values) if values else pa.array([], value_type)
        write_sorted(store, *sort_by_value(merged, np.concatenate(ids) if ids else np.empty(0, np.uint64)),
                     batch_size if batch_size > 0 else DEFAULT_BATCH_SIZE)
        for name in list(pages.values()) + list(lookups.values()):
            store.delete(name)
        return self.details_class()

    def merge(self, segments: list, dest: IndexStore):
        """Sorted runs of the segments merged into one (a stable sort of concatenated sorted
        runs costs little more than a merge)."""
        parts = [s.entries() for s in segments]
        if not parts:
            raise InvalidArgumentError("nothing to merge")
        values = pa.concat_arrays([v.cast(parts[0][0].type) for v, _ in parts])
        ids = np.concatenate([i for _, i in parts])
        write_sorted(dest, *sort_by_value(values, ids), segments[0].batch_size)
        return self.details_class()


def write_sorted(store: IndexStore, values: pa.Array, ids: np.ndarray, batch_size: int,
                 prefix: str = "") -> None:
    """Write already sorted values and ids as the two BTREE files (named with ``prefix``)."""
    if batch_size <= 0:
        raise InvalidArgumentError("batch_size must be positive")
    n = len(values)
    data = pa.table({"values": values, "ids": pa.array(ids, pa.uint64())},
                    schema=pa.schema([pa.field("values", values.type),
                                      pa.field("ids", pa.uint64(), nullable=False)]))
    store.write_table(prefix + PAGE_DATA, data)
    starts = np.arange(0, n, batch_size, dtype=np.int64)
    ends = np.minimum(starts + batch_size, n)
    if n:
        nulls = values.null_count
        null_count = np.clip(nulls - starts, 0, ends - starts).astype(np.uint32)
        mins = values.take(pa.array(starts))
        maxs = values.take(pa.array(ends - 1))
    else:
        null_count = np.empty(0, np.uint32)
        mins = maxs = pa.array([], type=values.type)
    lookup = pa.table({"min": mins, "max": maxs, "null_count": pa.array(null_count, pa.uint32()),
                       "page_idx": pa.array(np.arange(len(starts), dtype=np.uint32), pa.uint32())},
                      schema=pa.schema([pa.field("min", values.type), pa.field("max", values.type),
                                        pa.field("null_count", pa.uint32(), nullable=False),
                                        pa.field("page_idx", pa.uint32(), nullable=False)]))
    store.write_table(prefix + PAGE_LOOKUP, lookup, {"batch_size": str(batch_size),
                                                     "range_partitioned": "false"})


def partition_files(store: IndexStore) -> tuple[dict, dict]:
    """({partition id: page file}, {partition id: lookup file}) of the parts in ``store``;
    Lance's errors when there are none or they do not pair up."""
    pages, lookups = {}, {}
    for name, _ in store.list_files():
        for suffix, out in (("_" + PAGE_DATA, pages), ("_" + PAGE_LOOKUP, lookups)):
            if name.startswith(PART_PREFIX) and name.endswith(suffix):
                pid = name[len(PART_PREFIX):-len(suffix)]
                if not pid.isdigit():
                    raise InvalidArgumentError(f"Invalid partition file name format: {name}")
                out[int(pid)] = name
    if not pages or not lookups:
        raise InvalidArgumentError(
            f"No partition metadata files found in index directory: {store.dir_uri} "
            f"(page_files: {len(pages)}, lookup_files: {len(lookups)})")
    if len(pages) != len(lookups):
        raise InvalidArgumentError(
            f"Number of partition lookup files ({len(lookups)}) does not match number of "
            f"partition page files ({len(pages)})")
    for pid, name in lookups.items():
        if pid not in pages:
            raise InvalidArgumentError(f"No corresponding page file found for lookup file: {name} "
                                       f"(partition_id: {pid})")
    return pages, lookups


class BTreeIndex(LoadedIndex):
    def __init__(self, store: IndexStore):
        self.store = store
        path = store.uri(PAGE_LOOKUP)
        lookup = store.read_table(PAGE_LOOKUP)
        meta = store.schema_metadata(PAGE_LOOKUP)
        try:
            self.batch_size = int(meta.get("batch_size", DEFAULT_BATCH_SIZE))
        except ValueError:
            raise CorruptFileError(f"bad batch_size {meta.get('batch_size')!r}", path) from None
        if self.batch_size <= 0:
            raise CorruptFileError(f"batch_size {self.batch_size} is not positive", path)
        names = set(lookup.column_names)
        if not {"min", "max", "null_count", "page_idx"} <= names:
            raise CorruptFileError(f"page lookup has columns {sorted(names)}", path)
        self.type = lookup.schema.field("min").type
        want = {"max": self.type, "null_count": pa.uint32(), "page_idx": pa.uint32()}
        for name, t in want.items():
            if not lookup.schema.field(name).type.equals(t):
                raise CorruptFileError(f"page lookup column {name} is {lookup.schema.field(name).type}, "
                                       f"not {t}", path)
        if lookup.column("null_count").null_count or lookup.column("page_idx").null_count:
            raise CorruptFileError("page lookup has null counts or page numbers", path)
        self.mins = lookup.column("min").combine_chunks()
        self.maxs = lookup.column("max").combine_chunks()
        self.null_count = lookup.column("null_count").to_numpy().astype(np.int64)
        self.page_idx = lookup.column("page_idx").to_numpy().astype(np.int64)
        self.min_null = np.asarray(self.mins.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        self.max_null = np.asarray(self.maxs.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        self.kind = order_kind(self.type)
        self.sorted_keys = False
        if self.kind is not None:
            self.min_keys = _keys(self.mins, self.min_null, self.kind)
            self.max_keys = _keys(self.maxs, self.max_null, self.kind)
            # pages in value order (as every single build writes them): binary searches
            # find the candidate pages; otherwise every page is tested
            self.sorted_keys = bool((self.min_keys[1:] >= self.min_keys[:-1]).all() and
                                    (self.max_keys[1:] >= self.max_keys[:-1]).all())
        data = store.reader(PAGE_DATA)
        fields = {f.name: f.type for f in data.schema}
        if set(fields) != {"values", "ids"} or not fields["values"].equals(self.type) or \
                fields["ids"] != pa.uint64():
            raise CorruptFileError(f"page data has columns {fields}, not values: {self.type} and "
                                   f"ids: uint64", store.uri(PAGE_DATA))
        self.num_rows = data.num_rows
        pages = -(-self.num_rows // self.batch_size)
        if self.page_idx.size and (self.page_idx.min() < 0 or self.page_idx.max() >= max(pages, 1)):
            raise CorruptFileError(f"page_idx outside the {pages} pages of {PAGE_DATA}", path)
        self._pages: OrderedDict = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()

    @property
    def value_type(self) -> pa.DataType:
        return self.type

    # -- pages ---------------------------------------------------------------------------------
    def page(self, k: int) -> SortedPage:
        return self.pages([k])[0]

    def pages(self, ks: list) -> list:
        """Pages ``ks`` (page numbers), those not cached read by one take of their rows: a
        set or range look-up touching many pages pays one read's fixed costs, not one per
        page."""
        out, missing = [], []
        with self._lock:
            for k in ks:
                hit = self._pages.get(k)
                if hit is not None:
                    self._pages.move_to_end(k)
                    count("index_cache_hits")
                else:
                    missing.append(k)
                out.append(hit)
        if not missing:
            return out
        loaded = dict(zip(missing, self._load(sorted(set(missing)))))
        return [p if p is not None else loaded[k] for p, k in zip(out, ks)]

    def _load(self, ks: list) -> list:
        """Pages ``ks`` (ascending, uncached) read and cached."""
        bounds = [(k * self.batch_size, min((k + 1) * self.batch_size, self.num_rows)) for k in ks]
        # a take decodes only the mini-block chunks of these rows; a range read would decode
        # the whole (often 500k-row) Lance page holding them
        rows = np.arange(*bounds[0], dtype=np.int64) if len(bounds) == 1 else \
            np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in bounds])
        t = self.store.reader(PAGE_DATA).take(rows)
        ids_col = t.column("ids")
        if ids_col.null_count:
            raise CorruptFileError(f"page {ks[0]}..{ks[-1]} has null row ids",
                                   self.store.uri(PAGE_DATA))
        values, ids = t.column("values"), ids_col.to_numpy()
        values = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
        pages, at = [], 0
        for a, b in bounds:
            count("parts_loaded")
            pages.append(SortedPage(values.slice(at, b - a), ids[at:at + b - a]))
            at += b - a
        with self._lock:
            for k, page in zip(ks, pages):
                if k not in self._pages:
                    self._pages[k] = page
                    self._cached_bytes += page.nbytes
            while self._cached_bytes > MAX_CACHED_PAGE_BYTES and len(self._pages) > 1:
                _, old = self._pages.popitem(last=False)
                self._cached_bytes -= old.nbytes
        return pages

    def _candidates(self, lower, lower_inc, upper, upper_inc) -> np.ndarray:
        """Lookup rows whose page may hold values in the range (None = unbounded)."""
        if self.sorted_keys:
            # null keys were filled with the type's smallest value: still ascending
            first = int(self.max_null.sum()) if lower is None else int(np.searchsorted(
                self.max_keys, order_scalar(lower, self.type, self.kind),
                side="left" if lower_inc else "right"))
            first = max(first, int(self.max_null.sum()))
            last = len(self.min_keys) if upper is None else int(np.searchsorted(
                self.min_keys, order_scalar(upper, self.type, self.kind),
                side="right" if upper_inc else "left"))
            return np.arange(first, max(first, last))
        ok = ~self.max_null  # an all-null page holds no value
        if self.kind is not None:
            if lower is not None:
                lo = order_scalar(lower, self.type, self.kind)
                ok &= (self.max_keys >= lo) if lower_inc else (self.max_keys > lo)
            if upper is not None:
                hi = order_scalar(upper, self.type, self.kind)
                ok &= self.min_null | ((self.min_keys <= hi) if upper_inc else (self.min_keys < hi))
            return np.flatnonzero(ok)
        if lower is not None:
            f = pc.greater_equal if lower_inc else pc.greater
            ok &= _mask(f(self.maxs, pa.scalar(lower, self.type)))
        if upper is not None:
            f = pc.less_equal if upper_inc else pc.less
            ok &= self.min_null | _mask(f(self.mins, pa.scalar(upper, self.type)))
        return np.flatnonzero(ok)

    def _pages_of(self, values: tuple):
        """(lookup row, the values its page may hold) for a set of values: one vectorised
        pass when the pages are in value order, else a range search per value."""
        if self.sorted_keys:
            keys = np.unique(np.array([order_scalar(v, self.type, self.kind) for v in values],
                                      dtype=self.kind))
            nulls = int(self.max_null.sum())
            first = np.maximum(np.searchsorted(self.max_keys, keys, side="left"), nulls)
            last = np.searchsorted(self.min_keys, keys, side="right")  # exclusive
            by_page: dict = {}
            for k, a, b in zip(order_values(keys, self.type), first.tolist(), last.tolist()):
                for i in range(a, b):
                    by_page.setdefault(i, []).append(k)
            return [(i, tuple(ks)) for i, ks in sorted(by_page.items())]
        pages: dict = {}
        for v in values:
            for i in self._candidates(v, True, v, True).tolist():
                pages.setdefault(i, []).append(v)
        return [(i, tuple(vs)) for i, vs in sorted(pages.items())]

    # -- search --------------------------------------------------------------------------------
    def search(self, query) -> SearchResult:
        query = normalized(query)
        if isinstance(query, Equals):
            rows = [self.page(int(self.page_idx[i])).equal(query.value, self.type)
                    for i in self._candidates(query.value, True, query.value, True)]
        elif isinstance(query, Range):
            found = self._candidates(query.lower, query.lower_inclusive, query.upper,
                                     query.upper_inclusive)
            rows = [p.range(query.lower, query.lower_inclusive, query.upper,
                            query.upper_inclusive, self.type)
                    for p in self.pages(self.page_idx[found].tolist())]
        elif isinstance(query, IsIn):
            if not query.values:
                return SearchResult(EMPTY)
            found = self._pages_of(query.values)
            pages = self.pages([int(self.page_idx[i]) for i, _ in found])
            rows = [p.isin(values, self.type) for p, (_, values) in zip(pages, found)]
        elif isinstance(query, IsNull):
            found = np.flatnonzero(self.null_count > 0)
            rows = [p.null_ids() for p in self.pages(self.page_idx[found].tolist())]
        else:
            raise InvalidArgumentError(f"BTREE cannot answer {type(query).__name__}")
        if not rows:
            return SearchResult(EMPTY)
        return SearchResult(as_rowset(rows[0] if len(rows) == 1 else np.concatenate(rows)))

    # -- the rest --------------------------------------------------------------------------------
    def statistics(self) -> dict:
        """pylance's words: the first page's first and the last page's last value ("NULL"
        when null), and the page count."""
        out = {}
        if len(self.page_idx):
            out["min"] = _show(self.mins[0])
            out["max"] = _show(self.maxs[len(self.maxs) - 1])
        out["num_pages"] = int(len(self.page_idx))
        return out

    def prewarm(self) -> None:
        self.pages(self.page_idx.tolist())

    def entries(self) -> tuple[pa.Array, np.ndarray]:
        """All (values, ids), in sorted order."""
        t = self.store.read_table(PAGE_DATA)
        return t.column("values").combine_chunks(), t.column("ids").to_numpy()

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        values, ids = self.entries()
        if keep is not None:
            mask = keep(ids)
            values, ids = values.filter(pa.array(mask)), ids[mask]
        new = new_data.table()
        values = pa.concat_arrays([values, new.column(VALUE).combine_chunks().cast(values.type)])
        ids = np.concatenate([ids, new.column(ROW_ID).to_numpy()])
        write_sorted(dest, *sort_by_value(values, ids), self.batch_size)
        return index_details_pb2.BTreeIndexDetails()

    def remap(self, mapping, dest: IndexStore):
        values, ids = self.entries()
        new_ids, keep = mapping.apply(ids)
        write_sorted(dest, values.filter(pa.array(keep)), new_ids[keep], self.batch_size)
        return index_details_pb2.BTreeIndexDetails()


def _keys(values: pa.Array, null: np.ndarray, kind: np.dtype) -> np.ndarray:
    """Page keys as numpy; a null key (pages holding the leading nulls) becomes the smallest
    value of ``kind``, which keeps sorted keys sorted."""
    if not null.any():
        return order_keys(values, kind)
    keys = order_keys(values.fill_null(pa.scalar(0, values.type)), kind).copy()
    keys[null] = np.iinfo(kind).min
    return keys


def _show(value: pa.Scalar) -> str:
    return "NULL" if not value.is_valid else show_value(value.as_py(), value.type)


def _mask(arr) -> np.ndarray:
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


BTREE = register(BTreeType())
