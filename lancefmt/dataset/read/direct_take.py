"""The direct take: fixed-width columns of local datasets read row by row from the mapped files.

A take of a few thousand rows does microseconds of copying; going through fragments, data
files, field readers and pages per call cost milliseconds. So for a dataset view and a set of
columns, a *plan* is made once: per column, the table of segments (runs of rows and where their
values lie in the memory-mapped data files, see ``_direct_take.pyx``) over all fragments, and
the deleted rows of all fragments. A take is then one vectorised offset mapping and one Cython
job whose units (column x run of rows) the calling thread and, for big takes, pool
threads share, writing into the result's buffers.

The plan exists only when every wanted column is a fixed-width number or temporal stored
without nulls in plain 2.0 pages or plain 2.1/2.2 mini-block pages (bit-packed or flat) of
local files, and no row id or address is asked for; anything else takes the general path.
Every segment is checked against its chunk and the mapped file when the plan is made.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, LanceError, RowOutOfRangeError
from ._direct_take import GatherJob, SegmentTable, miniblock_segments
from ..core.reader_cache import cached_value
from .scan import FragmentScan, ScanSpec, default_threads, scan_pool

# Rows x columns from which a take is shared with pool threads (the kernels release the GIL).
PARALLEL_MIN_VALUES = 60_000
# Takes of at least this many rows in no particular order are read regrouped; the first
# REGROUP_PROBE rows tell whether they are in order.
REGROUP_MIN_ROWS = 512
REGROUP_PROBE = 256
# How long a take whose units are all claimed spins for a helper's last unit before it
# blocks on the helper's future (a unit is a few microseconds of work).
HELPER_SPIN_SECONDS = 0.002
# Views with more fragments than this take the general path (the plan opens every data file
# on the first take; the general path opens only the files a take touches).
MAX_FRAGMENTS = 2048


class _Ineligible(Exception):
    """This dataset or these columns need the general take."""


class _Column:
    """One column over all fragments: segment table and the mapped files it points into."""

    __slots__ = ("name", "type", "value_bytes", "starts", "ptrs", "widths", "keep", "table")

    def __init__(self, name, dtype, value_bytes):
        self.name = name
        self.type = dtype
        self.value_bytes = value_bytes
        self.keep = []  # the mapped buffers the addresses point into
        self.starts = []
        self.ptrs = []
        self.widths = []

    def finish(self, total_rows: int):
        starts = np.concatenate(self.starts) if self.starts else np.zeros(0, np.int64)
        self.starts = np.ascontiguousarray(np.append(starts, total_rows), dtype=np.int64)
        self.ptrs = np.ascontiguousarray(
            np.concatenate(self.ptrs) if self.ptrs else np.zeros(0, np.uint64), dtype=np.uint64)
        self.widths = np.ascontiguousarray(
            np.concatenate(self.widths) if self.widths else np.zeros(0, np.int16), dtype=np.int16)
        self.table = SegmentTable(self.starts, self.ptrs, self.widths, self.value_bytes)
        if self.table.first != 0:
            raise ValueError(f"column {self.name!r}: its pages start at row {self.table.first}")


def _value_bytes(t: pa.DataType):
    """Bytes per value of a type the direct take reads, else None."""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t):
        if isinstance(t, pa.BaseExtensionType):
            return None
        bits = t.bit_width
        return bits // 8 if bits in (8, 16, 32, 64) else None
    return None


class DirectTakePlan:
    """Per column the segment table over every fragment, and the deleted rows (dataset-wide
    physical numbers) to map live row offsets to physical ones."""

    def __init__(self, ctx, fragments, names):
        schema = ctx.schema
        self.schema = pa.schema([schema.field(n) for n in names], metadata=schema.metadata)
        self.columns = []
        for n in names:
            vb = _value_bytes(schema.field(n).type)
            if vb is None:
                raise _Ineligible(n)
            self.columns.append(_Column(n, schema.field(n).type, vb))
        spec = ScanSpec.build(schema, list(names))
        first = 0
        deleted = []
        paths = []
        self.fragment_first = {}  # fragment id -> its first row's dataset-wide physical number
        for pb in fragments:
            self.fragment_first[int(pb.id)] = first
            scan = FragmentScan(ctx, pb, spec)
            plan, nulls = scan.file_plan()
            if nulls:
                raise _Ineligible("column stored in no data file")
            by_name = {c.name: c for c in self.columns}
            for reader, proj, file_names in plan:
                paths.append(reader.path)
                _add_file(reader, proj, [by_name[n] for n in file_names], first)
            dv = scan.deletions
            if dv is not None and len(dv):
                deleted.append(dv.offsets.astype(np.int64) + first)
            first += scan.num_rows
        self.physical_rows = first
        paths = list(dict.fromkeys(paths))
        self.paths = ", ".join(paths[:3]) + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")
        try:
            for c in self.columns:
                c.finish(first)
        except ValueError as e:  # segments out of order, or not from the first row
            raise CorruptFileError(f"direct take: {e}", self.paths) from None
        d = np.concatenate(deleted) if deleted else np.zeros(0, np.int64)
        # live row l is physical l + #{j : d_j - j <= l}
        self.deleted_key = d - np.arange(d.size, dtype=np.int64)
        self.live_rows = first - d.size

    def physical(self, idx: np.ndarray) -> np.ndarray:
        if not self.deleted_key.size:
            return idx
        return idx + np.searchsorted(self.deleted_key, idx, side="right")

    def take(self, idx: np.ndarray) -> pa.Table:
        """Live rows ``idx`` (int64, any order, repeats allowed). An offset outside the live
        rows maps to a physical row outside the columns, which the job finds: a
        RowOutOfRangeError."""
        try:
            return self.take_physical(self.physical(idx))
        except RowOutOfRangeError:
            raise RowOutOfRangeError(f"row offset out of range for {self.live_rows} rows") from None

    def take_physical(self, rows: np.ndarray) -> pa.Table:
        """Rows by dataset-wide physical number (see :attr:`fragment_first`), deleted or not:
        the caller chose them (an index answer already masked by the deletions)."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        n = rows.size
        columns = self.columns
        outs = [pa.allocate_buffer(n * c.value_bytes) for c in columns]
        job = GatherJob([c.table for c in columns], rows,
                        [np.frombuffer(b, dtype=np.uint8) for b in outs], _shuffled(rows))
        threads = default_threads() if n * len(columns) >= PARALLEL_MIN_VALUES else 1
        helpers = [scan_pool(threads).submit(job.run) for _ in range(threads - 1)]
        job.run()
        # a helper that never woke up claimed nothing: only wait for units still being written
        if not job.finished(HELPER_SPIN_SECONDS):
            for h in helpers:
                h.result()
        try:
            job.check()
        except ValueError:
            raise RowOutOfRangeError(f"row out of range for {self.physical_rows} physical rows") \
                from None
        arrays = [pa.Array.from_buffers(c.type, n, [None, b]) for c, b in zip(columns, outs)]
        return pa.Table.from_arrays(arrays, schema=self.schema)


