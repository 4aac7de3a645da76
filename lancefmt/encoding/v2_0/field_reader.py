"""Field readers of Lance 2.0: assemble Arrow arrays of a field from its columns' pages.

In 2.0 every field owns a column (pre-order), and structure lives in dedicated columns:

* a *primitive* field (numbers, strings, FSL, dictionaries, packed structs...) is one column
  whose pages decode straight to Arrow (page_decoder.py);
* a *struct* has a header column (``struct{}`` pages, no buffers) and its children read the
  same rows;
* a *list* has an offsets column (``list{}`` pages); page ``p`` covers the items
  ``[sum(num_items of earlier pages), + num_items)`` of the item field, whose own pages have
  unrelated boundaries.

Every reader answers ``read(source, start, stop) -> list[pa.Array]``: chunks that together hold
rows ``[start, stop)``, decoding only the pages that overlap the range (a decoded page is
cached in the :class:`~lancefmt.encoding.column.PageSource`, so a streaming scan decodes each
page once). ``pages_for`` lists the pages a range needs without list indirection, so the
caller can fetch all of them in one coalesced I/O round.
"""
from __future__ import annotations

import abc

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from ..._proto import encodings_v2_0_pb2 as pb
from ...errors import CorruptFileError, UnsupportedFeatureError
from .._utf8 import first_invalid_utf8_row
from .._validity import copy_bitmap
from ..column import ColumnInfo, PageInfo, PageSource
from ..take import span_positions, spans, take_chunks
from . import page_slicer
from .page_decoder import PageDecoder, is_binary_like, is_large_binary_like

ARRAY_ENCODING_URL = "/lance.encodings.ArrayEncoding"
_INT32_MAX = 2**31 - 1
_BINARY_TYPES = ("string", "binary", "large_string", "large_binary", "json")


def parse_page_encoding(page: PageInfo, path: str | None) -> pb.ArrayEncoding:
    """The ArrayEncoding of a 2.0 page (other page layouts are refused by name); parsed once
    and kept on the (immutable) page description."""
    enc = page.parsed
    if enc is not None:
        return enc
    if page.type_url != ARRAY_ENCODING_URL:
        raise UnsupportedFeatureError(
            f"{page.describe()}: page encoding {page.type_url!r} in a 2.0 file", path)
    enc = pb.ArrayEncoding()
    try:
        enc.ParseFromString(page.encoding)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise CorruptFileError(f"{page.describe()}: undecodable ArrayEncoding ({e})", path) from None
    page.parsed = enc
    return enc


class FieldReader(abc.ABC):
    """Base: a field's rows from one or more columns."""

    dtype: pa.DataType
    num_rows: int

    @abc.abstractmethod
    def pages_for(self, start: int, stop: int) -> list[PageInfo]:
        """Implemented by each field kind."""

    @abc.abstractmethod
    def read(self, source: PageSource, start: int, stop: int) -> list[pa.Array]:
        """Implemented by each field kind."""

    def evict_before(self, source: PageSource, row: int) -> None:
        """Drop cached pages that end at or before ``row`` (streaming scans)."""

    def take(self, source: PageSource, rows: np.ndarray) -> list[pa.Array]:
        """Chunks holding exactly ``rows`` (sorted, unique), in order. By default the ranges
        around the rows are read (whole pages decoded) and the rows taken from them."""
        starts, stops = spans(rows)
        source.prefetch([p for s, e in zip(starts, stops) for p in self.pages_for(int(s), int(e))])
        chunks = [c for s, e in zip(starts, stops) for c in self.read(source, int(s), int(e))]
        if int((stops - starts).sum()) == rows.size:
            return chunks
        return take_chunks(chunks, self.dtype, span_positions(starts, stops, rows)).chunks


