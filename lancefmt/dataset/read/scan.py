"""Scanning: fragments -> RecordBatches, with projection, deletions, row ids/addresses, filters.

One fragment is scanned by :class:`FragmentScan`: it opens the data files holding the wanted
columns, reads row windows of all of them in step, drops deleted rows (the deletion vector's
kept indices; a window without deletions is passed through untouched), adds ``_rowid`` /
``_rowaddr`` (uint64) when asked, applies the filter, and projects.

A dataset scan (:func:`scan_batches`) runs fragment windows on a thread pool (file I/O and the
Cython/Arrow decoders release the GIL) and yields their batches in order, then applies
``offset``/``limit``.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from itertools import chain, islice
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...encoding.pool_memory import pool_empty
from ...errors import CorruptFileError, InvalidArgumentError
from ...io.cores import cores, limited
from ...sql import referenced_columns, to_expression
from ...table.rowids import fill_range
from ...table.deletion import DeletionVector, deletion_file_kind, read_deletion_file
from ...table.naming import deletion_file_name
from ...table.rowids.meta import load_row_id_sequence
from ...table.rowids.segment import SegmentKind
from ..core.context import ScanContext
from ..core.reader_cache import cached_value, caches_of, open_data_file
from .deleted_rows import gather_width, keep_rows
from .window_shape import ROW_ADDRESS, ROW_ID, WindowShape
from .window_stream import WindowStream, trim_windows

DEFAULT_BATCH_SIZE = 8192
# Rows read per step inside a fragment: large enough to amortise per-call work, small enough
# to bound memory for wide rows (vectors).
WINDOW_ROWS = 1 << 17
MAX_TASK_ROWS = 1 << 20


REMOTE_SCHEMES = ("s3://", "s3a://", "gs://", "gcs://", "az://", "abfs://", "abfss://", "http")


def is_remote(ctx: ScanContext | None) -> bool:
    """Whether the dataset, or any of its bases, lives in an object store (latency-bound:
    reads are batched, many in flight). A local root with its data in buckets is remote."""
    if ctx is None:
        return False
    return ctx.uri.startswith(REMOTE_SCHEMES) or any(
        b.path.startswith(REMOTE_SCHEMES) for b in ctx.base_paths)


def default_threads(ctx: ScanContext | None = None) -> int:
    """Fragments scanned at once. Local files are CPU-bound once cached: one thread per core
    (at least two, so I/O and decoding overlap), or exactly the cores of a Spark task's share
    (:func:`~lancefmt.io.cores.core_limit`). Object stores are latency-bound: many requests in
    flight."""
    if is_remote(ctx):
        return 16
    if limited():
        return min(8, cores())
    return max(2, min(8, cores()))


_POOLS: dict = {}
_POOLS_LOCK = threading.Lock()


def scan_pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide executor per size (threads are not re-created for every scan)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="lancefmt-scan")
        return pool


def _forget_pools_after_fork() -> None:  # a forked child has none of the parent's threads
    _POOLS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)


@dataclass(frozen=True)
class ScanSpec:
    """What a scan returns: output columns, the filter, and the metadata columns."""

    columns: tuple            # output top-level column names
    read_columns: tuple       # columns read (output + filter-only), schema order
    filter: pc.Expression | None
    with_row_id: bool = False
    with_row_address: bool = False
    batch_size: int = DEFAULT_BATCH_SIZE
    filter_row_id: bool = False        # the filter reads _rowid / _rowaddr (computed, then dropped)
    filter_row_address: bool = False
    include_deleted: bool = False      # deleted rows too, their _rowid/_rowaddr null

    @property
    def need_row_id(self) -> bool:
        return self.with_row_id or self.filter_row_id

    @property
    def need_row_address(self) -> bool:
        return self.with_row_address or self.filter_row_address

    @classmethod
    def build(cls, schema: pa.Schema, columns=None, filter=None, with_row_id=False,
              with_row_address=False, batch_size=None) -> "ScanSpec":
        if columns is None:
            columns = schema.names
        elif isinstance(columns, str):
            raise InvalidArgumentError("columns must be a list of names")
        columns = list(columns)
        meta = {ROW_ID: False, ROW_ADDRESS: False}
        plain = []
        for c in columns:
            if c in meta and schema.get_field_index(c) < 0:
                meta[c] = True
            else:
                plain.append(c)
        unknown = [c for c in plain if schema.get_field_index(c) < 0]
        if unknown:
            raise InvalidArgumentError(f"no such column(s): {', '.join(map(repr, unknown))}")
        expr = to_expression(filter, schema)
        wanted = set(plain)
        if expr is not None:
            wanted |= set(referenced_columns(expr, schema))
        read = tuple(n for n in schema.names if n in wanted)
        if batch_size is not None and int(batch_size) <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        return cls(tuple(plain), read, expr, bool(with_row_id or meta[ROW_ID]),
                   bool(with_row_address or meta[ROW_ADDRESS]), int(batch_size or DEFAULT_BATCH_SIZE),
                   ROW_ID in wanted and schema.get_field_index(ROW_ID) < 0,
                   ROW_ADDRESS in wanted and schema.get_field_index(ROW_ADDRESS) < 0)

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        fields = [schema.field(c) for c in self.columns]
        if self.with_row_id:
            fields.append(pa.field(ROW_ID, pa.uint64()))
        if self.with_row_address:
            fields.append(pa.field(ROW_ADDRESS, pa.uint64()))
        return pa.schema(fields, metadata=schema.metadata)


def load_deletions(ctx: ScanContext, frag) -> DeletionVector | None:
    """A fragment's deletion vector (None if it has no deletion file)."""
    if not frag.HasField("deletion_file"):
        return None
    d = frag.deletion_file
    name = deletion_file_name(frag.id, d.read_version, d.id, deletion_file_kind(d))
    base = d.base_id if d.HasField("base_id") else None
    uri = ctx.resolver.deletion_file_uri(name, base)

    def load():
        dv = read_deletion_file(uri, deletion_file_kind(d), physical_rows=frag.physical_rows,
                                storage_options=ctx.options_for(uri))
        if d.num_deleted_rows and len(dv) != d.num_deleted_rows:
            raise CorruptFileError(f"holds {len(dv)} deletions, the manifest says {d.num_deleted_rows}", uri)
        return dv

    # Deletion files are immutable: read once per dataset view.
    return cached_value(ctx, ("deletions", uri, frag.physical_rows, d.num_deleted_rows), load)


