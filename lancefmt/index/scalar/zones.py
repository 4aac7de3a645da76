"""Zones: what ZONEMAP and BLOOMFILTER share (pylance 14's ``zoned.rs``).

A zone is at most ``rows_per_zone`` consecutive *live* rows of one fragment, in address order;
zones never span fragments. Its bound is ``zone_start`` (the physical offset of its first row)
and ``zone_length`` (last offset - first offset + 1: a span, so rows deleted before training
inside it count). An index answers with every row address of the zones that may match (an
*at most* answer); rows deleted since are dropped by the scan.

Both types also keep the exact addresses of the null rows as a serialized RowIdTreeMap in a
global buffer named by the schema metadata ``null_bitmap`` (absent in older files), which
answers ``IS NULL`` exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from ..core.registry import ROW_ADDRESS, VALUE
from ..core.rowset import EMPTY, as_rowset
from ..core.treemap import decode_treemap, encode_treemap

FRAGMENT_ID = "fragment_id"
ZONE_START = "zone_start"
ZONE_LENGTH = "zone_length"
NULL_BITMAP_KEY = "null_bitmap"
LOW = np.uint64(0xFFFFFFFF)
SHIFT = np.uint64(32)
OFFSET_LIMIT = 1 << 32

BOUND_FIELDS = [pa.field(FRAGMENT_ID, pa.uint64(), nullable=False),
                pa.field(ZONE_START, pa.uint64(), nullable=False),
                pa.field(ZONE_LENGTH, pa.uint64(), nullable=False)]


@dataclass
class Run:
    """The live rows of one fragment, in address order, cut into zones: ``bounds[k]`` is the
    row (in ``values``) where zone k starts; ``bounds[-1] == len(values)``."""
    fragment_id: int
    values: pa.Array
    offsets: np.ndarray        # int64 physical offsets, ascending
    bounds: np.ndarray         # int64

    @property
    def starts(self) -> np.ndarray:
        return self.offsets[self.bounds[:-1]].astype(np.uint64)

    @property
    def lengths(self) -> np.ndarray:
        return (self.offsets[self.bounds[1:] - 1] - self.offsets[self.bounds[:-1]] + 1).astype(np.uint64)

    def null_addresses(self) -> np.ndarray:
        if not self.values.null_count:
            return EMPTY
        null = ~np.asarray(self.values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        return (np.uint64(self.fragment_id) << SHIFT) | self.offsets[null].astype(np.uint64)


def cut(fragment_id: int, values: pa.Array, offsets: np.ndarray, rows_per_zone: int) -> Run:
    if offsets.size > 1 and not (offsets[1:] > offsets[:-1]).all():
        order = np.argsort(offsets, kind="stable")
        values, offsets = values.take(pa.array(order)), offsets[order]
    n = offsets.size
    bounds = np.append(np.arange(0, n, rows_per_zone, dtype=np.int64), np.int64(n))
    return Run(fragment_id, values, offsets, bounds)


def runs(batches, rows_per_zone: int) -> Iterator[Run]:
    """Training batches (``value``, ``_rowaddr``) as one :class:`Run` per stretch of rows of one
    fragment (a fragment's rows arrive together, in address order)."""
    fid, parts, addrs = None, [], []
    for batch in batches:
        if not batch.num_rows:
            continue
        addr = batch.column(ROW_ADDRESS).to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
        values = batch.column(VALUE)
        frag = addr >> SHIFT
        cuts = np.flatnonzero(frag[1:] != frag[:-1]) + 1
        starts = np.concatenate(([0], cuts)).tolist()
        ends = np.concatenate((cuts, [addr.size])).tolist()
        for s, e in zip(starts, ends):
            f = int(frag[s])
            if f != fid and parts:
                yield _joined(fid, parts, addrs, rows_per_zone)
                parts, addrs = [], []
            fid = f
            parts.append(values.slice(s, e - s))
            addrs.append(addr[s:e])
    if parts:
        yield _joined(fid, parts, addrs, rows_per_zone)


def _joined(fid, parts, addrs, rows_per_zone) -> Run:
    values = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
    offsets = (np.concatenate(addrs) & LOW).astype(np.int64)
    return cut(fid, values, offsets, rows_per_zone)


def positive_int(params: dict, key: str, default: int) -> int:
    """A build parameter that sizes zones or filters (0 would make no zone at all)."""
    value = params.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise InvalidArgumentError(f"{key} must be a positive integer, not {value!r}")
    return int(value)


# -- the zone table ----------------------------------------------------------------------------
@dataclass
class Bounds:
    """Each zone's fragment, first offset and span (uint64 arrays of one length)."""
    fragment_id: np.ndarray
    start: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return int(self.fragment_id.size)

    @classmethod
    def empty(cls) -> "Bounds":
        return cls(EMPTY, EMPTY, EMPTY)

    @classmethod
    def concat(cls, parts) -> "Bounds":
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, k) for p in parts])
                     for k in ("fragment_id", "start", "length")))

    def take(self, idx) -> "Bounds":
        return Bounds(self.fragment_id[idx], self.start[idx], self.length[idx])

    def columns(self) -> dict:
        return {FRAGMENT_ID: pa.array(self.fragment_id, pa.uint64()),
                ZONE_START: pa.array(self.start, pa.uint64()),
                ZONE_LENGTH: pa.array(self.length, pa.uint64())}

    @property
    def first(self) -> np.ndarray:
        """Each zone's first row address."""
        return (self.fragment_id << SHIFT) | self.start

    @classmethod
    def read(cls, table: pa.Table, path: str) -> "Bounds":
        """The bounds columns of a zone file, checked: each zone lies inside its fragment's
        32-bit offset space and holds at least one row."""
        cols = []
        for f in BOUND_FIELDS:
            if f.name not in table.column_names:
                raise CorruptFileError(f"zone file lacks column {f.name!r}", path)
            col = table.column(f.name)
            if col.type != pa.uint64() or col.null_count:
                raise CorruptFileError(f"zone column {f.name!r} is {col.type} with "
                                       f"{col.null_count} nulls, not uint64 without nulls", path)
            cols.append(col.to_numpy().astype(np.uint64, copy=False))
        out = cls(*cols)
        if len(out) and (out.fragment_id.max() >= OFFSET_LIMIT or out.length.min() == 0
                         or (out.start + out.length).max() > OFFSET_LIMIT
                         or (out.start >= OFFSET_LIMIT).any() or (out.length > OFFSET_LIMIT).any()):
            raise CorruptFileError("a zone lies outside its fragment or holds no row", path)
        return out

    # -- answers ---------------------------------------------------------------------------------
    def addresses(self, mask: np.ndarray) -> np.ndarray:
        """Sorted unique row addresses of the zones ``mask`` selects (overlapping zones are
        merged first, so the answer is never larger than the rows the zones span)."""
        sel = self.take(np.flatnonzero(mask))
        if not len(sel):
            return EMPTY
        lo = sel.first
        hi = lo + sel.length
        order = np.argsort(lo, kind="stable")
        lo, hi = lo[order], hi[order]
        reach = np.maximum.accumulate(hi)
        new = np.ones(lo.size, dtype=bool)
        new[1:] = lo[1:] > reach[:-1]
        starts = lo[new]
        ends = np.maximum.reduceat(hi, np.flatnonzero(new))
        return span_rows(starts, ends - starts)

    def rows_of_zones(self) -> tuple[np.ndarray, np.ndarray]:
        """(every address each zone spans, the index of the zone it belongs to)."""
        if not len(self):
            return EMPTY, np.empty(0, dtype=np.int64)
        addrs = span_rows(self.first, self.length, unique=False)
        owner = np.repeat(np.arange(len(self), dtype=np.int64), self.length.astype(np.int64))
        return addrs, owner

    def zone_of(self, addrs: np.ndarray) -> np.ndarray:
        """Index of the zone holding each address (-1: none)."""
        if not len(self) or not addrs.size:
            return np.full(addrs.size, -1, dtype=np.int64)
        first = self.first
        order = np.argsort(first, kind="stable")
        sorted_first = first[order]
        pos = np.searchsorted(sorted_first, addrs, side="right") - 1
        ok = pos >= 0
        idx = np.where(ok, order[np.maximum(pos, 0)], -1)
        inside = ok & (addrs < first[np.maximum(idx, 0)] + self.length[np.maximum(idx, 0)])
        return np.where(inside, idx, -1)