class PrimitiveFieldReader(FieldReader):
    """A field stored in one column whose pages decode directly to Arrow arrays."""

    def __init__(self, column: ColumnInfo, dtype: pa.DataType, path: str | None):
        self.column = column
        self.dtype = dtype
        self.path = path
        self.num_rows = column.num_rows

    def pages_for(self, start, stop):
        return [self.column.pages[i] for i in self.column.page_range(start, stop)]

    def _decode(self, page: PageInfo, buffers) -> pa.Array:
        enc = parse_page_encoding(page, self.path)
        decoder = PageDecoder(buffers, self.path, page.describe())
        arr = decoder.decode(enc, page.num_rows, self.dtype)
        if len(arr) != page.num_rows:
            raise CorruptFileError(f"{page.describe()}: decoded {len(arr)} rows, page has "
                                   f"{page.num_rows}", self.path)
        return arr

    def read(self, source, start, stop):
        out = []
        for i in self.column.page_range(start, stop):
            page = self.column.pages[i]
            arr = source.decoded(page, self._decode)
            lo = max(start, page.row_start) - page.row_start
            hi = min(stop, page.row_stop) - page.row_start
            out.append(arr if lo == 0 and hi == len(arr) else arr.slice(lo, hi - lo))
        return out

    def evict_before(self, source, row):
        pages = self.column.page_range(row, row + 1)
        first = pages.start if len(pages) else len(self.column.pages)
        source.evict_before(self.column.index, first)

    def take(self, source, rows):
        col = self.column
        page_of = np.searchsorted(col.page_starts, rows, side="right") - 1
        groups = np.split(np.arange(rows.size), np.flatnonzero(np.diff(page_of)) + 1)
        plans, ranges, full = [], [], []
        for g in groups:
            page = col.pages[int(page_of[g[0]])]
            local = rows[g] - page.row_start
            plan = self._partial_plan(source, page, local)
            if plan is None:
                full.append(page)
            elif source.mapped is None:  # a mapped file is gathered from directly
                plan["first"] = len(ranges)
                for gather in plan["buffers"]:
                    ranges.extend(gather.ranges)
            plans.append((page, local, plan))
        fetched = source.fetch(ranges)
        source.prefetch(full)
        out = []
        for page, local, plan in plans:
            if plan is None:
                arr = source.decoded(page, self._decode)
                if local.size == len(arr):
                    out.append(arr)
                else:
                    out.extend(take_chunks([arr], self.dtype, pa.array(local)).chunks)
                continue
            buffers = [None] * len(page.buffer_offsets)
            if source.mapped is not None:
                for gather in plan["buffers"]:
                    buffers[gather.index] = gather.gather_mapped(source.mapped)
            else:
                pos = plan["first"]
                for gather in plan["buffers"]:
                    n = len(gather.ranges)
                    buffers[gather.index] = gather.finish(fetched[pos:pos + n])
                    pos += n
            decoder = PageDecoder(buffers, self.path, page.describe())
            out.append(decoder.decode(plan["encoding"], local.size, self.dtype))
        return out

    def _partial_plan(self, source, page: PageInfo, local: np.ndarray):
        """How to read just ``local`` (sorted, distinct) rows of a plain fixed-width ``page``
        (only the bytes of those rows), or None to decode the whole page."""
        if source.is_decoded(page) or local.size == page.num_rows:
            return None
        enc = parse_page_encoding(page, self.path)
        layout = page.row_layout
        if layout is None:
            layout = page_slicer.row_layout(enc)
            if layout is None or any(i >= len(page.buffer_offsets) for i, _ in layout):
                layout = False
            page.row_layout = layout
        if layout is False:
            return None
        return {"encoding": enc,
                "buffers": page_slicer.gather_plan(page.buffer_offsets, page.buffer_sizes,
                                                   layout, local, self.path)}


