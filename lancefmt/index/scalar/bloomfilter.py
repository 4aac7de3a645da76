"""BLOOMFILTER: one Split Block Bloom Filter per zone (pylance 14's ``bloomfilter.lance``).

File ``bloomfilter.lance``: one row per zone, ``fragment_id``/``zone_start``/``zone_length``
(uint64; see :mod:`.zones`), ``has_null`` (bool) and ``bloom_filter_data`` (binary: the filter's
little-endian words); schema metadata ``bloomfilter_item`` (the zone size, and the number of
distinct values each filter is sized for), ``bloomfilter_probability`` (the false-positive
rate it is sized for) and ``null_bitmap`` (the global buffer, 1, holding the exact null row
addresses). Details ``BloomFilterIndexDetails`` (empty).

Every non-null value is hashed with xxHash64 (seed 0) over its little-endian bytes (strings and
binary: their bytes) into its zone's filter (``_sbbf``), so a filter built here answers in
pylance and the other way round. ``= 0.0`` probes both zeros (``-0.0`` hashes differently but
compares equal); a NaN in an ``IN`` list keeps every zone (NaN bit patterns vary).
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from ..._proto import index_pb2
from ...errors import CorruptFileError, InvalidArgumentError
from ...sql.sargable import Equals, IsIn, IsNull, normalized
from ..core.registry import IndexType, LoadedIndex, TrainingData, register
from ..core.rowset import EMPTY, SearchResult, as_rowset
from ..core.store import IndexStore
from . import _sbbf
from .zones import (BOUND_FIELDS, Bounds, counts_in, null_buffer, null_metadata, read_null_rows,
                    positive_int, read_zone_file, remap, runs, zone_alive)

BLOOM_FILE = "bloomfilter.lance"
ITEMS_KEY = "bloomfilter_item"
PROBABILITY_KEY = "bloomfilter_probability"
DEFAULT_ITEMS = 8192
DEFAULT_PROBABILITY = 0.00057
MIN_LOG2_BYTES, MAX_LOG2_BYTES = 5, 27
BLOCK_WORDS = 8
CHUNK_BYTES = (1 << 31) - 1
# filter bits are stored as they are (pylance 14's file holds them uncompressed; trying to
# compress them costs more than the whole build)
RAW = {"lance-encoding:compression": "none"}


def supported(t: pa.DataType) -> bool:
    """What pylance 14 builds bloom filters for."""
    return ((pa.types.is_integer(t) and not pa.types.is_dictionary(t))
            or pa.types.is_float32(t) or pa.types.is_float64(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t))


# -- sizing (Putze et al.'s false-positive rate of a blocked filter, as Lance computes it) -----
def false_positive_rate(ndv: int, log2_bytes: int) -> float:
    if ndv == 0:
        return 0.0
    bits = float(1 << log2_bytes) * 8
    if ndv / bits > 2.0:
        return 1.0
    lam = BLOCK_WORDS * 32 / (bits / ndv)
    loglam = math.log(lam)
    total = 0.0
    for i in range(749, 0, -1):  # i = 0 adds exp(-inf) = 0
        logp = i * loglam - lam - math.lgamma(i + 1)
        total += math.exp(logp + BLOCK_WORDS * math.log(1.0 - (1.0 - 1.0 / 32) ** i))
    return min(total, 1.0)


def filter_bytes(ndv: int, fpp: float) -> int:
    """Bytes of each zone's filter: the least power of two meeting ``fpp``, 32 B .. 128 MiB."""
    low, high = 0, 64
    while high > low + 1:
        mid = (high + low) // 2
        if false_positive_rate(ndv, mid) <= fpp:
            high = mid
        else:
            low = mid
    return 1 << min(max(high, MIN_LOG2_BYTES), MAX_LOG2_BYTES)


def rust_float(value: float) -> str:
    """``value`` as Rust's ``f64`` Display writes it (shortest digits, never an exponent)."""
    return np.format_float_positional(float(value), trim="-")