def row_id_sequence(ctx: ScanContext, frag):
    """A fragment's RowIdSequence (parsed once per dataset view), None without stable ids."""
    which = frag.WhichOneof("row_id_sequence")
    if which is None:
        return None
    if which == "inline_row_ids":
        key = ("row ids", frag.id, frag.physical_rows, frag.inline_row_ids)
    else:
        e = frag.external_row_ids
        key = ("row ids", frag.id, frag.physical_rows, e.path, e.offset, e.size)
    return cached_value(ctx, key, lambda: load_row_id_sequence(frag, ctx.uri, ctx.storage_options))


_UNSET = object()


def id_run(first: int, n: int) -> np.ndarray:
    """``first, first + 1, ...`` (``n`` values), written in one pass over pool memory."""
    out = pool_empty(n, np.uint64)
    fill_range(out, first)
    return out


def shifted(positions: np.ndarray, first: int) -> np.ndarray:
    """``positions + first`` as uint64, in one pass over pool memory."""
    out = pool_empty(positions.size, np.uint64)
    np.add(positions, np.uint64(first), out=out, casting="unsafe")
    return out


class FragmentScan:
    """Reads one fragment for one :class:`ScanSpec`."""

    def __init__(self, ctx: ScanContext, frag, spec: ScanSpec, shape: WindowShape | None = None):
        self.ctx = ctx
        self.frag = frag
        self.spec = spec
        # one per scan (see window_shape)
        self.shape = shape or WindowShape(ctx.schema, spec, not is_remote(ctx))
        self.num_rows = frag.physical_rows
        self._deletions = None
        self._deletions_loaded = False
        self._row_ids = None
        self._range_start = _UNSET
        self.apply_filter = True  # False when an exact index answer already selected the rows

    # -- pieces ---------------------------------------------------------------------------
    @property
    def deletions(self) -> DeletionVector | None:
        if not self._deletions_loaded:
            self._deletions = load_deletions(self.ctx, self.frag)
            self._deletions_loaded = True
        return self._deletions

    def _first_row_id(self):
        """The first row id when the fragment's ids are one contiguous range (the common case:
        a window's ids are then computed, never decoded), else None."""
        if self._range_start is _UNSET:
            self._range_start = None
            if self.ctx.stable_row_ids:
                seq = row_id_sequence(self.ctx, self.frag)
                if seq is not None and len(seq.segments) == 1 and \
                        seq.segments[0].kind == SegmentKind.RANGE and len(seq) == self.num_rows:
                    self._range_start = int(seq.segments[0].start)
            else:
                self._range_start = int(self.frag.id) << 32  # row ids are row addresses
        return self._range_start

    def row_ids_at(self, start: int, end: int, positions=None) -> np.ndarray:
        """Row ids of physical rows ``positions`` (or of ``[start, end)`` when None): one
        arange for a range sequence, else one gather from the ids decoded (in Cython) once."""
        first = self._first_row_id()
        if first is not None:
            if positions is None:
                return id_run(first + start, end - start)
            return shifted(np.asarray(positions), first)
        ids = self.row_ids()
        return ids[start:end] if positions is None else ids[positions]

    def row_ids(self) -> np.ndarray:
        """Row ids of all physical rows (stable ids, or row addresses without them)."""
        if self._row_ids is None:
            if self.ctx.stable_row_ids:
                seq = row_id_sequence(self.ctx, self.frag)
                self._row_ids = None if seq is None else seq.to_numpy()
            else:
                self._row_ids = (np.uint64(self.frag.id) << np.uint64(32)) | \
                    np.arange(self.num_rows, dtype=np.uint64)
        return self._row_ids

    def file_plan(self):
        """[(reader, projection, names)] for data files holding wanted columns; and the names
        stored in no data file (read as nulls). Planned once per fragment and columns for the
        dataset view (the same projection objects also keep their field readers), so
        repeated small takes pay no schema work."""
        key = ("file plan", id(self.frag), tuple(self.spec.read_columns))
        cache = caches_of(self.ctx).small
        hit = cache.get(key)
        if hit is not None and hit[0] is self.frag:
            return hit[1], hit[2]
        plan, nulls = self._make_file_plan()
        # a plan keeps its readers: charged their metadata (a bound, as a reader also in the
        # reader cache counts twice), so a session's byte budget also bounds plans
        cache.put(key, (self.frag, plan, nulls), sum(getattr(p[0], "metadata_nbytes", 0) for p in plan))
        return plan, nulls

    def _make_file_plan(self):
        wanted = list(self.spec.read_columns)
        plan = []
        placed = set()
        for df in self.frag.files:
            ids = set(df.fields)
            names = [n for n in wanted if n not in placed and ids & set(self.ctx.root_ids[n])]
            if not names:
                continue
            base = df.base_id if df.HasField("base_id") else None
            uri = self.ctx.resolver.data_file_uri(df.path, base)
            reader = open_data_file(self.ctx, uri, df.file_size_bytes)
            if reader.num_rows != self.num_rows:
                raise CorruptFileError(f"has {reader.num_rows} rows, fragment {self.frag.id} "
                                       f"has {self.num_rows}", uri)
            # the same for every data file written alike: built once per view (it cost more
            # than decoding a small fragment)
            field_ids, column_indices = tuple(df.fields), tuple(df.column_indices)
            proj = cached_value(
                self.ctx, ("projection", tuple(names), field_ids, column_indices, reader.version),
                lambda: reader.projection(names, fields=self.ctx.fields, field_ids=list(field_ids),
                                          column_indices=list(column_indices)))
            plan.append((reader, proj, names))
            placed.update(names)
        nulls = [n for n in wanted if n not in placed]
        return plan, nulls

    # -- reading --------------------------------------------------------------------------
    def windows(self, start: int = 0, stop: int | None = None,
                first: int | None = None) -> Iterator[pa.Table]:
        """Filtered, projected tables for physical rows ``[start, stop)`` (window by window).
        ``first``: the rows of the first window when fewer (a limit: only its rows are read,
        not whole pages)."""
        stop = self.num_rows if stop is None else min(stop, self.num_rows)
        if start >= stop:
            return
        plan, nulls = self.file_plan()
        shape = self.shape
        kept = self.kept_positions()
        window = max(self.spec.batch_size, WINDOW_ROWS, shape.narrow_rows)
        if first is not None and 0 < first < window and start + first < stop:
            yield from self.windows(start, start + first)
            start += first
        iters = [reader.read_windows(window, proj, start=start, stop=stop) for reader, proj, _ in plan]
        # where each read column comes from, and the window schema: once per call
        source = {}
        for i, (_, proj, _) in enumerate(plan):
            for j, f in enumerate(proj.schema):
                source[f.name] = (i, j, f.type)
        null_types = [shape.null_types[n] for n in nulls]
        picks = [source[n][:2] if n in source else (-1, nulls.index(n)) for n in shape.read_names]
        types = [source[n][2] if n in source else shape.null_types[n] for n in shape.read_names]
        widths = [gather_width(t) for t in types] if kept is not None else None
        if shape.row_id:
            types.append(pa.uint64())
        if shape.row_address:
            types.append(pa.uint64())
        schema = shape.schema(tuple(types))
        pos = start
        while pos < stop:
            end = min(pos + window, stop)
            tables = [next(it).columns for it in iters]
            if nulls:
                tables.append([pa.nulls(end - pos, t) for t in null_types])
            arrays = [tables[i][j] for i, j in picks]
            positions = None
            if kept is not None:
                # keys of the offsets' own dtype: mixed types would copy all of them
                lo, hi = np.searchsorted(kept, np.array([pos, end], kept.dtype))
                if hi - lo != end - pos:
                    positions = kept[lo:hi]
            if positions is not None:
                arrays = keep_rows([a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
                                    for a in arrays], widths, positions, pos)
            yield self._finish(arrays, schema, pos, end, positions)
            pos = end

    def kept_positions(self) -> np.ndarray | None:
        """Physical offsets of the rows to return, sorted (None = every row): the live rows."""
        if self.spec.include_deleted:
            return None
        dv = self.deletions
        return dv.kept_indices(self.num_rows) if dv is not None and len(dv) else None

    def deleted_mask(self, start: int, end: int, positions) -> np.ndarray | None:
        """With ``include_deleted``: which of the window's rows are deleted (None: none)."""
        dv = self.deletions if self.spec.include_deleted else None
        if dv is None or not len(dv):
            return None
        rows = np.arange(start, end, dtype=np.int64) if positions is None else np.asarray(positions)
        mask = np.isin(rows, np.asarray(dv.offsets, dtype=np.int64))
        return mask if mask.any() else None

    def taken(self, columns: dict, positions: np.ndarray) -> pa.Table:
        """The rows at physical ``positions`` read by a take (``columns``: name -> the values
        of just those rows), with row ids/addresses, filtered and projected as a window is."""
        shape = self.shape
        arrays = [columns[n] for n in shape.read_names]
        types = [a.type for a in arrays] + [pa.uint64()] * (shape.row_id + shape.row_address)
        return self._finish(arrays, shape.schema(tuple(types)), 0, self.num_rows, positions)

    def _finish(self, arrays: list, schema: pa.Schema, start: int, end: int, positions) -> pa.Table:
        """Add row ids/addresses to a window's arrays (the rows not wanted already dropped:
        ``positions`` are the physical offsets kept, None = all of the window), filter and
        project."""
        shape = self.shape
        deleted = self.deleted_mask(start, end, positions) if shape.row_id or shape.row_address \
            else None
        if shape.row_id:
            arrays.append(pa.array(self.row_ids_at(start, end, positions), mask=deleted))
        if shape.row_address:
            base = int(self.frag.id) << 32
            arrays.append(pa.array(id_run(base + start, end - start) if positions is None
                                   else shifted(positions, base), mask=deleted))
        if arrays:
            table = pa.Table.from_arrays(arrays, schema=schema)
        else:
            length = len(positions) if positions is not None else end - start
            table = pa.table({"__n": pa.nulls(length, pa.bool_())}).drop_columns(["__n"])
        if shape.filter is not None and self.apply_filter:
            table = table.filter(shape.filter)
        if shape.select is not None:
            table = table.select(shape.select)
        return table

    def batches(self, start: int = 0, stop: int | None = None) -> Iterator[pa.RecordBatch]:
        """The batches of :meth:`windows` (flattened by ``chain``: no Python frame per batch)."""
        return chain.from_iterable(_task_windows((self, start, stop)))

    def count(self) -> int:
        if self.spec.filter is None:
            dv = None if self.spec.include_deleted else self.deletions
            return self.num_rows - (len(dv) if dv is not None else 0)
        return sum(t.num_rows for t in self.windows())


