"""ZONEMAP: each zone's minimum, maximum, null and NaN counts (pylance 14's ``zonemap.lance``).

File ``zonemap.lance``: one row per zone, ``min``/``max`` (the column's type, nullable),
``null_count``/``nan_count`` (uint32), ``fragment_id``/``zone_start``/``zone_length`` (uint64;
see :mod:`.zones` for what a zone is); schema metadata ``rows_per_zone`` and ``null_bitmap``
(the global buffer, 1, holding the exact null row addresses). Details
``ZoneMapIndexDetails{rows_per_zone, use_seeds, has_null_bitmap}``.

A search keeps the zones whose ``[min, max]`` may hold a value the query wants and answers with
their rows (*at most*, as row addresses); ``IS NULL`` is answered exactly from the null rows.
A zone whose ``max`` is NaN has an unknown finite maximum (treated as +inf). A zone without
bounds (``min`` null) holds no comparable value when its nulls and NaNs fill its span; otherwise
its values are unknown (pylance keeps no bounds for fixed-size binary and nested columns) and
it is kept for every comparison.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._proto import index_details_pb2
from ...errors import CorruptFileError, InvalidArgumentError
from ...sql.sargable import Equals, IsIn, IsNull, Range, normalized
from ..core.registry import IndexType, LoadedIndex, TrainingData, register
from ..core.rowset import EMPTY, SearchResult, as_rowset
from ..core.store import IndexStore
from .btree import orderable
from .pages import numpy_kind, scalar_as
from .zone_stats import Stats, fixed_values, group_stats, is_nested
from .zones import (BOUND_FIELDS, Bounds, counts_in, null_buffer, null_metadata, read_null_rows,
                    positive_int, read_zone_file, remap, runs, zone_alive)

ZONEMAP_FILE = "zonemap.lance"
DEFAULT_ROWS_PER_ZONE = 8192
ROWS_PER_ZONE_KEY = "rows_per_zone"
U32_MAX = (1 << 32) - 1


def default_use_seeds(t: pa.DataType) -> bool:
    """pylance's default for ``use_seeds``: wide or variable-width values."""
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_decimal(t) or is_nested(t)):
        return True
    return pa.types.is_fixed_size_binary(t) and t.byte_width > 8


class ZoneMapType(IndexType):
    name = "ZONEMAP"
    type_name = "ZoneMap"
    details_type_url = "/lance.table.ZoneMapIndexDetails"
    details_class = index_details_pb2.ZoneMapIndexDetails
    index_version = 0
    queries = (Equals, Range, IsIn, IsNull)
    exact = False

    def records_addresses(self, index_version: int, stable_row_ids: bool) -> bool:
        return True  # zones are row-address ranges, with or without stable row ids

    def check_field(self, field: pa.Field) -> None:
        t = field.type
        if not (orderable(t) or is_nested(t)) or pa.types.is_dictionary(t):
            raise InvalidArgumentError(
                f"ZONEMAP index cannot be created on column {field.name!r} of type {t}")

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        rpz = positive_int(params, ROWS_PER_ZONE_KEY, DEFAULT_ROWS_PER_ZONE)
        seeds = params.get("use_seeds")
        seeds = default_use_seeds(data.field.type) if seeds is None else bool(seeds)
        zones = Zones.build(data.field.type, runs(data.batches(), rpz))
        zones.write(store, rpz)
        return details(rpz, seeds, True)

    def load(self, store: IndexStore, details) -> "ZoneMapIndex":
        return ZoneMapIndex(store, details)

    def merge(self, segments: list, dest: IndexStore):
        """The segments' zones in one file, ordered by fragment and offset (as pylance merges
        them); segments of other zone sizes or types are rebuilt from data instead."""
        if not segments:
            raise InvalidArgumentError("nothing to merge")
        first = segments[0]
        if any(s.rows_per_zone != first.rows_per_zone or s.type != first.type for s in segments):
            raise NotImplementedError("segments of different zone sizes or types")
        parts = [s.zones for s in segments]
        bounds = Bounds.concat([p.bounds for p in parts])
        order = np.lexsort((bounds.start, bounds.fragment_id))
        nulls = None if any(p.nulls is None for p in parts) else \
            as_rowset(np.concatenate([p.nulls for p in parts]))
        merged = Zones(first.type, bounds, concat_stats(first.type, [p.stats for p in parts]), nulls)
        merged.take(order).write(dest, first.rows_per_zone)
        return details(first.rows_per_zone, first.use_seeds, nulls is not None)