def _shuffled(rows: np.ndarray) -> bool:
    """Whether to read ``rows`` regrouped by where they lie (``_direct_take.group_rows``):
    when there are many and they do not start out ascending (a shuffled read). Measured on
    2M rows: a shuffled take of 100k rows 2-2.3x faster (2.2), 1.4x (2.0); of 1,000 rows
    ~1.2x. Sorted rows would only pay for the grouping."""
    if rows.size < REGROUP_MIN_ROWS:
        return False
    head = rows[:REGROUP_PROBE]
    return bool((head[1:] < head[:-1]).any())


def _add_file(reader, proj, cols, first: int) -> None:
    """Segments of ``cols`` (stored in data file ``reader`` under ``proj``), rows offset by
    ``first`` (the fragment's first dataset-wide physical row)."""
    mapped = reader.source.mapped()
    if mapped is None:
        raise _Ineligible("not a local file")
    readers = reader.field_readers(proj)
    for col, fr, field in zip(cols, readers, proj.storage_schema):
        if not field.type.equals(col.type):
            raise _Ineligible("stored as another type")
        column = _leaf_column(fr)
        for page in column.pages:
            if page.num_rows == 0:
                continue
            if reader.version == (2, 0):
                rs, offs, ws = _v20_page(page, col.value_bytes, mapped, reader.path)
            else:
                rs, offs, ws = _v21_page(page, col.value_bytes, mapped, reader)
            col.starts.append(rs + (first + page.row_start))
            col.ptrs.append(offs.astype(np.uint64) + np.uint64(mapped.address))
            col.widths.append(ws)
        col.keep.append(mapped)


def _leaf_column(field_reader):
    from ...encoding.v2_0.field_reader import PrimitiveFieldReader
    from ...encoding.v2_1.field_reader import StructuralFieldReader

    if isinstance(field_reader, PrimitiveFieldReader):
        return field_reader.column
    if isinstance(field_reader, StructuralFieldReader) and field_reader.single_leaf and \
            len(field_reader.leaves) == 1 and len(field_reader.leaves[0][1].path_types) == 1:
        return field_reader.leaves[0][1].column
    raise _Ineligible("not a primitive field")


