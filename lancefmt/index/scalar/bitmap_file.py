"""``bitmap_page_lookup.lance``: one row per distinct value, its rows as a RowIdTreeMap.

The file BITMAP and LABEL_LIST share (what pylance 14 writes): ``keys`` (the indexed values'
type, nullable) and ``bitmaps`` (binary, a serialized RowIdTreeMap per key), keys ascending
with the null key -- the rows whose value is null -- first; schema metadata
``lance:index_stats`` = ``{"num_bitmaps":N}``.

Building groups the rows by value with one sort: the column is dictionary-encoded, its small
dictionary sorted, and the row ids placed by their value's rank with a counting sort; every
group's map is then serialized in one pass (both in ``_bitmap_kernels.pyx``). Loading reads only
the keys; a key's bitmap is read and parsed the first time a query needs it and kept (bounded
by the number of rows held), and answers are remembered per query.
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import CorruptFileError, LanceError, UnsupportedFeatureError
from ..core.store import IndexStore
from ..core.treemap import TreeMap, map_size, parse_treemap
from ._bitmap_kernels import decode_treemaps, group_ids, serialize_groups

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
    """Row ids grouped by value: ``keys`` (sorted distinct non-null values) and ``ids``, where
    ``ids[bounds[0]:bounds[1]]`` are the rows whose value is null and
    ``ids[bounds[i + 1]:bounds[i + 2]]`` the rows of ``keys[i]`` (each slice ascending)."""
    keys: pa.Array
    bounds: np.ndarray
    ids: np.ndarray

    @property
    def null_ids(self) -> np.ndarray:
        return self.ids[self.bounds[0]:self.bounds[1]]

    def key_ids(self, i: int) -> np.ndarray:
        return self.ids[self.bounds[i + 1]:self.bounds[i + 2]]


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
        return Groups(pa.array([], type=values.type), np.zeros(2, np.int64), ids)
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
    return Groups(dictionary.take(pa.array(order)), bounds, grouped)


def regroup(value_type: pa.DataType, parts) -> Groups:
    """Groups of (values, ids) pairs: what update, remap and merge rebuild from."""
    values, ids = [], []
    for v, i in parts:
        chunks = v.chunks if isinstance(v, pa.ChunkedArray) else [v]
        values += [c.cast(value_type) if c.type != value_type else c for c in chunks]
        ids.append(np.asarray(i, dtype=np.uint64))
    return group_rows(pa.chunked_array(values, type=value_type),
                      np.concatenate(ids) if ids else np.empty(0, np.uint64))


def kept(entries, keep) -> tuple:
    """``entries`` (values, ids) without the rows ``keep(ids)`` refuses (None: all kept)."""
    values, ids = entries
    if keep is None or not ids.size:
        return values, ids
    mask = np.asarray(keep(ids), dtype=bool)
    return values.filter(pa.array(mask)), ids[mask]


def moved(entries, mapping) -> tuple:
    """``entries`` (values, ids) with ids moved by ``mapping`` (a RowIdMapping), dropped rows out."""
    values, ids = entries
    if not ids.size:
        return values, ids
    new, keep = mapping.apply(ids)
    return values.filter(pa.array(keep)), new[keep]


def _binary_chunks(data: np.ndarray, offsets: np.ndarray) -> list:
    """Binary arrays of the blobs ``data[offsets[i]:offsets[i + 1]]``, each under 2 GiB."""
    n = offsets.size - 1
    chunks, start = [], 0
    while True:
        stop = int(np.searchsorted(offsets, offsets[start] + MAX_CHUNK_BYTES, side="right")) - 1
        stop = min(max(stop, start + 1), n) if n else 0
        lo, hi = int(offsets[start]), int(offsets[stop])
        offs = (offsets[start:stop + 1] - lo).astype(np.int32)
        chunks.append(pa.Array.from_buffers(pa.binary(), stop - start,
                                            [None, pa.py_buffer(offs), pa.py_buffer(data[lo:hi])]))
        start = stop
        if start >= n:
            return chunks


def write_lookup(store: IndexStore, value_type: pa.DataType, groups: Groups,
                 metadata: dict | None = None, global_buffers=()) -> int:
    """Write ``groups`` as the lookup file (keys without rows left out); returns the number of
    bitmaps written."""
    keys = groups.keys.cast(value_type) if groups.keys.type != value_type else groups.keys
    bounds = np.ascontiguousarray(groups.bounds, dtype=np.int64)
    rows = np.flatnonzero(np.diff(bounds))  # group 0 is the null key, group i + 1 is keys[i]
    # empty groups have no width: dropping their starts keeps every other group's slice
    data, offsets = serialize_groups(groups.ids, np.concatenate((bounds[rows], bounds[-1:])))
    key_rows = rows[rows > 0] - 1
    out_keys = keys if key_rows.size == len(keys) else keys.take(pa.array(key_rows))
    if rows.size and rows[0] == 0:
        out_keys = pa.concat_arrays([pa.nulls(1, value_type), out_keys])
    blob_chunks = _binary_chunks(data, offsets)
    key_chunks, start = [], 0
    for c in blob_chunks:
        key_chunks.append(out_keys.slice(start, len(c)))
        start += len(c)
    schema = pa.schema([pa.field("keys", value_type), pa.field("bitmaps", pa.binary())])
    table = pa.Table.from_arrays([pa.chunked_array(key_chunks, value_type),
                                  pa.chunked_array(blob_chunks, pa.binary())], schema=schema)
    meta = {STATS_KEY: json.dumps({"num_bitmaps": int(rows.size)}, separators=(",", ":"))}
    meta.update(metadata or {})
    store.write_table(LOOKUP, table, meta, global_buffers)
    return int(rows.size)


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
        self.file_keys = keys
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
        out = []
        for chunk in t.column("bitmaps").chunks:  # chunks: more than 2 GiB may be asked for
            for blob in chunk:
                out.append(parse_treemap(blob.as_buffer(), self.path) if blob.is_valid else {})
        if len(out) != len(rows):
            raise CorruptFileError(f"read {len(out)} bitmaps for {len(rows)} rows", self.path)
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

    def entries(self) -> tuple[pa.Array, np.ndarray]:
        """(value, row id) of every row the file records (the null key's values are null),
        every map decoded in one pass."""
        reader = self.store.reader(LOOKUP)
        try:
            column = reader.read_all(["bitmaps"]).column("bitmaps")
            ids, counts = [], []
            for chunk in column.chunks:
                data, offsets = _blobs(chunk)
                got, bounds = decode_treemaps(data, offsets)
                ids.append(got)
                counts.append(np.diff(bounds))
        except NotImplementedError as e:
            raise UnsupportedFeatureError(str(e), self.path) from None
        except LanceError:
            raise
        except (pa.ArrowException, ValueError, TypeError) as e:
            raise CorruptFileError(f"unreadable bitmaps ({e})", self.path) from None
        counts = np.concatenate(counts) if counts else np.empty(0, np.int64)
        if counts.size != len(self.file_keys):
            raise CorruptFileError(f"{counts.size} bitmaps for {len(self.file_keys)} keys", self.path)
        rows = np.repeat(np.arange(counts.size), counts)
        return self.file_keys.take(pa.array(rows)), np.concatenate(ids) if ids else np.empty(0, np.uint64)

    def prewarm(self) -> None:
        self.maps(range(self.num_rows))


def _blobs(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, int64 offsets) of a binary array's values (a null value is no bytes)."""
    if chunk.null_count:
        chunk = chunk.fill_null(b"")
    if pa.types.is_large_binary(chunk.type):
        offs = np.frombuffer(chunk.buffers()[1], np.int64, len(chunk) + 1, chunk.offset * 8)
    else:
        offs = np.frombuffer(chunk.buffers()[1], np.int32, len(chunk) + 1, chunk.offset * 4)
    body = chunk.buffers()[2]
    data = np.frombuffer(body, np.uint8) if body is not None else np.empty(0, np.uint8)
    return data, offs.astype(np.int64)


def bool_mask(arr) -> np.ndarray:
    """A boolean Arrow result as a numpy mask (null = False)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
