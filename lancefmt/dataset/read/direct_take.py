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

from ...errors import CorruptFileError, LanceError
from ._direct_take import SegmentTable, miniblock_segments
from ..core.reader_cache import cached_value
from .remote_take import RemoteTakePlan
from .scan import is_remote
from .take_plan import (
    MAX_FRAGMENTS, MAX_REMOTE_FRAGMENTS, Ineligible, TakePlan, leaf_column, v20_page_offset, v21_chunks,
)


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


class DirectTakePlan(TakePlan):
    """Per column the segment table over every fragment, addresses into the mapped files."""

    kind = "direct take"

    def begin(self) -> None:
        self.columns = [_Column(*c) for c in zip(self.names, self.types, self.value_bytes)]

    def file_pieces(self, reader, proj, columns, first):
        _add_file(reader, proj, [self.columns[i] for i in columns], first)

    def finish(self, pieces) -> None:
        for c in self.columns:
            c.finish(self.physical_rows)

    def take_physical(self, rows: np.ndarray) -> pa.Table:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        return self.gather([c.table for c in self.columns], rows)


def _add_file(reader, proj, cols, first: int) -> None:
    """Segments of ``cols`` (stored in data file ``reader`` under ``proj``), rows offset by
    ``first`` (the fragment's first dataset-wide physical row)."""
    mapped = reader.source.mapped()
    if mapped is None:
        raise Ineligible("not a local file")
    readers = reader.field_readers(proj)
    for col, fr, field in zip(cols, readers, proj.storage_schema):
        if not field.type.equals(col.type):
            raise Ineligible("stored as another type")
        column = leaf_column(fr)
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


def _v20_page(page, value_bytes: int, mapped: pa.Buffer, path):
    """A plain 2.0 page (no nulls, uncompressed): one flat segment."""
    off = v20_page_offset(page, value_bytes, mapped.size, path)
    return (np.zeros(1, np.int64), np.array([off], np.int64), np.array([-1], np.int16))


def _v21_page(page, value_bytes: int, mapped: pa.Buffer, reader):
    """A plain 2.1/2.2 mini-block page: a segment per bit-packed block or flat chunk."""
    from ...encoding.v2_1 import random_access

    path = reader.path
    chunks, (bitpacked, bits) = v21_chunks(page, value_bytes, reader)
    data = random_access.mapped_buffer(mapped, page, 1, path)
    try:
        rs, offs, ws = miniblock_segments(data, np.ascontiguousarray(chunks.offsets[:-1]),
                                          np.ascontiguousarray(chunks.sizes),
                                          np.ascontiguousarray(chunks.value_starts, np.int64),
                                          4 if chunks.wide else 2, bitpacked, bits)
    except ValueError as e:
        raise CorruptFileError(f"{page.describe()}: {e}", path) from None
    return rs, offs + int(page.buffer_offsets[1]), ws


def direct_plan(ctx, fragments, columns):
    """The plan of ``columns`` (a tuple of top-level names) over ``fragments`` for this view,
    made once (None when the general take is needed): a :class:`DirectTakePlan` over mapped
    local files, a :class:`~.remote_take.RemoteTakePlan` over object stores."""
    if len(fragments) > MAX_FRAGMENTS or not ctx.uri:
        return None
    remote = "://" in ctx.uri and not ctx.uri.startswith("file://") or is_remote(ctx)
    if remote and len(fragments) > MAX_REMOTE_FRAGMENTS:
        return None
    kind = RemoteTakePlan if remote else DirectTakePlan
    key = ("direct take", tuple(pb.id for pb in fragments), tuple(columns))

    def make():
        try:
            return (tuple(fragments), kind(ctx, fragments, columns))
        except Ineligible:
            return (tuple(fragments), None)

    hit = cached_value(ctx, key, make)
    if len(hit[0]) == len(fragments) and all(a is b for a, b in zip(hit[0], fragments)):
        return hit[1]
    return make()[1]


__all__ = ["direct_plan", "DirectTakePlan", "LanceError"]