def details(rows_per_zone: int, use_seeds: bool, has_null_bitmap: bool):
    return index_details_pb2.ZoneMapIndexDetails(rows_per_zone=rows_per_zone, use_seeds=use_seeds,
                                                 has_null_bitmap=has_null_bitmap)


class Zones:
    """Zone statistics in memory: bounds, :class:`Stats`, null rows (None: unknown)."""

    def __init__(self, type_: pa.DataType, bounds: Bounds, stats: Stats, nulls):
        self.type = type_
        self.bounds = bounds
        self.stats = stats
        self.nulls = nulls

    @classmethod
    def build(cls, type_, stretches) -> "Zones":
        parts, stats, nulls = [], [], []
        for run in stretches:
            parts.append(Bounds(np.full(run.bounds.size - 1, run.fragment_id, np.uint64),
                                run.starts, run.lengths))
            stats.append(group_stats(run.values, run.bounds))
            nulls.append(run.null_addresses())
        return cls(type_, Bounds.concat(parts), concat_stats(type_, stats),
                   as_rowset(np.concatenate(nulls)) if nulls else EMPTY)

    def take(self, idx) -> "Zones":
        idx = np.asarray(idx, dtype=np.int64)
        s = self.stats
        return Zones(self.type, self.bounds.take(idx),
                     Stats(s.min.take(pa.array(idx)), s.max.take(pa.array(idx)),
                           s.null_count[idx], s.nan_count[idx]), self.nulls)

    def write(self, store: IndexStore, rows_per_zone: int) -> None:
        s = self.stats
        if len(self.bounds) and (s.null_count.max() > U32_MAX or s.nan_count.max() > U32_MAX):
            raise InvalidArgumentError("a zone's null or NaN count exceeds the UInt32 range")
        cols = {"min": s.min, "max": s.max,
                "null_count": pa.array(s.null_count, pa.uint32()),
                "nan_count": pa.array(s.nan_count, pa.uint32()), **self.bounds.columns()}
        schema = pa.schema([pa.field("min", self.type), pa.field("max", self.type),
                            pa.field("null_count", pa.uint32(), nullable=False),
                            pa.field("nan_count", pa.uint32(), nullable=False), *BOUND_FIELDS])
        store.write_table(ZONEMAP_FILE, pa.table(cols, schema=schema),
                          {ROWS_PER_ZONE_KEY: str(rows_per_zone), **null_metadata(self.nulls)},
                          null_buffer(self.nulls))


def concat_stats(type_, parts) -> Stats:
    if not parts:
        empty = pa.array([], type_)
        return Stats(empty, empty, np.zeros(0, np.int64), np.zeros(0, np.int64))
    return Stats(pa.concat_arrays([p.min for p in parts]), pa.concat_arrays([p.max for p in parts]),
                 np.concatenate([p.null_count for p in parts]),
                 np.concatenate([p.nan_count for p in parts]))