class StructFieldReader(FieldReader):
    """A (non-packed) struct: children read the same rows; chunks re-cut to common bounds."""

    def __init__(self, header: ColumnInfo, children: list[FieldReader], dtype: pa.StructType,
                 path: str | None):
        self.header = header
        self.children = children
        self.dtype = dtype
        self.path = path
        self.num_rows = header.num_rows
        for i, child in enumerate(children):
            if child.num_rows != self.num_rows:
                raise CorruptFileError(
                    f"struct column {header.index} has {self.num_rows} rows but its child "
                    f"{dtype.field(i).name!r} has {child.num_rows}", path)

    def pages_for(self, start, stop):
        return [p for c in self.children for p in c.pages_for(start, stop)]

    def read(self, source, start, stop):
        fields = list(self.dtype)
        if not self.children:
            n = stop - start
            return [pa.Array.from_buffers(self.dtype, n, [None], children=[])] if n > 0 else []
        parts = [c.read(source, start, stop) for c in self.children]
        return zip_chunks(parts, lambda arrays: pa.StructArray.from_arrays(arrays, fields=fields))

    def evict_before(self, source, row):
        for c in self.children:
            c.evict_before(source, row)

    def take(self, source, rows):
        if not self.children:
            return super().take(source, rows)
        fields = list(self.dtype)
        parts = [c.take(source, rows) for c in self.children]
        return zip_chunks(parts, lambda arrays: pa.StructArray.from_arrays(arrays, fields=fields))


_BLOB_DESC = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])


class BlobFieldReader(FieldReader):
    """A 2.0 blob column: pages of (position, size) per row; the bytes live elsewhere in the
    file. (0, 0) is an empty value and (p != 0, 0) a null."""

    def __init__(self, column: ColumnInfo, dtype: pa.DataType, path: str | None):
        self.column = column
        self.dtype = dtype
        self.path = path
        self.num_rows = column.num_rows

    def pages_for(self, start, stop):
        return [self.column.pages[i] for i in self.column.page_range(start, stop)]

    def _decode(self, page: PageInfo, buffers):
        enc = parse_page_encoding(page, self.path)
        desc = PageDecoder(buffers, self.path, page.describe()).decode(enc, page.num_rows,
                                                                       _BLOB_DESC)
        positions = desc.field(0).to_numpy(zero_copy_only=False).astype(np.uint64)
        sizes = desc.field(1).to_numpy(zero_copy_only=False).astype(np.uint64)
        return positions, sizes

    def read(self, source, start, stop):
        out = []
        for i in self.column.page_range(start, stop):
            page = self.column.pages[i]
            positions, sizes = source.decoded(page, self._decode)
            lo = max(start, page.row_start) - page.row_start
            hi = min(stop, page.row_stop) - page.row_start
            out.append(self._values(source, page, positions[lo:hi], sizes[lo:hi]))
        return out

    def _values(self, source, page, positions, sizes) -> pa.Array:
        n = positions.size
        valid = ~((sizes == 0) & (positions != 0))
        stored = np.flatnonzero(sizes > 0)
        limit = source.data_end
        if stored.size and limit is not None and (
                np.any(positions[stored] > limit) or np.any(sizes[stored] > limit - positions[stored])):
            raise CorruptFileError(f"{page.describe()}: a blob lies outside the data region",
                                   self.path)
        bufs = source.fetch([(int(positions[k]), int(sizes[k])) for k in stored])
        data = (np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in bufs]) if bufs
                else np.zeros(0, dtype=np.uint8))
        large = is_large_binary_like(self.dtype)
        if not large and data.size > _INT32_MAX:
            raise UnsupportedFeatureError(f"{page.describe()}: blobs over 2 GiB in a 32-bit "
                                          f"binary column", self.path)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes.astype(np.int64), out=offsets[1:])
        validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.Array.from_buffers(
            self.dtype, n, [validity, pa.py_buffer(offsets if large else offsets.astype(np.int32)),
                            pa.py_buffer(data)])

    def evict_before(self, source, row):
        pages = self.column.page_range(row, row + 1)
        first = pages.start if len(pages) else len(self.column.pages)
        source.evict_before(self.column.index, first)