def _tasks(ctx, fragments, spec, make_scan=None):
    """(scan, start, stop) tasks. The fragments of a plain scan share one WindowShape;
    ``make_scan(ctx, fragment, spec)`` (the index read path) makes scans of their own."""
    shape = WindowShape(ctx.schema, spec, not is_remote(ctx)) if make_scan is None else None
    for frag in fragments:
        scan = FragmentScan(ctx, frag, spec, shape) if make_scan is None else \
            make_scan(ctx, frag, spec)
        n = frag.physical_rows
        if n <= MAX_TASK_ROWS:
            yield scan, 0, n
        else:
            for s in range(0, n, MAX_TASK_ROWS):
                yield scan, s, min(n, s + MAX_TASK_ROWS)


def cut_batches(table: pa.Table, size: int) -> list:
    """``table`` as batches of ``size`` rows (the last shorter): zero-copy slices, but for a
    batch whose rows lie on several pages (chunks), whose columns are concatenated."""
    if all(c.num_chunks == 1 for c in table.columns):
        return [b for b in table.to_batches(max_chunksize=size) if b.num_rows]
    return [b for off in range(0, table.num_rows, size)
            for b in table.slice(off, size).combine_chunks().to_batches() if b.num_rows]


def _task_windows(task) -> Iterator[list]:
    """A task's non-empty batches, a window's worth at a time (one hand-over per window)."""
    scan, start, stop = task
    size = scan.spec.batch_size
    for table in scan.windows(start, stop):
        if table.num_rows:
            yield cut_batches(table, size)