class ZoneMapIndex(LoadedIndex):
    def __init__(self, store: IndexStore, details_msg=None):
        self.store = store
        path = store.uri(ZONEMAP_FILE)
        reader, table, meta = read_zone_file(store, ZONEMAP_FILE)
        try:
            self.rows_per_zone = int(meta.get(ROWS_PER_ZONE_KEY, DEFAULT_ROWS_PER_ZONE))
        except ValueError:
            raise CorruptFileError(f"bad rows_per_zone {meta.get(ROWS_PER_ZONE_KEY)!r}", path) from None
        if self.rows_per_zone <= 0:
            raise CorruptFileError(f"rows_per_zone {self.rows_per_zone} is not positive", path)
        names = set(table.column_names)
        if not {"min", "max", "null_count", "nan_count"} <= names:
            raise CorruptFileError(f"zone map has columns {sorted(names)}", path)
        bounds = Bounds.read(table, path)
        counts = []
        for name in ("null_count", "nan_count"):
            col = table.column(name)
            if col.type != pa.uint32() or col.null_count:
                raise CorruptFileError(f"zone map column {name!r} is {col.type}, not uint32", path)
            counts.append(col.to_numpy().astype(np.int64))
        if table.schema.field("max").type != table.schema.field("min").type:
            raise CorruptFileError("zone map min and max differ in type", path)
        self.type = table.schema.field("min").type
        stats = Stats(table.column("min").combine_chunks(), table.column("max").combine_chunks(), *counts)
        nulls = read_null_rows(reader, meta, bounds, path, stats.null_count)
        self.zones = Zones(self.type, bounds, stats, nulls)
        self.use_seeds = bool(details_msg.use_seeds) if details_msg is not None and \
            details_msg.HasField("use_seeds") else default_use_seeds(self.type)
        self._prepare()

    @property
    def value_type(self) -> pa.DataType:
        return self.type

    def _prepare(self) -> None:
        s, length = self.zones.stats, self.zones.bounds.length.astype(np.int64)
        self.nested = is_nested(self.type)
        self.kind = None if self.nested else numpy_kind(self.type)
        self.floating = pa.types.is_floating(self.type)
        min_ok = np.asarray(s.min.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        max_ok = np.asarray(s.max.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if self.kind is not None:
            kind = np.dtype(np.float64) if self.floating else self.kind
            self.lo = fixed_values(s.min, self.kind).astype(kind)
            self.hi = fixed_values(s.max, self.kind).astype(kind)
            if self.floating:  # a NaN (or missing) max hides the finite maximum
                min_ok &= ~np.isnan(self.lo)
                self.hi[np.isnan(self.hi) | ~max_ok] = np.inf
                max_ok[:] = True
        # bounds to compare; a zone without them holds no value only when its nulls and NaNs
        # fill its span (pylance keeps no bounds for some types: fixed-size binary, nested)
        self.valued = min_ok & max_ok & (not self.nested)
        self.unknown = ~self.valued & (s.null_count + s.nan_count < length)

    # -- search --------------------------------------------------------------------------------
    def _between(self, lower, lower_inc, upper, upper_inc) -> np.ndarray:
        """Zones whose [min, max] meets the range (None = unbounded). Floats compare in total
        order (zeros normalized by the caller): a NaN is above every bound and a negative NaN
        below, so a zone holding NaNs (``min``/``max`` leave them out) may meet any one-sided
        range."""
        ok = self.valued.copy()
        if self.nested:
            return self.unknown.copy()
        if self.kind is not None:
            if lower is not None:
                v = self._scalar(lower)
                ok &= (self.hi >= v) if lower_inc else (self.hi > v)
            if upper is not None:
                v = self._scalar(upper)
                ok &= (self.lo <= v) if upper_inc else (self.lo < v)
            if self.floating and (lower is None) != (upper is None):
                ok |= self.zones.stats.nan_count > 0
            return ok | self.unknown
        s = self.zones.stats
        if lower is not None:
            f = pc.greater_equal if lower_inc else pc.greater
            ok &= _mask(f(s.max, pa.scalar(lower, self.type)))
        if upper is not None:
            f = pc.less_equal if upper_inc else pc.less
            ok &= _mask(f(s.min, pa.scalar(upper, self.type)))
        return ok | self.unknown

    def _scalar(self, value):
        if self.floating:
            return float(value)
        return scalar_as(value, self.type, self.kind)

    def _equal(self, value) -> np.ndarray:
        if self.floating and value != value:
            return (self.zones.stats.nan_count > 0) | self.unknown
        return self._between(value, True, value, True)

    def search(self, query) -> SearchResult:
        z = self.zones
        query = normalized(query)
        if isinstance(query, IsNull):
            if z.nulls is not None:
                return SearchResult(z.nulls, exact=True, addresses=True)
            mask = z.stats.null_count > 0
        elif isinstance(query, Equals):
            mask = self._equal(query.value)
        elif isinstance(query, Range):
            mask = self._between(query.lower, query.lower_inclusive, query.upper, query.upper_inclusive)
        elif isinstance(query, IsIn):
            mask = np.zeros(len(z.bounds), dtype=bool)
            for v in query.values:
                mask |= self._equal(v)
        else:
            raise InvalidArgumentError(f"ZONEMAP cannot answer {type(query).__name__}")
        return SearchResult(z.bounds.addresses(mask), exact=False, addresses=True)

    # -- the rest --------------------------------------------------------------------------------
    def statistics(self) -> dict:
        return {"num_zones": len(self.zones.bounds), "rows_per_zone": self.rows_per_zone}

    def params(self) -> dict:
        """The build parameters this index was made with (what an optimize should reuse)."""
        return {ROWS_PER_ZONE_KEY: self.rows_per_zone, "use_seeds": self.use_seeds}

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        """Zones of ``new_data``'s fragments appended; zones ``keep`` (row addresses -> mask)
        finds no row in, and zones of fragments ``new_data`` indexes again, dropped."""
        z = self.zones
        alive = zone_alive(z.bounds, keep) if keep is not None else np.ones(len(z.bounds), bool)
        again = np.array([f for f, _ in new_data.fragments], dtype=np.uint64)
        alive &= ~np.isin(z.bounds.fragment_id, again)
        old = z.take(np.flatnonzero(alive))
        new = Zones.build(self.type, runs(new_data.batches(), self.rows_per_zone))
        nulls = None
        if z.nulls is not None:
            prev = z.nulls[~np.isin(z.nulls >> np.uint64(32), again)]
            if keep is not None and prev.size:
                prev = prev[np.asarray(keep(prev), dtype=bool)]
            nulls = as_rowset(np.concatenate([prev, new.nulls]))
        out = Zones(self.type, Bounds.concat([old.bounds, new.bounds]),
                    concat_stats(self.type, [old.stats, _cast(new.stats, self.type)]), nulls)
        out.write(dest, self.rows_per_zone)
        return details(self.rows_per_zone, self.use_seeds, nulls is not None)

    def remap(self, mapping, dest: IndexStore):
        """After a compaction (``mapping``: old -> new row *addresses*): zones of rewritten
        fragments are replaced by zones over the new fragments whose statistics merge those of
        the old zones each new zone's rows came from (see :func:`.zones.remap`)."""
        z = self.zones
        r = remap(z.bounds, mapping, self.rows_per_zone, z.nulls)
        kept = z.take(r.kept)
        parts = [kept.stats]
        if len(r.bounds):
            src = pa.array(r.pairs[:, 1])
            groups = np.append(r.groups(), r.pairs.shape[0])
            lo = group_stats(z.stats.min.take(src), groups).min
            hi = group_stats(z.stats.max.take(src), groups).max
            blind = pa.array(np.logical_or.reduceat(self.unknown[r.pairs[:, 1]], groups[:-1]))
            if blind.true_count:  # a source zone without bounds: so is the new one
                lo = pc.if_else(blind, pa.nulls(len(lo), self.type), lo)
                hi = pc.if_else(blind, pa.nulls(len(hi), self.type), hi)
            if r.nulls is not None:
                nulls = counts_in(r.bounds, r.nulls)
            else:
                nulls = np.minimum(np.add.reduceat(z.stats.null_count[r.pairs[:, 1]], groups[:-1]), r.rows)
            nans = np.minimum(np.add.reduceat(z.stats.nan_count[r.pairs[:, 1]], groups[:-1]), r.rows)
            parts.append(Stats(lo, hi, nulls.astype(np.int64), nans.astype(np.int64)))
        out = Zones(self.type, Bounds.concat([kept.bounds, r.bounds]), concat_stats(self.type, parts),
                    r.nulls)
        out.write(dest, self.rows_per_zone)
        return details(self.rows_per_zone, self.use_seeds, r.nulls is not None)


def _cast(stats: Stats, t: pa.DataType) -> Stats:
    if stats.min.type == t:
        return stats
    return Stats(stats.min.cast(t), stats.max.cast(t), stats.null_count, stats.nan_count)


def _mask(arr) -> np.ndarray:
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


ZONEMAP = register(ZoneMapType())