def _v20_page(page, value_bytes: int, mapped: pa.Buffer, path):
    """A plain 2.0 page (no nulls, uncompressed): one flat segment."""
    from ...encoding.v2_0 import page_slicer
    from ...encoding.v2_0.field_reader import parse_page_encoding

    enc = parse_page_encoding(page, path)
    if enc.WhichOneof("array_encoding") not in ("nullable", "flat"):
        raise _Ineligible("page encoding")
    if enc.WhichOneof("array_encoding") == "nullable" and \
            enc.nullable.WhichOneof("nullability") != "no_nulls":
        raise _Ineligible("nulls")
    layout = page_slicer.row_layout(enc)
    if layout is None or len(layout) != 1 or layout[0][1] != value_bytes * 8:
        raise _Ineligible("page layout")
    index = layout[0][0]
    if index >= len(page.buffer_offsets):
        raise CorruptFileError(f"{page.describe()}: buffer {index} does not exist", path)
    off, size = int(page.buffer_offsets[index]), int(page.buffer_sizes[index])
    need = page.num_rows * value_bytes
    if off < 0 or size < need or off + need > mapped.size:
        raise CorruptFileError(f"{page.describe()}: {page.num_rows} values of {value_bytes} "
                               f"bytes need {need} bytes at {off}, the buffer holds {size} in "
                               f"a {mapped.size}-byte file", path)
    return (np.zeros(1, np.int64), np.array([off], np.int64), np.array([-1], np.int16))


def _v21_page(page, value_bytes: int, mapped: pa.Buffer, reader):
    """A plain 2.1/2.2 mini-block page: a segment per bit-packed block or flat chunk."""
    from ...encoding.column import PageSource
    from ...encoding.v2_1 import random_access
    from ...encoding.v2_1.layout import parse_layout

    path = reader.path
    layout = parse_layout(page, reader.version, path)
    if layout.WhichOneof("layout") != "mini_block_layout":
        raise _Ineligible("page layout")
    mb = layout.mini_block_layout
    if mb.repetition_index_depth or mb.HasField("rep_compression") or \
            mb.HasField("def_compression") or mb.HasField("dictionary"):
        raise _Ineligible("levels or dictionary")
    if random_access.meta_ranges(page, MINI_ROLES) is None:
        raise CorruptFileError(f"{page.describe()}: mini-block page without its buffers", path)
    if getattr(page, "v21_meta", None) is None:
        source = PageSource(reader.metadata.columns, reader.source.fetch_scattered, path,
                            reader.metadata.data_end)
        random_access.load_meta(_Leaf(path), source, [(page, None, "mini")])
    meta = page.v21_meta
    direct = random_access.direct_values(meta)
    if direct is None or direct[1] != value_bytes * 8:
        raise _Ineligible("values")
    bitpacked, bits = direct
    data = random_access.mapped_buffer(mapped, page, 1, path)
    chunks = meta.chunks
    try:
        rs, offs, ws = miniblock_segments(data, np.ascontiguousarray(chunks.offsets[:-1]),
                                          np.ascontiguousarray(chunks.sizes),
                                          np.ascontiguousarray(chunks.value_starts, np.int64),
                                          4 if chunks.wide else 2, bitpacked, bits)
    except ValueError as e:
        raise CorruptFileError(f"{page.describe()}: {e}", path) from None
    if int(chunks.value_starts[-1]) != page.num_rows:
        raise CorruptFileError(f"{page.describe()}: chunks hold {int(chunks.value_starts[-1])} "
                               f"rows, the page {page.num_rows}", path)
    return rs, offs + int(page.buffer_offsets[1]), ws


MINI_ROLES = (0, 1)


class _Leaf:
    """What ``random_access.load_meta`` needs of a leaf reader."""

    def __init__(self, path):
        self.path = path


def direct_plan(ctx, fragments, columns):
    """The plan of ``columns`` (a tuple of top-level names) over ``fragments`` for this view,
    made once (None when the general take is needed)."""
    if len(fragments) > MAX_FRAGMENTS or not ctx.uri or "://" in ctx.uri and \
            not ctx.uri.startswith("file://"):
        return None
    key = ("direct take", tuple(pb.id for pb in fragments), tuple(columns))

    def make():
        try:
            return (tuple(fragments), DirectTakePlan(ctx, fragments, columns))
        except _Ineligible:
            return (tuple(fragments), None)

    hit = cached_value(ctx, key, make)
    if len(hit[0]) == len(fragments) and all(a is b for a, b in zip(hit[0], fragments)):
        return hit[1]
    return make()[1]


__all__ = ["direct_plan", "DirectTakePlan", "LanceError"]