# Windows a running task may hold ready beyond what the consumer took.
STREAM_DEPTH = 2


def scan_windows(ctx: ScanContext, fragments: Sequence, spec: ScanSpec, *, limit=None,
                 offset=None, threads: int | None = None, readahead: int | None = None,
                 make_scan=None) -> Iterator[list]:
    """The fragments' batches in order, after ``offset``, up to ``limit``, as lists (a
    window's worth each; ``itertools.chain.from_iterable`` flattens them with no Python call
    per batch). Up to ``readahead`` tasks (fragments, or 1M-row ranges of big ones) are read
    ahead on ``threads`` threads, each streaming at most :data:`STREAM_DEPTH` windows: memory
    stays bounded by the running tasks' windows, not by the dataset. ``make_scan(ctx,
    fragment, spec)`` makes each fragment's scan (default :class:`FragmentScan`; the index read
    path gives scans that read only the rows an index selected)."""
    if limit is not None and int(limit) < 0:
        raise InvalidArgumentError("limit must be >= 0")
    if offset is not None and int(offset) < 0:
        raise InvalidArgumentError("offset must be >= 0")
    skip = int(offset or 0)
    remaining = None if limit is None else int(limit)
    if remaining == 0:
        return
    threads = threads or default_threads(ctx)
    readahead = readahead or threads * 2
    tasks = iter(_tasks(ctx, fragments, spec, make_scan))
    if make_scan is None and remaining is not None and skip + remaining < WINDOW_ROWS:
        # a small limit: the first task's first window holds just the rows wanted (no page
        # decoded whole, nothing read ahead); the rest only if those rows fall short
        head = next(tasks, None)
        if head is None:
            return
        scan, start, stop = head
        seen = 0

        def counted(tables):
            nonlocal seen
            for table in tables:
                seen += table.num_rows
                yield table
        wanted = skip + remaining
        heads = (cut_batches(t, spec.batch_size)
                 for t in counted(scan.windows(start, stop, first=wanted)) if t.num_rows)
        yield from trim_windows(heads, skip, remaining)
        if seen >= wanted:
            return
        remaining -= max(0, seen - skip)
        skip = max(0, skip - seen)
    if threads <= 1 or len(fragments) <= 1:
        yield from trim_windows(chain.from_iterable(map(_task_windows, tasks)), skip, remaining)
        return
    pool = scan_pool(threads)
    streams: deque = deque()

    def fill():
        for t in islice(tasks, readahead - len(streams)):
            streams.append(WindowStream(partial(_task_windows, t), pool, STREAM_DEPTH))

    def in_order():
        fill()
        while streams:
            yield streams[0]  # read to its end before the next is asked for
            streams.popleft()
            fill()

    try:
        yield from trim_windows(chain.from_iterable(in_order()), skip, remaining)
    finally:
        for stream in streams:
            stream.close()