def zip_chunks(parts: list[list[pa.Array]], combine) -> list[pa.Array]:
    """Re-cut several chunk lists covering the same rows at their common boundaries (zero
    copy slices) and ``combine`` the aligned pieces."""
    bounds = set()
    for chunks in parts:
        pos = 0
        for c in chunks:
            pos += len(c)
            bounds.add(pos)
    total = sum(len(c) for c in parts[0])
    edges = [0] + sorted(b for b in bounds if 0 < b <= total)
    out = []
    cursors = [[0, 0] for _ in parts]  # (chunk index, offset inside it)
    for lo, hi in zip(edges, edges[1:]):
        n = hi - lo
        pieces = []
        for chunks, cur in zip(parts, cursors):
            ci, off = cur
            while len(chunks[ci]) == off:
                ci, off = ci + 1, 0
            c = chunks[ci]
            pieces.append(c if off == 0 and n == len(c) else c.slice(off, n))
            cur[0], cur[1] = ci, off + n
        out.append(combine(pieces))
    return out


class ListFieldReader(FieldReader):
    """A list / large list: an offsets column plus the item field's reader."""

    def __init__(self, column: ColumnInfo, items: FieldReader, dtype, path: str | None):
        self.column = column
        self.items = items
        self.dtype = dtype
        self.path = path
        self.num_rows = column.num_rows
        self.large = pa.types.is_large_list(dtype)
        self._item_starts = None

    def item_starts(self) -> np.ndarray:
        """First item of each offsets page (prefix sums of ``num_items``), checked once and
        cached on the column (metadata is immutable, so readers of one file share it)."""
        if self._item_starts is None:
            starts = getattr(self.column, "list_item_starts", None)
            if starts is None:
                starts = self._compute_item_starts()
                self.column.list_item_starts = starts
            if int(starts[-1]) != self.items.num_rows:
                raise CorruptFileError(
                    f"list column {self.column.index} refers to {int(starts[-1])} items, the item "
                    f"column has {self.items.num_rows}", self.path)
            self._item_starts = starts
        return self._item_starts

    def _compute_item_starts(self) -> np.ndarray:
        counts = []
        for page in self.column.pages:
            enc = parse_page_encoding(page, self.path)
            kind = enc.WhichOneof("array_encoding")
            if kind == "list":
                counts.append(enc.list.num_items)
            elif page.num_rows == 0:
                counts.append(0)
            else:
                raise UnsupportedFeatureError(
                    f"{page.describe()}: list page encoded as {kind!r}", self.path)
        starts = np.zeros(len(counts) + 1, dtype=np.int64)
        if counts:
            total = sum(counts)
            if total > 2**62:
                raise CorruptFileError(f"list column {self.column.index} claims {total} items",
                                       self.path)
            np.cumsum(counts, out=starts[1:])
        return starts

    def pages_for(self, start, stop):
        return [self.column.pages[i] for i in self.column.page_range(start, stop)]

    def _decode(self, page: PageInfo, buffers):
        enc = parse_page_encoding(page, self.path)
        decoder = PageDecoder(buffers, self.path, page.describe())
        return decoder.list_offsets(enc, page.num_rows)

    def read(self, source, start, stop):
        starts = self.item_starts()
        pieces = []  # (offsets slice, validity, a, b, first item, last item)
        for i in self.column.page_range(start, stop):
            page = self.column.pages[i]
            offsets, validity, _num_items = source.decoded(page, self._decode)
            a = max(start, page.row_start) - page.row_start
            b = min(stop, page.row_stop) - page.row_start
            base = int(starts[i])
            pieces.append((offsets, validity, a, b, base + int(offsets[a]), base + int(offsets[b])))
        if not pieces:
            return []
        lo, hi = pieces[0][4], pieces[-1][5]
        source.prefetch(self.items.pages_for(lo, hi))
        out = []
        for offsets, validity, a, b, first, last in pieces:
            item_chunks = self.items.read(source, first, last)
            if not item_chunks:
                items = pa.array([], type=self.dtype.value_type)
            elif len(item_chunks) == 1:
                items = item_chunks[0]
            else:
                items = pa.concat_arrays(item_chunks)
            rel = offsets[a:b + 1] - offsets[a]
            if not self.large:
                if rel[-1] > _INT32_MAX:
                    raise UnsupportedFeatureError(
                        f"column {self.column.index}: a list chunk with more than 2^31 items "
                        f"(read it as large_list)", self.path)
                rel = rel.astype(np.int32)
            n = b - a
            vbuf = None
            if validity is not None:
                vbuf = pa.py_buffer(validity if a == 0 else copy_bitmap(validity, a, n))
            out.append(pa.Array.from_buffers(self.dtype, n, [vbuf, pa.py_buffer(rel)],
                                             children=[items]))
        return out

    def evict_before(self, source, row):
        pages = self.column.page_range(row, row + 1)
        first = pages.start if len(pages) else len(self.column.pages)
        source.evict_before(self.column.index, first)
        if first < len(self.column.pages):
            page = self.column.pages[first]
            offsets, _v, _n = source.decoded(page, self._decode)
            item_row = int(self.item_starts()[first]) + int(offsets[row - page.row_start])
        else:
            item_row = self.items.num_rows
        self.items.evict_before(source, item_row)