def span_rows(first: np.ndarray, length: np.ndarray, unique: bool = True) -> np.ndarray:
    """Concatenated ``first[i] .. first[i] + length[i] - 1`` as uint64."""
    lengths = length.astype(np.int64)
    total = int(lengths.sum())
    if not total:
        return EMPTY
    begin = np.cumsum(lengths) - lengths
    out = np.repeat(first.astype(np.uint64) - begin.astype(np.uint64), lengths)
    out += np.arange(total, dtype=np.uint64)
    return as_rowset(out) if unique else out


def zone_alive(bounds: Bounds, keep) -> np.ndarray:
    """Whether each zone still holds a row ``keep`` accepts (``keep``: addresses -> mask)."""
    if not len(bounds):
        return np.zeros(0, dtype=bool)
    addrs, owner = bounds.rows_of_zones()
    mask = np.asarray(keep(addrs), dtype=bool)
    out = np.zeros(len(bounds), dtype=bool)
    out[owner[mask]] = True
    return out


def read_zone_file(store, name: str):
    """(reader, table, schema metadata as str) of an index file; a schema the reader does not
    know (a damaged type name) is a corrupt index file."""
    try:
        reader = store.reader(name)
        table = reader.read_all()
        meta = reader.schema_metadata
    except UnsupportedFeatureError as e:
        raise CorruptFileError(e.reason, e.path or store.uri(name)) from None
    meta = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in meta.items()}
    return reader, table, meta