def scan_batches(ctx: ScanContext, fragments: Sequence, spec: ScanSpec, *, limit=None, offset=None,
                 threads: int | None = None, readahead: int | None = None,
                 make_scan=None) -> Iterator[pa.RecordBatch]:
    """The batches of :func:`scan_windows`, one by one."""
    yield from chain.from_iterable(scan_windows(ctx, fragments, spec, limit=limit, offset=offset,
                                                threads=threads, readahead=readahead,
                                                make_scan=make_scan))


def count_matching(ctx: ScanContext, fragments: Sequence, spec: ScanSpec, make_scan=None) -> int:
    """Rows of ``fragments`` that ``spec`` selects, summed with no Python call per batch."""
    return sum(map(len, chain.from_iterable(scan_windows(ctx, fragments, spec,
                                                         make_scan=make_scan))))


def live_counts(ctx: ScanContext, pbs) -> np.ndarray:
    """Live rows of each fragment of ``pbs`` (a deletion count the manifest leaves unknown is
    read from the deletion file)."""
    out = np.empty(len(pbs), dtype=np.int64)
    for i, pb in enumerate(pbs):
        deleted = 0
        if pb.HasField("deletion_file"):
            deleted = pb.deletion_file.num_deleted_rows
            if deleted == 0:  # 0 means "unknown" in the manifest: count the file
                dv = load_deletions(ctx, pb)
                deleted = len(dv) if dv is not None else 0
        out[i] = pb.physical_rows - deleted
    return out


def scan_table(ctx: ScanContext, pbs, spec: ScanSpec, limit: int | None = None) -> pa.Table:
    """The rows of ``pbs`` that ``spec`` selects (the first ``limit``), as one table."""
    batches = list(scan_batches(ctx, pbs, spec, limit=limit))
    return pa.Table.from_batches(batches, schema=spec.output_schema(ctx.schema))
