"""What the two planned takes share (:mod:`.direct_take` from mapped local files,
:mod:`.remote_take` from object stores): which columns qualify, the walk over a view's
fragments made once per column set, live -> physical row numbers, and the gather job.

A plan exists only when every wanted column is a fixed-width number or temporal stored
without nulls in plain 2.0 pages or plain 2.1/2.2 mini-block pages (bit-packed or flat), and
no row id or address is asked for; the direct take also reads strings and binaries stored as
dictionary mini-block pages (plain indices, each page's dictionary decoded once by the plan).
Anything else takes the general path. The walk gives each
fragment's data files to the plan's ``file_pieces`` with the fragment's first dataset-wide
physical row, so a take never looks at a fragment, file or page again: it maps its offsets
in one vectorised pass and hands one :class:`~._direct_take.GatherJob` all its columns.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, RowOutOfRangeError
from ._direct_take import GatherJob
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
# ... and views in an object store with more than this many (the plan's first take opens every
# file and loads the chunk tables of 2.1/2.2 pages: rounds of requests a small take of the
# general path would not send).
MAX_REMOTE_FRAGMENTS = 512
# The 2.1/2.2 chunk-table roles of a mini-block page: its metadata and its value buffer.
MINI_ROLES = (0, 1)


class Ineligible(Exception):
    """This dataset or these columns need the general take."""


def value_bytes(t: pa.DataType):
    """Bytes per value of a type the planned takes read, else None."""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t):
        if isinstance(t, pa.BaseExtensionType):
            return None
        bits = t.bit_width
        return bits // 8 if bits in (8, 16, 32, 64) else None
    return None


def dictionary_target(t: pa.DataType) -> bool:
    """Whether ``t`` is a string or binary type the direct take reads from dictionary pages."""
    return not isinstance(t, pa.BaseExtensionType) and (
        pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or
        pa.types.is_large_binary(t))


def leaf_column(field_reader):
    """The one column a primitive field reads (else Ineligible)."""
    from ...encoding.v2_0.field_reader import PrimitiveFieldReader
    from ...encoding.v2_1.field_reader import StructuralFieldReader

    if isinstance(field_reader, PrimitiveFieldReader):
        return field_reader.column
    if isinstance(field_reader, StructuralFieldReader) and field_reader.single_leaf and \
            len(field_reader.leaves) == 1 and len(field_reader.leaves[0][1].path_types) == 1:
        return field_reader.leaves[0][1].column
    raise Ineligible("not a primitive field")


def v20_page_offset(page, vb: int, file_size: int, path) -> int:
    """Where the values of a plain 2.0 page (no nulls, uncompressed) start in its file,
    checked against the ``file_size`` bytes of the file."""
    from ...encoding.v2_0 import page_slicer
    from ...encoding.v2_0.field_reader import parse_page_encoding

    enc = parse_page_encoding(page, path)
    if enc.WhichOneof("array_encoding") not in ("nullable", "flat"):
        raise Ineligible("page encoding")
    if enc.WhichOneof("array_encoding") == "nullable" and \
            enc.nullable.WhichOneof("nullability") != "no_nulls":
        raise Ineligible("nulls")
    layout = page_slicer.row_layout(enc)
    if layout is None or len(layout) != 1 or layout[0][1] != vb * 8:
        raise Ineligible("page layout")
    index = layout[0][0]
    if index >= len(page.buffer_offsets):
        raise CorruptFileError(f"{page.describe()}: buffer {index} does not exist", path)
    off, size = int(page.buffer_offsets[index]), int(page.buffer_sizes[index])
    need = page.num_rows * vb
    if off < 0 or size < need or off + need > file_size:
        raise CorruptFileError(f"{page.describe()}: {page.num_rows} values of {vb} "
                               f"bytes need {need} bytes at {off}, the buffer holds {size} in "
                               f"a {file_size}-byte file", path)
    return off


class _Leaf:
    """What ``random_access.load_meta`` needs of a leaf reader."""

    def __init__(self, path):
        self.path = path


def v21_chunks(page, vb: int | None, reader, dictionary: bool = False):
    """The chunk table of a plain 2.1/2.2 mini-block page (loaded through the reader's
    source when not yet known) and ``(bitpacked, bits)`` of its values. With ``dictionary``
    the page must be a dictionary page and the values are its indices (``vb`` None: any
    whole-byte width); its decoded dictionary is ``page.v21_meta.dictionary``."""
    from ...encoding.column import PageSource
    from ...encoding.v2_1 import random_access
    from ...encoding.v2_1.layout import parse_layout

    path = reader.path
    layout = parse_layout(page, reader.version, path)
    if layout.WhichOneof("layout") != "mini_block_layout":
        raise Ineligible("page layout")
    mb = layout.mini_block_layout
    if mb.repetition_index_depth or mb.HasField("rep_compression") or \
            mb.HasField("def_compression") or mb.HasField("dictionary") != dictionary:
        raise Ineligible("levels or dictionary")
    if random_access.meta_ranges(page, MINI_ROLES) is None:
        raise CorruptFileError(f"{page.describe()}: mini-block page without its buffers", path)
    if getattr(page, "v21_meta", None) is None:
        source = PageSource(reader.metadata.columns, reader.source.fetch_scattered, path,
                            reader.metadata.data_end)
        random_access.load_meta(_Leaf(path), source, [(page, None, "mini")])
    meta = page.v21_meta
    direct = random_access.direct_values(meta, dictionary)
    if direct is None or (vb is not None and direct[1] != vb * 8):
        raise Ineligible("values")
    chunks = meta.chunks
    if int(chunks.value_starts[-1]) != page.num_rows:
        raise CorruptFileError(f"{page.describe()}: chunks hold {int(chunks.value_starts[-1])} "
                               f"rows, the page {page.num_rows}", path)
    return chunks, direct


def shuffled(rows: np.ndarray) -> bool:
    """Whether to read ``rows`` regrouped by where they lie (``_direct_take.group_rows``):
    when there are many and they do not start out ascending (a shuffled read). Measured on
    2M rows: a shuffled take of 100k rows 2-2.3x faster (2.2), 1.4x (2.0); of 1,000 rows
    ~1.2x. Sorted rows would only pay for the grouping."""
    if rows.size < REGROUP_MIN_ROWS:
        return False
    head = rows[:REGROUP_PROBE]
    return bool((head[1:] < head[:-1]).any())


class TakePlan:
    """A view's fragments walked once for a column set: per column what ``file_pieces``
    found in each data file, the deleted rows (dataset-wide physical numbers) to map live
    row offsets to physical ones, and each fragment's first physical row."""

    def __init__(self, ctx, fragments, names):
        schema = ctx.schema
        self.schema = pa.schema([schema.field(n) for n in names], metadata=schema.metadata)
        self.types, self.value_bytes = [], []
        for n in names:
            vb = value_bytes(schema.field(n).type)
            if vb is None:
                if not (self.dictionaries and dictionary_target(schema.field(n).type)):
                    raise Ineligible(n)
                vb = 0  # the width of its dictionary indices, found in the pages
            self.types.append(schema.field(n).type)
            self.value_bytes.append(vb)
        self.gather_types = list(self.types)  # what the gather writes (indices for strings)
        self.names = list(names)
        self.begin()
        index = {n: i for i, n in enumerate(names)}
        spec = ScanSpec.build(schema, list(names))
        firsts = np.concatenate([[0], np.cumsum([pb.physical_rows for pb in fragments])])
        self.fragment_first = {int(pb.id): int(f) for pb, f in zip(fragments, firsts)}
        self.physical_rows = int(firsts[-1])

        def fragment(pb, first):
            scan = FragmentScan(ctx, pb, spec)
            plan, nulls = scan.file_plan()
            if nulls:
                raise Ineligible("column stored in no data file")
            pieces = [self.file_pieces(reader, proj, [index[n] for n in file_names], first)
                      for reader, proj, file_names in plan]
            dv = scan.deletions
            deleted = dv.offsets.astype(np.int64) + first if dv is not None and len(dv) else None
            return [reader.path for reader, _, _ in plan], pieces, deleted

        found = self.walk([lambda pb=pb, f=int(f): fragment(pb, f)
                           for pb, f in zip(fragments, firsts[:-1])])
        paths = list(dict.fromkeys(p for ps, _, _ in found for p in ps))
        self.paths = ", ".join(paths[:3]) + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")
        try:
            self.finish([p for _, pieces, _ in found for p in pieces])
        except ValueError as e:  # segments out of order, or not from the first row
            raise CorruptFileError(f"{self.kind}: {e}", self.paths) from None
        deleted = [d for _, _, d in found if d is not None]
        d = np.concatenate(deleted) if deleted else np.zeros(0, np.int64)
        # live row l is physical l + #{j : d_j - j <= l}
        self.deleted_key = d - np.arange(d.size, dtype=np.int64)
        self.live_rows = self.physical_rows - d.size

    kind = "take"
    dictionaries = False  # whether string columns on dictionary pages qualify

    def walk(self, units) -> list:
        """Each fragment's unit, in order (the remote plan runs them in rounds of reads)."""
        return [u() for u in units]

    def begin(self) -> None:
        """Before the walk: the columns are known (names, types, value bytes)."""

    def file_pieces(self, reader, proj, columns, first):
        """What one data file holds of ``columns`` (indices), rows offset by ``first``."""
        raise NotImplementedError

    def finish(self, pieces) -> None:
        """Combine every file's pieces, in fragment order (ValueError when inconsistent)."""
        raise NotImplementedError

    def physical(self, idx: np.ndarray) -> np.ndarray:
        if not self.deleted_key.size:
            return idx
        return idx + np.searchsorted(self.deleted_key, idx, side="right")

    def take(self, idx: np.ndarray) -> pa.Table:
        """Live rows ``idx`` (int64, any order, repeats allowed). An offset outside the live
        rows maps to a physical row outside the columns: a RowOutOfRangeError."""
        try:
            return self.take_physical(self.physical(idx))
        except RowOutOfRangeError:
            raise RowOutOfRangeError(f"row offset out of range for {self.live_rows} rows") from None

    def take_physical(self, rows: np.ndarray) -> pa.Table:
        """Rows by dataset-wide physical number (see :attr:`fragment_first`), deleted or not:
        the caller chose them (an index answer already masked by the deletions)."""
        raise NotImplementedError

    def gather(self, tables, rows: np.ndarray) -> pa.Table:
        """``rows`` of every column (a SegmentTable each) as a table of the plan's schema."""
        return pa.Table.from_arrays(self.gather_arrays(tables, rows), schema=self.schema)

    def gather_arrays(self, tables, rows: np.ndarray) -> list:
        """``rows`` of every column (a SegmentTable each) into new Arrow arrays of
        :attr:`gather_types`, by one job shared with pool threads when it is big."""
        n = rows.size
        outs = [pa.allocate_buffer(n * vb) for vb in self.value_bytes]
        job = GatherJob(list(tables), rows, [np.frombuffer(b, dtype=np.uint8) for b in outs],
                        shuffled(rows))
        threads = default_threads() if n * len(outs) >= PARALLEL_MIN_VALUES else 1
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
        return [pa.Array.from_buffers(t, n, [None, b]) for t, b in zip(self.gather_types, outs)]