class ListOfBytesFieldReader(FieldReader):
    """Strings and binaries as pylance 0.13-era 2.0 files store them: a ``list<uint8>`` (an
    offsets column, then a column of the bytes), read as Lance's decoder reads them -- the
    list's offsets, validity and bytes viewed as the binary array (strings checked UTF-8)."""

    def __init__(self, lists: "ListFieldReader", dtype, path: str | None):
        self.lists = lists
        self.dtype = dtype
        self.path = path
        self.num_rows = lists.num_rows
        self.column = lists.column

    def pages_for(self, start, stop):
        return self.lists.pages_for(start, stop)

    def _as_binary(self, chunk: pa.Array) -> pa.Array:
        values = chunk.values
        data = values.buffers()[1]
        data = pa.py_buffer(b"") if data is None else data.slice(values.offset, len(values))
        width = 8 if pa.types.is_large_list(chunk.type) else 4
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if width == 8 else np.int32)
        offsets = offsets[chunk.offset:chunk.offset + len(chunk) + 1]
        if pa.types.is_string(self.dtype) or pa.types.is_large_string(self.dtype):
            bad = first_invalid_utf8_row(data, offsets)
            if bad >= 0:
                raise CorruptFileError(f"column {self.column.index}: string of row {bad} is not "
                                       f"valid UTF-8", self.path)
        return pa.Array.from_buffers(self.dtype, len(chunk),
                                     [chunk.buffers()[0], chunk.buffers()[1], data],
                                     offset=chunk.offset)

    def read(self, source, start, stop):
        return [self._as_binary(c) for c in self.lists.read(source, start, stop)]

    def evict_before(self, source, row):
        self.lists.evict_before(source, row)


def is_list_of_bytes(columns, index: int, dtype, path) -> bool:
    """Whether column ``index`` holds a string/binary field the 0.13-era way (its first page
    is a list: the bytes are in the next column)."""
    if not is_binary_like(dtype) or not 0 <= index < len(columns) or not columns[index].pages:
        return False
    first = columns[index].pages[0]
    return parse_page_encoding(first, path).WhichOneof("array_encoding") == "list"


COLUMN_ENCODING_URL = "/lance.encodings.ColumnEncoding"


