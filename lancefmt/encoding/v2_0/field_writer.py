"""Field writers of Lance 2.0: turn a field's Arrow arrays into pages of its columns.

Columns are allocated in pre-order, one per field (packed structs keep their children in their
own column); ``column_allocation`` returns the (field id, column index) pairs in that order,
which is exactly what ``DataFile.fields`` / ``column_indices`` record.

Memory stays bounded: each column buffers incoming arrays until about ``page_buffer_bytes``
(8 MiB, as Lance) and then emits pages of at most ``max_page_bytes`` (32 MiB, Lance's 2.0
default); list offsets flush on the same budget, and a struct's header page (``struct{}``,
one page counting all rows) is emitted when the field finishes, as Lance does.
"""
from __future__ import annotations

import abc

from typing import Protocol

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError, UnsupportedFeatureError
from .._validity import copy_bitmap
from .page_encoder import (EncodedPage, PageOptions, offsets_view, encode_list_offsets,
                           encode_page, struct_header_page)

DEFAULT_PAGE_BUFFER_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024

BLOB_META_KEY = "lance-encoding:blob"
_BLOB_DESC = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])


class Sink(Protocol):
    """Where field writers put their output (the file writer implements it)."""

    def emit(self, column: int, page: EncodedPage) -> None:
        """Write a page's buffers and record the page in the column's metadata."""

    def write_buffer(self, data) -> tuple[int, int]:
        """Write raw bytes (64-byte aligned) outside any page; returns (position, size)."""

    def set_column_encoding(self, column: int, encoding) -> None:
        """Replace the column's ``ColumnEncoding`` (default: ``values``)."""


class FieldWriter(abc.ABC):
    @abc.abstractmethod
    def append(self, arr: pa.Array) -> None:
        """Implemented by each field kind."""

    def flush(self) -> None:
        """Emit every buffered row as pages (end of file)."""

    def finish(self) -> None:
        """Emit pages that can only be written at the end (struct headers)."""