# -- null rows -----------------------------------------------------------------------------------
def read_null_rows(reader, meta: dict, bounds: Bounds, path: str, null_counts=None):
    """The exact null addresses (None when the file predates them), checked against the zones:
    each lies in a zone, and each zone's count matches ``null_counts`` (ZONEMAP) or, given as
    booleans, its ``has_null`` flag (BLOOMFILTER)."""
    key = meta.get(NULL_BITMAP_KEY)
    if key is None:
        return None
    try:
        idx = int(key)
    except ValueError:
        raise CorruptFileError(f"bad null_bitmap buffer index {key!r}", path) from None
    try:
        data = reader.read_global_buffer(idx)
    except (IndexError, ValueError, KeyError) as e:
        raise CorruptFileError(f"null_bitmap names global buffer {idx} ({e})", path) from None
    rows = decode_treemap(data, path)
    zone = bounds.zone_of(rows)
    if (zone < 0).any():
        raise CorruptFileError("a null row lies outside every zone", path)
    if null_counts is not None:
        got = np.bincount(zone, minlength=len(bounds))
        want = np.asarray(null_counts)
        bad = (got > 0) != want if want.dtype == bool else got != want.astype(np.int64)
        if bad.any():
            raise CorruptFileError("the null rows disagree with the zones' null counts", path)
    return rows


def null_buffer(rows) -> list:
    """The extra global buffers of a zone file: the null rows, when known."""
    return [] if rows is None else [encode_treemap(as_rowset(rows))]


def null_metadata(rows) -> dict:
    # global buffer 0 is the file's schema; the null rows are the next one
    return {} if rows is None else {NULL_BITMAP_KEY: "1"}


