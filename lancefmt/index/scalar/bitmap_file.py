"""``bitmap_page_lookup.lance``: one row per distinct value, its rows as a RowIdTreeMap.

The file BITMAP and LABEL_LIST share (what pylance 14 writes): ``keys`` (the indexed values'
type, nullable) and ``bitmaps`` (binary, a serialized RowIdTreeMap per key), keys ascending
with the null key -- the rows whose value is null -- first; schema metadata
``lance:index_stats`` = ``{"num_bitmaps":N}``.

Building groups the rows by value with one sort: the column is dictionary-encoded, its small
dictionary sorted, and the row ids ordered by the codes' rank (a radix sort when the codes fit
16 bits). Loading reads only the keys; a key's bitmap is read and parsed the first time a
query needs it and kept (bounded by the number of rows held).
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import CorruptFileError, LanceError
from ..core.store import IndexStore
from ._bitmap_group import group_ids
from ..core.treemap import TreeMap, encode_treemap, map_rows, map_size, parse_treemap

LOOKUP = "bitmap_page_lookup.lance"
STATS_KEY = "lance:index_stats"
# bytes of serialized bitmaps per written chunk: a binary array holds < 2 GiB
MAX_CHUNK_BYTES = (1 << 31) - (1 << 20) - 1
# decoded bitmaps kept per loaded index, in row ids
MAX_CACHED_ROWS = 64 << 20
# answers kept per loaded index (a repeated filter costs a dictionary look-up)
MAX_CACHED_ANSWERS = 32
MAX_CACHED_ANSWER_ROWS = 32 << 20


@dataclass
class Groups:
    """Row ids grouped by value: ``keys`` (sorted distinct non-null values), ``ids`` ordered
    by key with ``bounds[i]:bounds[i+1]`` the rows of ``keys[i]`` (each slice ascending), and
    ``null_ids`` (ascending) the rows whose value is null."""
    keys: pa.Array
    bounds: np.ndarray
    ids: np.ndarray
    null_ids: np.ndarray


def _total_order(values: pa.Array) -> np.ndarray:
    """Indices sorting ``values`` (distinct, non-null) ascending; floats by IEEE total order
    (-0.0 before 0.0, NaN last), as Lance orders its keys."""
    t = values.type
    if pa.types.is_floating(t):
        width = {16: np.int16, 32: np.int32, 64: np.int64}[t.bit_width]
        bits = np.frombuffer(values.buffers()[1], dtype=width, count=len(values) + values.offset)
        bits = bits[values.offset:].astype(np.int64)
        shift = t.bit_width - 1
        key = bits ^ ((bits >> shift) & ((1 << shift) - 1))  # sign-magnitude -> two's order
        return np.argsort(key, kind="stable")
    return pc.array_sort_indices(values).to_numpy()


def _dictionary(values: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """(distinct non-null values, per-row index into them; ``len(values)`` = null)."""
    enc = pc.dictionary_encode(values)
    dictionary = enc.chunk(enc.num_chunks - 1).dictionary  # chunks share one dictionary
    indices = pa.chunked_array([c.indices for c in enc.chunks], pa.int32()).combine_chunks()
    indices = pc.fill_null(indices, len(dictionary))
    return dictionary, np.ascontiguousarray(indices.to_numpy(zero_copy_only=False), dtype=np.int32)


def group_rows(values, ids: np.ndarray) -> Groups:
    """Group ``ids`` (uint64, parallel to ``values``: an Arrow array or chunked array) by value."""
    if isinstance(values, pa.Array):
        values = pa.chunked_array([values], type=values.type)
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    if len(values) != ids.size:
        raise ValueError(f"{len(values)} values for {ids.size} row ids")
    if not ids.size:
        return Groups(pa.array([], type=values.type), np.zeros(1, np.int64), ids, ids)
    dictionary, idx = _dictionary(values)
    if ids.size > 1 and not (ids[1:] >= ids[:-1]).all():
        by_id = np.argsort(ids, kind="stable")
        ids, idx = ids[by_id], np.ascontiguousarray(idx[by_id])
    k = len(dictionary)
    order = _total_order(dictionary)
    rank = np.empty(k + 1, dtype=np.int64)  # dictionary index -> group (0 = null)
    rank[order] = np.arange(1, k + 1)
    rank[k] = 0
    bounds, grouped = group_ids(idx, rank, ids, k + 1)
    keys = dictionary.take(pa.array(order))
    return Groups(keys, bounds[1:] - bounds[1], grouped[bounds[1]:], grouped[:bounds[1]])


def concat_groups(value_type: pa.DataType, keys: pa.Array, per_key: list, null_ids: np.ndarray,
                  more_values=None, more_ids=None) -> Groups:
    """Groups of rows given per key (``per_key[i]``: ids of ``keys[i]``), plus optionally new
    (value, id) rows: what update and remap rebuild from."""
    counts = np.array([a.size for a in per_key], dtype=np.int64)
    values = [keys.take(pa.array(np.repeat(np.arange(len(keys)), counts))).cast(value_type),
              pa.nulls(null_ids.size, value_type)]
    ids = list(per_key) + [null_ids]
    if more_values is not None:
        chunks = more_values.chunks if isinstance(more_values, pa.ChunkedArray) else [more_values]
        values += [c.cast(value_type) for c in chunks]
        ids.append(np.asarray(more_ids, dtype=np.uint64))
    all_ids = np.concatenate(ids) if ids else np.empty(0, np.uint64)
    return group_rows(pa.chunked_array(values, type=value_type), all_ids)


def write_lookup(store: IndexStore, value_type: pa.DataType, groups: Groups,
                 metadata: dict | None = None, global_buffers=()) -> int:
    """Write ``groups`` as the lookup file; returns the number of bitmaps written."""
    keys = groups.keys.cast(value_type) if groups.keys.type != value_type else groups.keys
    blobs = []
    if groups.null_ids.size:
        blobs.append(encode_treemap(groups.null_ids))
    has_null = bool(blobs)
    b = groups.bounds
    for i in range(len(keys)):
        blobs.append(encode_treemap(groups.ids[b[i]:b[i + 1]]))
    all_keys = pa.concat_arrays([pa.nulls(1, value_type), keys]) if has_null else keys
    key_chunks, blob_chunks, start, size = [], [], 0, 0
    for i, blob in enumerate(blobs):
        if size + len(blob) > MAX_CHUNK_BYTES and i > start:
            key_chunks.append(all_keys.slice(start, i - start))
            blob_chunks.append(pa.array(blobs[start:i], pa.binary()))
            start, size = i, 0
        size += len(blob)
    key_chunks.append(all_keys.slice(start))
    blob_chunks.append(pa.array(blobs[start:], pa.binary()))
    schema = pa.schema([pa.field("keys", value_type), pa.field("bitmaps", pa.binary())])
    table = pa.Table.from_arrays([pa.chunked_array(key_chunks, value_type),
                                  pa.chunked_array(blob_chunks, pa.binary())], schema=schema)
    meta = {STATS_KEY: json.dumps({"num_bitmaps": len(blobs)}, separators=(",", ":"))}
    meta.update(metadata or {})
    store.write_table(LOOKUP, table, meta, global_buffers)
    return len(blobs)


class Lookup:
    """A loaded lookup file: the keys in memory, bitmaps parsed on first use (thread-safe)."""

    def __init__(self, store: IndexStore):
        self.store = store
        self.path = store.uri(LOOKUP)
        reader = store.reader(LOOKUP)
        schema = reader.schema
        if schema.names[:2] != ["keys", "bitmaps"] or not (
                pa.types.is_binary(schema.field("bitmaps").type)
                or pa.types.is_large_binary(schema.field("bitmaps").type)):
            raise CorruptFileError(f"bitmap lookup has schema {schema}", self.path)
        self.value_type = schema.field("keys").type
        keys = reader.read_all(["keys"]).column("keys").combine_chunks()
        nulls = np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))
        if nulls.size > 1:
            raise CorruptFileError(f"bitmap lookup has {nulls.size} null keys", self.path)
        self.null_position = int(nulls[0]) if nulls.size else None
        valid = np.flatnonzero(keys.is_valid().to_numpy(zero_copy_only=False))
        self.positions = valid  # file row of each non-null key
        self.keys = keys.filter(keys.is_valid()) if nulls.size else keys
        self.num_rows = reader.num_rows
        self._cache: OrderedDict = OrderedDict()
        self._cached_rows = 0
        self._answers: OrderedDict = OrderedDict()
        self._answer_rows = 0
        self._lock = threading.Lock()

    def answer(self, query, compute) -> np.ndarray:
        """``compute()`` (read-only sorted row ids) for ``query``, remembered per query (by
        its repr: ``0.0 == -0.0`` in Python, but not in ``is_in``)."""
        query = repr(query)
        with self._lock:
            hit = self._answers.get(query)
            if hit is not None:
                self._answers.move_to_end(query)
                return hit
        rows = compute()
        rows.flags.writeable = False
        with self._lock:
            if query not in self._answers:
                self._answers[query] = rows
                self._answer_rows += rows.size
            while self._answers and (len(self._answers) > MAX_CACHED_ANSWERS
                                     or self._answer_rows > MAX_CACHED_ANSWER_ROWS):
                _, old = self._answers.popitem(last=False)
                self._answer_rows -= old.size
        return rows

    def __len__(self) -> int:
        return len(self.keys)

    def _read(self, rows: list) -> list:
        t = self.store.reader(LOOKUP).take(np.asarray(rows, dtype=np.int64), ["bitmaps"])
        blobs = t.column("bitmaps").combine_chunks()
        out = []
        for i in range(len(blobs)):
            if not blobs[i].is_valid:
                out.append({})
                continue
            out.append(parse_treemap(blobs[i].as_buffer(), self.path))
        return out

    def maps(self, rows) -> list:
        """Parsed maps of file rows ``rows`` (cached)."""
        rows = [int(r) for r in rows]
        with self._lock:
            hits = {r: self._cache[r] for r in rows if r in self._cache}
            for r in hits:
                self._cache.move_to_end(r)
        missing = sorted(set(rows) - set(hits))
        if missing:
            try:
                got = dict(zip(missing, self._read(missing)))
            except LanceError:
                raise
            except (pa.ArrowException, ValueError, TypeError, IndexError) as e:
                raise CorruptFileError(f"unreadable bitmap ({e})", self.path) from None
            with self._lock:
                for r, m in got.items():
                    if r not in self._cache:
                        self._cache[r] = m
                        self._cached_rows += map_size(m)
                while self._cached_rows > MAX_CACHED_ROWS and len(self._cache) > 1:
                    _, old = self._cache.popitem(last=False)
                    self._cached_rows -= map_size(old)
            hits.update(got)
        return [hits[r] for r in rows]

    def key_maps(self, key_indices) -> list:
        """Parsed maps of non-null keys ``key_indices`` (indices into :attr:`keys`)."""
        return self.maps(self.positions[np.asarray(key_indices, dtype=np.int64)])

    def null_map(self) -> TreeMap:
        return {} if self.null_position is None else self.maps([self.null_position])[0]

    def num_bitmaps(self) -> int:
        """Non-null keys, plus the null key when it holds rows (Lance's ``num_bitmaps``)."""
        return len(self.keys) + (1 if self.null_map() else 0)

    def all_rows(self) -> tuple[list, np.ndarray]:
        """(row ids of every non-null key, row ids of the null key): update and remap."""
        per_key = [map_rows(m) for m in self.key_maps(np.arange(len(self.keys)))]
        return per_key, map_rows(self.null_map())

    def prewarm(self) -> None:
        self.maps(range(self.num_rows))


def bool_mask(arr) -> np.ndarray:
    """A boolean Arrow result as a numpy mask (null = False)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