class PrimitiveFieldWriter(FieldWriter):
    """One column whose pages are self-contained Arrow arrays (see page_encoder.py)."""

    def __init__(self, column: int, options: PageOptions, sink: Sink, page_buffer_bytes: int,
                 max_page_bytes: int):
        self.column = column
        self.options = options
        self.sink = sink
        self.page_buffer_bytes = page_buffer_bytes
        self.max_page_bytes = max_page_bytes
        self.pending: list[pa.Array] = []
        self.pending_bytes = 0

    def append(self, arr):
        # Empty arrays are kept too: a column that only ever saw empty input still gets one
        # zero-row page, as Lance writes it (e.g. the items of a list of empty lists).
        self.pending.append(arr)
        self.pending_bytes += arr.nbytes
        if self.pending_bytes >= self.page_buffer_bytes:
            self.flush()

    def flush(self):
        if not self.pending:
            return
        arr = self.pending[0] if len(self.pending) == 1 else pa.concat_arrays(self.pending)
        size = self.pending_bytes
        self.pending, self.pending_bytes = [], 0
        n = len(arr)
        if n == 0:
            self.sink.emit(self.column, encode_page(arr, self.options))
            return
        parts = min(max(1, -(-size // self.max_page_bytes)), n)
        step = -(-n // parts)
        for start in range(0, n, step):
            self.sink.emit(self.column, encode_page(arr.slice(start, min(step, n - start)),
                                               self.options))


class ListFieldWriter(FieldWriter):
    """An offsets column (``list{}`` pages) plus the item field's writer."""

    def __init__(self, column: int, items: FieldWriter, sink: Sink, page_buffer_bytes: int):
        self.column = column
        self.items = items
        self.sink = sink
        self.page_buffer_bytes = page_buffer_bytes
        self.chunks = []   # (relative offsets int64[n + 1], validity mask | None)
        self.rows = 0
        self.num_items = 0

    def append(self, arr):
        n = len(arr)
        if n == 0:
            return
        offsets = offsets_view(arr).astype(np.int64)
        first, last = int(offsets[0]), int(offsets[-1])
        mask = None
        if arr.null_count:
            bits = copy_bitmap(arr.buffers()[0], arr.offset, n)
            mask = np.unpackbits(bits, count=n, bitorder="little").astype(bool)
        self.chunks.append((offsets - first, mask))
        self.rows += n
        self.num_items += last - first
        self.items.append(arr.values.slice(first, last - first))
        if 8 * self.rows >= self.page_buffer_bytes:
            self._flush_offsets()

    def _flush_offsets(self):
        if not self.chunks:
            return
        offsets = np.empty(self.rows + 1, dtype=np.int64)
        offsets[0] = 0
        pos, base = 1, 0
        any_null = any(m is not None for _, m in self.chunks)
        mask = np.ones(self.rows, dtype=bool) if any_null else None
        for rel, m in self.chunks:
            k = len(rel) - 1
            offsets[pos:pos + k] = rel[1:] + base
            if m is not None:
                mask[pos - 1:pos - 1 + k] = m
            base += int(rel[-1])
            pos += k
        validity = np.packbits(mask, bitorder="little") if mask is not None else None
        self.sink.emit(self.column, encode_list_offsets(offsets, validity, self.num_items))
        self.chunks, self.rows, self.num_items = [], 0, 0

    def flush(self):
        self._flush_offsets()
        self.items.flush()

    def finish(self):
        self.items.finish()


class StructFieldWriter(FieldWriter):
    """A header column plus one writer per child; 2.0 cannot store null structs."""

    def __init__(self, column: int, children: list[FieldWriter], name: str, sink: Sink):
        self.column = column
        self.children = children
        self.name = name
        self.sink = sink
        self.rows = 0

    def append(self, arr):
        if arr.null_count:
            raise InvalidArgumentError(
                f"struct field {self.name!r} has {arr.null_count} null value(s), which Lance file "
                f"version 2.0 cannot store (struct validity needs 2.1+)")
        self.rows += len(arr)
        for writer, child in zip(self.children, arr.flatten()):
            writer.append(child)

    def flush(self):
        for c in self.children:
            c.flush()

    def finish(self):
        self.sink.emit(self.column, struct_header_page(self.rows))
        for c in self.children:
            c.finish()


class BlobFieldWriter(FieldWriter):
    """A blob column (field metadata ``lance-encoding:blob``): every non-empty value is written
    as its own 64-byte aligned buffer outside the pages, and the pages hold a packed struct of
    (position u64, size u64) per row -- (0, 0) for an empty value, (1, 0) for null -- with the
    column encoding ``blob{inner: values}``, as Lance 2.0 writes it."""

    def __init__(self, column: int, sink: Sink, page_buffer_bytes: int):
        from ..._proto import encodings_v2_0_pb2 as pb

        self.column = column
        self.sink = sink
        self.page_buffer_bytes = page_buffer_bytes
        self.pending: list[pa.Array] = []
        self.pending_bytes = 0
        sink.set_column_encoding(column, pb.ColumnEncoding(
            blob=pb.Blob(inner=pb.ColumnEncoding(values={}))))

    def append(self, arr):
        self.pending.append(arr)
        self.pending_bytes += arr.nbytes
        if self.pending_bytes >= self.page_buffer_bytes:
            self.flush()

    def flush(self):
        if not self.pending:
            return
        chunks, self.pending, self.pending_bytes = self.pending, [], 0
        positions, sizes = [], []
        for arr in chunks:
            n = len(arr)
            offsets = offsets_view(arr)
            data = arr.buffers()[2]
            valid = np.ones(n, dtype=bool) if not arr.null_count else np.unpackbits(
                copy_bitmap(arr.buffers()[0], arr.offset, n), count=n, bitorder="little").astype(bool)
            pos = np.zeros(n, dtype=np.uint64)
            size = np.zeros(n, dtype=np.uint64)
            for i in np.flatnonzero(valid & (offsets[1:] > offsets[:-1])):
                a, b = int(offsets[i]), int(offsets[i + 1])
                pos[i], size[i] = self.sink.write_buffer(data.slice(a, b - a))
            pos[~valid] = 1
            positions.append(pos)
            sizes.append(size)
        desc = pa.StructArray.from_arrays(
            [pa.array(np.concatenate(positions)), pa.array(np.concatenate(sizes))],
            fields=list(_BLOB_DESC))
        self.sink.emit(self.column, encode_page(desc))


def is_blob_field(node, dtype: pa.DataType) -> bool:
    """Lance writes binary fields marked ``lance-encoding:blob`` as blob columns."""
    from .page_decoder import is_binary_like

    return BLOB_META_KEY in node.field.metadata and is_binary_like(dtype)


def column_allocation(roots) -> list[tuple[int, int]]:
    """(field id, column index) in allocation order: pre-order, packed structs' children
    excluded."""
    out = []

    def visit(node):
        out.append((node.id, len(out)))
        if node.is_packed_struct():
            return
        for c in node.children:
            visit(c)

    for r in roots:
        visit(r)
    return out


def build_field_writer(node, arrow_field: pa.Field, column_of: dict, sink: Sink,
                       page_buffer_bytes: int = DEFAULT_PAGE_BUFFER_BYTES,
                       max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES) -> FieldWriter:
    """The writer of one field (a FieldNode) whose Arrow storage field is ``arrow_field``."""
    col = column_of[node.id]
    lt = node.logical_type
    dtype = arrow_field.type
    if lt == "struct" and not node.is_packed_struct():
        children = [build_field_writer(c, dtype.field(i), column_of, sink, page_buffer_bytes,
                                       max_page_bytes)
                    for i, c in enumerate(node.children)]
        return StructFieldWriter(col, children, node.name, sink)
    if lt in ("list", "list.struct", "large_list", "large_list.struct"):
        items = build_field_writer(node.children[0], dtype.value_field, column_of, sink,
                                   page_buffer_bytes, max_page_bytes)
        return ListFieldWriter(col, items, sink, page_buffer_bytes)
    if lt == "map":
        raise UnsupportedFeatureError(
            f"field {node.name!r}: the map type needs Lance file version 2.2 (pylance 14: Lance "
            f"v2.0 has no field encoding for maps)")
    if pa.types.is_fixed_size_list(dtype) and not _fixed_width_fsl(dtype):
        raise InvalidArgumentError(
            f"field {node.name!r}: a fixed-size list of {dtype.value_type} (2.0 stores "
            f"fixed-size lists of fixed-width values only)")
    if is_blob_field(node, dtype):
        return BlobFieldWriter(col, sink, page_buffer_bytes)
    options = PageOptions.from_metadata(node.field.metadata)
    return PrimitiveFieldWriter(col, options, sink, page_buffer_bytes, max_page_bytes)


def _fixed_width_fsl(dtype) -> bool:
    from .page_decoder import value_bits

    inner = dtype.value_type
    if pa.types.is_fixed_size_list(inner):
        return _fixed_width_fsl(inner)
    return value_bits(inner) is not None