def column_encoding_kind(column: ColumnInfo, path) -> str:
    """``"values"`` for plain columns (zone maps only add statistics) or ``"blob"`` for blob
    columns, whose pages hold (position, size) descriptions of bytes stored elsewhere; other
    column encodings are refused by name."""
    if not column.type_url and not column.encoding:
        return "values"
    if column.type_url != COLUMN_ENCODING_URL:
        raise UnsupportedFeatureError(
            f"column {column.index}: column encoding {column.type_url!r}", path)
    enc = pb.ColumnEncoding()
    try:
        enc.ParseFromString(column.encoding)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise CorruptFileError(f"column {column.index}: undecodable ColumnEncoding ({e})",
                               path) from None
    while enc.WhichOneof("column_encoding") == "zone_index":
        enc = enc.zone_index.inner
    kind = enc.WhichOneof("column_encoding")
    if kind == "blob":
        inner = enc.blob.inner
        while inner.WhichOneof("column_encoding") == "zone_index":
            inner = inner.zone_index.inner
        if inner.WhichOneof("column_encoding") not in (None, "values"):
            raise UnsupportedFeatureError(
                f"column {column.index}: blob column over "
                f"{inner.WhichOneof('column_encoding')!r}", path)
        return "blob"
    if kind not in (None, "values"):
        raise UnsupportedFeatureError(f"column {column.index}: {kind!r} column encoding", path)
    return "values"


def build_field_reader(node, dtype: pa.DataType, column_of, columns, path) -> FieldReader:
    """The reader of one field (a :class:`~lancefmt.file.schema.FieldNode`) of Arrow (storage)
    type ``dtype``; ``column_of(field_id)`` gives the column index of a field id."""
    def column(field_id, blob_ok=False):
        idx = column_of(field_id)
        if idx is None or not 0 <= idx < len(columns):
            raise CorruptFileError(f"field {field_id} has no column (column index {idx})", path)
        kind = column_encoding_kind(columns[idx], path)
        if kind == "blob" and not blob_ok:
            raise UnsupportedFeatureError(
                f"column {idx}: a blob column for field {node.name!r} of type {dtype}", path)
        return columns[idx], kind

    lt = node.logical_type
    if lt == "struct" and not node.is_packed_struct():
        if len(node.children) != dtype.num_fields:
            raise CorruptFileError(f"struct field {node.name!r} has {len(node.children)} child "
                                   f"fields, type has {dtype.num_fields}", path)
        children = [build_field_reader(c, dtype.field(i).type, column_of, columns, path)
                    for i, c in enumerate(node.children)]
        return StructFieldReader(column(node.id)[0], children, dtype, path)
    if lt in ("list", "list.struct", "large_list", "large_list.struct"):
        if len(node.children) != 1:
            raise CorruptFileError(f"list field {node.name!r} needs one child field", path)
        items = build_field_reader(node.children[0], dtype.value_type, column_of, columns, path)
        return ListFieldReader(column(node.id)[0], items, dtype, path)
    col, kind = column(node.id, blob_ok=is_binary_like(dtype))
    if kind == "values" and is_list_of_bytes(columns, col.index, dtype, path):
        if col.index + 1 >= len(columns):
            raise CorruptFileError(f"field {node.name!r}: list-encoded bytes without their "
                                   f"column", path)
        large = is_large_binary_like(dtype)
        items = PrimitiveFieldReader(columns[col.index + 1], pa.uint8(), path)
        list_type = pa.large_list(pa.field("item", pa.uint8(), False)) if large else \
            pa.list_(pa.field("item", pa.uint8(), False))
        return ListOfBytesFieldReader(ListFieldReader(col, items, list_type, path), dtype, path)
    if kind == "blob":
        return BlobFieldReader(col, dtype, path)
    return PrimitiveFieldReader(col, dtype, path)


def assign_columns(roots, columns=None, path=None) -> dict[int, int]:
    """Field id -> column index as 2.0 allocates them: pre-order, every field one column,
    except the children of packed structs (their parent's single column holds them). With the
    file's ``columns``, a 0.13-era string/binary field (list-encoded) takes two columns."""
    out: dict[int, int] = {}
    taken = [0]

    def visit(node):
        out[node.id] = taken[0]
        taken[0] += 1
        if columns is not None and not node.children and node.logical_type in _BINARY_TYPES \
                and is_list_of_bytes(columns, out[node.id], pa.binary(), path):
            taken[0] += 1
        if node.is_packed_struct():
            return
        for c in node.children:
            visit(c)

    for r in roots:
        visit(r)
    return out
