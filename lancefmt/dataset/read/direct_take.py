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
local files, or a string/binary column stored without nulls in 2.1/2.2 dictionary pages
(an indexed look-up's usual category column), and no row id or address is asked for;
anything else takes the general path. A dictionary column's segments hold its indices; the
plan decodes every page's dictionary once into one array, and a take maps each gathered index
to that array (``index + the page's first item``) and takes the strings from it. Every
segment is checked against its chunk and the mapped file when the plan is made, every index
against its page's dictionary when it is read.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, LanceError
from ...encoding.v2_1 import assemble
from ._direct_take import SegmentTable, miniblock_segments
from ..core.reader_cache import cached_value
from .remote_take import RemoteTakePlan
from .scan import is_remote
from .take_plan import (
    MAX_FRAGMENTS, MAX_REMOTE_FRAGMENTS, Ineligible, TakePlan, dictionary_target, leaf_column,
    v20_page_offset, v21_chunks,
)

INDEX_TYPES = {1: pa.uint8(), 2: pa.uint16(), 4: pa.uint32(), 8: pa.uint64()}


class _Column:
    """One column over all fragments: segment table and the mapped files it points into."""

    __slots__ = ("name", "type", "value_bytes", "starts", "ptrs", "widths", "keep", "table",
                 "dictionary", "items", "page_first", "item_base", "item_count", "where")

    def __init__(self, name, dtype, value_bytes):
        self.name = name
        self.type = dtype
        self.value_bytes = value_bytes
        self.keep = []  # the mapped buffers the addresses point into
        self.starts = []
        self.ptrs = []
        self.widths = []
        # dictionary pages (value_bytes 0 until the first page gives the index width): per
        # page its first row, its decoded dictionary
        self.dictionary = value_bytes == 0
        self.items, self.page_first, self.where = [], [], []

    def add_dictionary(self, row0: int, items: pa.Array, where: str) -> None:
        self.page_first.append(row0)
        self.items.append(items)
        self.where.append(where)

    def finish(self, total_rows: int):
        if self.dictionary:
            counts = np.array([len(a) for a in self.items], np.int64)
            self.item_count = counts
            self.item_base = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            self.page_first = np.array(self.page_first, np.int64)
            self.items = pa.concat_arrays(self.items) if self.items else pa.array([], self.type)
            if self.value_bytes == 0:  # no row at all
                self.value_bytes = 4
        starts = np.concatenate(self.starts) if self.starts else np.zeros(0, np.int64)
        self.starts = np.ascontiguousarray(np.append(starts, total_rows), dtype=np.int64)
        self.ptrs = np.ascontiguousarray(
            np.concatenate(self.ptrs) if self.ptrs else np.zeros(0, np.uint64), dtype=np.uint64)
        self.widths = np.ascontiguousarray(
            np.concatenate(self.widths) if self.widths else np.zeros(0, np.int16), dtype=np.int16)
        self.table = SegmentTable(self.starts, self.ptrs, self.widths, self.value_bytes)
        if self.table.first != 0:
            raise ValueError(f"column {self.name!r}: its pages start at row {self.table.first}")

    def decode(self, rows: np.ndarray, indices: pa.Array, path) -> pa.Array:
        """The strings of the gathered dictionary ``indices`` of ``rows`` (each index checked
        against the dictionary of its row's page)."""
        idx = indices.to_numpy().astype(np.int64, copy=False)
        page = np.searchsorted(self.page_first, rows, side="right") - 1
        bad = idx >= self.item_count[page]
        if bad.any():
            p = int(page[np.argmax(bad)])
            raise CorruptFileError(f"{self.where[p]}: dictionary index {int(idx[bad].max())} of "
                                   f"{int(self.item_count[p])} items", path)
        return self.items.take(pa.array(idx + self.item_base[page]))


class DirectTakePlan(TakePlan):
    """Per column the segment table over every fragment, addresses into the mapped files."""

    kind = "direct take"
    dictionaries = True

    def begin(self) -> None:
        self.columns = [_Column(*c) for c in zip(self.names, self.types, self.value_bytes)]

    def file_pieces(self, reader, proj, columns, first):
        _add_file(reader, proj, [self.columns[i] for i in columns], first)

    def finish(self, pieces) -> None:
        for i, c in enumerate(self.columns):
            c.finish(self.physical_rows)
            if c.dictionary:
                self.value_bytes[i] = c.value_bytes
                self.gather_types[i] = INDEX_TYPES[c.value_bytes]

    def take_physical(self, rows: np.ndarray) -> pa.Table:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        arrays = self.gather_arrays([c.table for c in self.columns], rows)
        for i, c in enumerate(self.columns):
            if c.dictionary:
                arrays[i] = c.decode(rows, arrays[i], self.paths)
        return pa.Table.from_arrays(arrays, schema=self.schema)


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
            if col.dictionary:
                if reader.version == (2, 0):
                    raise Ineligible("2.0 dictionary")
                rs, offs, ws = _v21_dictionary_page(page, col, mapped, reader, first)
            elif reader.version == (2, 0):
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


def _v21_page(page, value_bytes: int, mapped: pa.Buffer, reader, found=None):
    """A plain 2.1/2.2 mini-block page: a segment per bit-packed block or flat chunk
    (``found``: its chunk table and value layout, when the caller has them)."""
    from ...encoding.v2_1 import random_access

    path = reader.path
    chunks, (bitpacked, bits) = found or v21_chunks(page, value_bytes, reader)
    data = random_access.mapped_buffer(mapped, page, 1, path)
    try:
        rs, offs, ws = miniblock_segments(data, np.ascontiguousarray(chunks.offsets[:-1]),
                                          np.ascontiguousarray(chunks.sizes),
                                          np.ascontiguousarray(chunks.value_starts, np.int64),
                                          4 if chunks.wide else 2, bitpacked, bits)
    except ValueError as e:
        raise CorruptFileError(f"{page.describe()}: {e}", path) from None
    return rs, offs + int(page.buffer_offsets[1]), ws


def _v21_dictionary_page(page, col: _Column, mapped: pa.Buffer, reader, first: int):
    """A dictionary mini-block page of a string column: the segments of its indices (all
    pages of a column must share one index width) and its dictionary, decoded once."""
    chunks, (bitpacked, bits) = v21_chunks(page, None, reader, dictionary=True)
    vb = bits // 8
    if bits not in (8, 16, 32, 64) or col.value_bytes not in (0, vb):
        raise Ineligible("dictionary index width")
    col.value_bytes = vb
    meta = page.v21_meta
    where = page.describe()
    items = assemble.to_arrow(meta.dictionary, col.type, None, where, reader.path)
    if len(items) != int(meta.mb.num_dictionary_items):
        raise CorruptFileError(f"{where}: {len(items)} dictionary items decoded, the page says "
                               f"{int(meta.mb.num_dictionary_items)}", reader.path)
    col.add_dictionary(first + page.row_start, items, where)
    return _v21_page(page, vb, mapped, reader, (chunks, (bitpacked, bits)))


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