# -- hashing ------------------------------------------------------------------------------------
def value_hashes(values: pa.Array) -> np.ndarray:
    """xxHash64 of every slot of ``values`` (null slots hash whatever bytes they hold)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    t, n, off = values.type, len(values), values.offset
    bufs = values.buffers()
    if not n:
        return np.empty(0, dtype=np.uint64)
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) \
            or pa.types.is_large_binary(t):
        wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        offsets = np.frombuffer(bufs[1], np.int64 if wide else np.int32, count=off + n + 1)[off:]
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else \
            np.empty(0, np.uint8)
        return _sbbf.hash_var(offsets.astype(np.int64), data)
    width = t.bit_width // 8
    data = np.frombuffer(bufs[1], np.uint8, count=(off + n) * width)[off * width:]
    return _sbbf.hash_fixed(data, width)


def query_hashes(values, t: pa.DataType) -> np.ndarray:
    """Hashes to probe for the query values: a float zero adds its other sign."""
    values = list(values)
    if pa.types.is_floating(t):
        values += [-v if v == 0 else v for v in values if v == 0]
    return value_hashes(pa.array(values, type=t))


# -- filters in memory -----------------------------------------------------------------------
class Filters:
    """Every zone's filter, back to back in ``words`` (uint32, little-endian), and each zone's
    number of 32-byte blocks; ``start`` is each zone's first word."""

    def __init__(self, words: np.ndarray, nblocks: np.ndarray):
        self.words, self.nblocks = words, nblocks
        sizes = nblocks * BLOCK_WORDS
        self.start = np.cumsum(sizes) - sizes
        if int(sizes.sum()) != words.size:
            raise ValueError("filter sizes do not add up to the words")

    @classmethod
    def from_rows(cls, rows: np.ndarray) -> "Filters":
        """From a 2-D array (zones x words) of equal-sized filters."""
        k, w = rows.shape
        return cls(np.ascontiguousarray(rows).reshape(-1), np.full(k, w // BLOCK_WORDS, dtype=np.int64))

    @classmethod
    def concat(cls, parts) -> "Filters":
        parts = [p for p in parts if p.nblocks.size]
        if not parts:
            return cls(np.empty(0, np.uint32), np.empty(0, np.int64))
        return cls(np.concatenate([p.words for p in parts]), np.concatenate([p.nblocks for p in parts]))

    def take(self, idx) -> "Filters":
        idx = np.asarray(idx, dtype=np.int64)
        if not idx.size:
            return Filters.concat([])
        rows = self.rows(idx)
        if rows is not None:
            return Filters.from_rows(rows)
        sizes = (self.nblocks[idx] * BLOCK_WORDS).tolist()
        return Filters(np.concatenate([self.words[s:s + w] for s, w in zip(self.start[idx].tolist(), sizes)]),
                       self.nblocks[idx])

    def rows(self, idx) -> np.ndarray | None:
        """Filters ``idx`` as a 2-D array, or None when their sizes differ."""
        sizes = self.nblocks[idx]
        if not sizes.size or (sizes != sizes[0]).any():
            return None
        w = int(sizes[0]) * BLOCK_WORDS
        return self.words[self.start[idx][:, None] + np.arange(w, dtype=np.int64)[None, :]]

    def column(self) -> pa.ChunkedArray:
        """As ``bloom_filter_data``: binary values, chunked below 2 GiB (32-bit offsets)."""
        sizes = self.nblocks * BLOCK_WORDS * 4
        ends = np.cumsum(sizes)
        raw = self.words.astype("<u4", copy=False).view(np.uint8)
        chunks, i = [], 0
        while i < sizes.size:
            base = int(ends[i] - sizes[i])
            j = max(int(np.searchsorted(ends, base + CHUNK_BYTES, side="right")), i + 1)
            offsets = (np.concatenate(([base], ends[i:j])) - base).astype(np.int32)
            chunks.append(pa.Array.from_buffers(pa.binary(), j - i, [
                None, pa.py_buffer(offsets), pa.py_buffer(raw[base:base + int(offsets[-1])])]))
            i = j
        return pa.chunked_array(chunks, pa.binary())

    def probe(self, hashes: np.ndarray) -> np.ndarray:
        return _sbbf.probe(self.words, self.start, self.nblocks, hashes)


def read_filters(col: pa.ChunkedArray, path: str) -> Filters:
    if col.type != pa.binary() or col.null_count:
        raise CorruptFileError(f"bloom_filter_data is {col.type} with {col.null_count} nulls", path)
    parts, sizes = [], []
    for chunk in col.chunks:
        if not len(chunk):
            continue
        offsets = np.frombuffer(chunk.buffers()[1], np.int32, count=chunk.offset + len(chunk) + 1)[chunk.offset:]
        lengths = np.diff(offsets.astype(np.int64))
        if (lengths <= 0).any() or (lengths % (BLOCK_WORDS * 4)).any():
            raise CorruptFileError("a bloom filter is empty or not whole 32-byte blocks", path)
        data = chunk.buffers()[2]
        parts.append(np.frombuffer(data, np.uint8, count=int(offsets[-1]))[int(offsets[0]):])
        sizes.append(lengths)
    if not parts:
        return Filters.concat([])
    words = np.concatenate(parts).view("<u4").astype(np.uint32, copy=False)
    return Filters(words, np.concatenate(sizes) // (4 * BLOCK_WORDS))


class BloomFilterType(IndexType):
    name = "BLOOMFILTER"
    type_name = "BloomFilter"
    details_type_url = "/lance.index.pb.BloomFilterIndexDetails"
    details_class = index_pb2.BloomFilterIndexDetails
    index_version = 0
    queries = (Equals, IsIn, IsNull)
    exact = False

    def records_addresses(self, index_version: int, stable_row_ids: bool) -> bool:
        return True  # zones are row-address ranges, with or without stable row ids

    def check_field(self, field: pa.Field) -> None:
        if pa.types.is_nested(field.type):
            raise InvalidArgumentError("A bloom filter index can only be created on a non-nested field.")
        if not supported(field.type):
            raise InvalidArgumentError(f"Bloom filter index does not support data type: {field.type}")

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        items = positive_int(params, "number_of_items", DEFAULT_ITEMS)
        prob = params.get("probability", DEFAULT_PROBABILITY)
        if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not 0 < prob < 1:
            raise InvalidArgumentError(f"probability must be between 0 and 1, not {prob!r}")
        zones = Blooms.build(runs(data.batches(), items), filter_bytes(items, prob))
        zones.write(store, items, float(prob))
        return self.details_class()

    def load(self, store: IndexStore, details) -> "BloomFilterIndex":
        return BloomFilterIndex(store)

    def merge(self, segments: list, dest: IndexStore):
        """The segments' zones in one file, ordered by fragment and offset (as pylance merges
        them); segments sized for other parameters are rebuilt from data instead."""
        if not segments:
            raise InvalidArgumentError("nothing to merge")
        first = segments[0]
        if any((s.items, s.probability) != (first.items, first.probability) for s in segments):
            raise NotImplementedError("segments of different filter parameters")
        parts = [s.zones for s in segments]
        known = all(p.nulls is not None for p in parts)
        merged = Blooms.concat([Blooms(p.bounds, p.has_null, p.filters, p.nulls if known else EMPTY)
                                for p in parts], known)
        order = np.lexsort((merged.bounds.start, merged.bounds.fragment_id))
        merged.take(order).write(dest, first.items, first.probability)
        return self.details_class()


class Blooms:
    """Zones in memory: bounds, ``has_null`` (bool array), :class:`Filters`, null rows."""

    def __init__(self, bounds: Bounds, has_null: np.ndarray, filters: Filters, nulls):
        self.bounds, self.has_null, self.filters, self.nulls = bounds, has_null, filters, nulls

    @classmethod
    def build(cls, stretches, nbytes: int) -> "Blooms":
        parts = []
        for run in stretches:
            k = run.bounds.size - 1
            zone = np.repeat(np.arange(k, dtype=np.int64), np.diff(run.bounds))
            valid = np.ones(zone.size, bool) if not run.values.null_count else \
                np.asarray(run.values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            rows = np.zeros((k, nbytes // 4), dtype=np.uint32)
            _sbbf.insert(rows, zone[valid], value_hashes(run.values)[valid])
            has_null = np.bincount(zone[~valid], minlength=k) > 0
            parts.append(cls(Bounds(np.full(k, run.fragment_id, np.uint64), run.starts, run.lengths),
                             has_null, Filters.from_rows(rows), run.null_addresses()))
        return cls.concat(parts, True)

    @classmethod
    def concat(cls, parts, nulls_known: bool) -> "Blooms":
        nulls = as_rowset(np.concatenate([p.nulls for p in parts])) if parts else EMPTY
        return cls(Bounds.concat([p.bounds for p in parts]),
                   np.concatenate([p.has_null for p in parts]) if parts else np.zeros(0, bool),
                   Filters.concat([p.filters for p in parts]), nulls if nulls_known else None)

    def take(self, idx) -> "Blooms":
        return Blooms(self.bounds.take(idx), self.has_null[idx], self.filters.take(idx), self.nulls)

    def write(self, store: IndexStore, items: int, prob: float) -> None:
        cols = {**self.bounds.columns(), "has_null": pa.array(self.has_null, pa.bool_()),
                "bloom_filter_data": self.filters.column()}
        schema = pa.schema([*BOUND_FIELDS, pa.field("has_null", pa.bool_(), nullable=False),
                            pa.field("bloom_filter_data", pa.binary(), nullable=False, metadata=RAW)])
        meta = {ITEMS_KEY: str(items), PROBABILITY_KEY: rust_float(prob), **null_metadata(self.nulls)}
        store.write_table(BLOOM_FILE, pa.table(cols, schema=schema), meta, null_buffer(self.nulls))


class BloomFilterIndex(LoadedIndex):
    def __init__(self, store: IndexStore):
        self.store = store
        path = store.uri(BLOOM_FILE)
        reader, table, meta = read_zone_file(store, BLOOM_FILE)
        try:
            self.items = int(meta.get(ITEMS_KEY, DEFAULT_ITEMS))
            self.probability = float(meta.get(PROBABILITY_KEY, DEFAULT_PROBABILITY))
        except ValueError:
            raise CorruptFileError(f"bad bloom filter parameters {meta!r}", path) from None
        if self.items <= 0 or not 0 < self.probability < 1:
            raise CorruptFileError(f"bloom filter parameters {self.items}, {self.probability} "
                                   f"are out of range", path)
        for name in ("has_null", "bloom_filter_data"):
            if name not in table.column_names:
                raise CorruptFileError(f"bloom filter file lacks column {name!r}", path)
        bounds = Bounds.read(table, path)
        has_null = table.column("has_null")
        if has_null.type != pa.bool_() or has_null.null_count:
            raise CorruptFileError(f"has_null is {has_null.type} with nulls", path)
        has_null = np.asarray(has_null.to_numpy(), dtype=bool)
        filters = read_filters(table.column("bloom_filter_data"), path)
        nulls = read_null_rows(reader, meta, bounds, path, has_null)
        self.zones = Blooms(bounds, has_null, filters, nulls)

    # -- search --------------------------------------------------------------------------------
    def search(self, query) -> SearchResult:
        z = self.zones
        query = normalized(query)  # a float zero: both zeros' hashes
        if isinstance(query, IsNull):
            if z.nulls is not None:
                return SearchResult(z.nulls, exact=True, addresses=True)
            mask = z.has_null
        elif isinstance(query, (Equals, IsIn)):
            values = [query.value] if isinstance(query, Equals) else list(query.values)
            if not values:
                return SearchResult(EMPTY, exact=True, addresses=True)
            if any(isinstance(v, float) and v != v for v in values):
                mask = np.ones(len(z.bounds), dtype=bool)
            else:
                mask = z.filters.probe(query_hashes(values, query.type))
        else:
            raise InvalidArgumentError(f"BLOOMFILTER cannot answer {type(query).__name__}")
        return SearchResult(z.bounds.addresses(mask), exact=False, addresses=True)

    # -- the rest --------------------------------------------------------------------------------
    def statistics(self) -> dict:
        return {"type": "BloomFilter", "num_blocks": len(self.zones.bounds),
                "number_of_items": self.items, "probability": self.probability}

    def params(self) -> dict:
        """The build parameters this index was made with (what an optimize should reuse)."""
        return {"number_of_items": self.items, "probability": self.probability}

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        """Zones of ``new_data``'s fragments appended; zones ``keep`` (row addresses -> mask)
        finds no row in, and zones of fragments ``new_data`` indexes again, dropped."""
        z = self.zones
        alive = zone_alive(z.bounds, keep) if keep is not None else np.ones(len(z.bounds), bool)
        again = np.array([f for f, _ in new_data.fragments], dtype=np.uint64)
        alive &= ~np.isin(z.bounds.fragment_id, again)
        old = z.take(np.flatnonzero(alive))
        new = Blooms.build(runs(new_data.batches(), self.items), filter_bytes(self.items, self.probability))
        nulls = None
        if z.nulls is not None:
            prev = z.nulls[~np.isin(z.nulls >> np.uint64(32), again)]
            if keep is not None and prev.size:
                prev = prev[np.asarray(keep(prev), dtype=bool)]
            nulls = as_rowset(np.concatenate([prev, new.nulls]))
        out = Blooms(Bounds.concat([old.bounds, new.bounds]), np.concatenate([old.has_null, new.has_null]),
                     Filters.concat([old.filters, new.filters]), nulls)
        out.write(dest, self.items, self.probability)
        return index_pb2.BloomFilterIndexDetails()

    def remap(self, mapping, dest: IndexStore):
        """After a compaction (``mapping``: old -> new row *addresses*): zones of rewritten
        fragments are replaced by zones over the new fragments whose filter is the OR of the
        filters of the old zones each new zone's rows came from (every value they held stays
        found; see :func:`.zones.remap`)."""
        z = self.zones
        r = remap(z.bounds, mapping, self.items, z.nulls)
        kept = z.take(r.kept)
        parts = [kept]
        if len(r.bounds):
            groups = r.groups()
            src = r.pairs[:, 1]
            nbytes = filter_bytes(self.items, self.probability)
            rows = z.filters.rows(src)
            if rows is not None and rows.shape[1] * 4 == nbytes:
                merged = np.bitwise_or.reduceat(rows, groups, axis=0)
            else:  # filters of other sizes cannot be merged: every probe hits
                merged = np.full((groups.size, nbytes // 4), 0xFFFFFFFF, dtype=np.uint32)
            if r.nulls is not None:
                has_null = counts_in(r.bounds, r.nulls) > 0
            else:
                has_null = np.logical_or.reduceat(z.has_null[src], groups)
            parts.append(Blooms(r.bounds, has_null, Filters.from_rows(merged), EMPTY))
        out = Blooms(Bounds.concat([p.bounds for p in parts]), np.concatenate([p.has_null for p in parts]),
                     Filters.concat([p.filters for p in parts]), r.nulls)
        out.write(dest, self.items, self.probability)
        return index_pb2.BloomFilterIndexDetails()


BLOOMFILTER = register(BloomFilterType())