# -- remapping (compaction) --------------------------------------------------------------------
@dataclass
class Remapped:
    """Zones after a compaction: ``kept`` indexes the old zones whose fragments were not
    rewritten; ``bounds`` are the new fragments' zones, each built from the old zones listed
    by ``pairs`` (rows ``(new zone, old zone)``, sorted by new zone); ``rows`` counts each new
    zone's rows; ``nulls`` are the null addresses after the move (None when unknown)."""
    kept: np.ndarray
    bounds: Bounds
    pairs: np.ndarray
    rows: np.ndarray
    nulls: np.ndarray | None

    def groups(self) -> np.ndarray:
        """Start of each new zone's run in ``pairs``."""
        return np.flatnonzero(np.concatenate(([True], self.pairs[1:, 0] != self.pairs[:-1, 0]))) \
            if self.pairs.size else np.empty(0, dtype=np.int64)


def remap(bounds: Bounds, mapping, rows_per_zone: int, nulls) -> Remapped:
    """Old zones and a compaction's address mapping -> :class:`Remapped`. A new fragment gets
    zones only when every row moved into it lay in an old zone (else it is left unindexed:
    nothing is known of rows from fragments the index does not cover, and the compaction keeps
    such a fragment out of the index's coverage); a new zone's statistics are then merged from
    the old zones its rows came from, a superset of what a rebuild would find. A row of an
    indexed fragment outside every zone (an inconsistent index) raises NotImplementedError:
    the compaction then leaves the segment unremapped and scans the rewritten rows."""
    old, new = mapping.old, mapping.new
    rewritten = np.union1d(np.unique(old >> SHIFT), np.unique(mapping.dropped >> SHIFT))
    kept = np.flatnonzero(~np.isin(bounds.fragment_id, rewritten))
    out_nulls = None
    if nulls is not None:
        stay = nulls[~np.isin(nulls >> SHIFT, rewritten)]
        moved = nulls[np.isin(nulls, old)]
        moved_to, live = mapping.apply(moved)
        out_nulls = as_rowset(np.concatenate([stay, moved_to[live]]))
    if not old.size:
        return Remapped(kept, Bounds.empty(), np.empty((0, 2), np.int64), EMPTY, out_nulls)
    order = np.argsort(new, kind="stable")
    new_sorted, src_zone = new[order], bounds.zone_of(old[order])
    new_frag = new_sorted >> SHIFT
    cuts = np.flatnonzero(new_frag[1:] != new_frag[:-1]) + 1
    parts, pairs, rows, next_zone = [], [], [], 0
    lost = src_zone < 0
    if lost.any() and np.isin(old[order][lost] >> SHIFT, bounds.fragment_id).any():
        # a fragment with zones holds a row none of them spans: nothing safe can be built
        raise NotImplementedError("rows of an indexed fragment lie outside its zones")
    for s, e in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [new_sorted.size])).tolist()):
        if lost[s:e].any():
            continue  # rows of fragments the index does not cover: this one stays unindexed
        offsets = (new_sorted[s:e] & LOW).astype(np.int64)
        run = cut(int(new_frag[s]), pa.nulls(0), offsets, rows_per_zone)
        parts.append(Bounds(np.full(run.bounds.size - 1, run.fragment_id, np.uint64), run.starts, run.lengths))
        zone = np.repeat(np.arange(run.bounds.size - 1, dtype=np.int64), np.diff(run.bounds)) + next_zone
        pairs.append(np.stack([zone, src_zone[s:e]], axis=1))
        rows.append(np.diff(run.bounds))
        next_zone += run.bounds.size - 1
    if not parts:
        return Remapped(kept, Bounds.empty(), np.empty((0, 2), np.int64), EMPTY, out_nulls)
    pairs = np.unique(np.concatenate(pairs), axis=0)
    return Remapped(kept, Bounds.concat(parts), pairs, np.concatenate(rows), out_nulls)


def counts_in(bounds: Bounds, rows: np.ndarray) -> np.ndarray:
    """How many of ``rows`` (addresses) fall in each zone."""
    zone = bounds.zone_of(rows)
    return np.bincount(zone[zone >= 0], minlength=len(bounds))
