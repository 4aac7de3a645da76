"""Field readers of Lance 2.1 / 2.2: a field's rows from its leaf columns.

Only leaves own columns (pre-order; a packed struct, a fixed-size list or a blob is one leaf).
Each leaf column carries the structs and lists above it as rep/def levels, so a
:class:`LeafReader` turns each of its pages into an array of the leaf's *path type* and a
:class:`StructuralFieldReader` joins the leaves of a struct (whose pages have unrelated row
boundaries) by re-cutting their chunks at common row boundaries.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, UnsupportedFeatureError
from ..column import ColumnInfo, PageInfo, PageSource
from ..v2_0.field_reader import zip_chunks
from . import assemble, pages, random_access
from .empty_struct import EmptyStructLeafReader, is_empty_struct_node, refuse_nested
from .layout import parse_layout


def _is_list(node) -> bool:
    return node.logical_type in ("list", "list.struct", "large_list", "large_list.struct", "map")


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every map spelled as the list<entries: struct<key, value>> it is stored as
    (same Arrow layout, so results are viewed back as ``t``)."""
    if pa.types.is_map(t):
        entries = pa.struct([t.key_field.with_type(storage_type(t.key_type)),
                             t.item_field.with_type(storage_type(t.item_type))])
        return pa.list_(pa.field("entries", entries, nullable=False))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(storage_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(storage_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(storage_type(t.value_type)))
    return t


def _is_struct(node) -> bool:
    """A struct whose children are fields (an empty struct is a leaf: :mod:`.empty_struct`)."""
    return node.logical_type == "struct" and not node.is_packed_struct() and bool(node.children)


def leaf_paths(node, dtype):
    """``(child index path, path types top first, leaf node)`` of every leaf under ``node``."""
    if _is_struct(node):
        if len(node.children) != dtype.num_fields:
            raise CorruptFileError(f"struct field {node.name!r} has {len(node.children)} child "
                                   f"fields, type has {dtype.num_fields}")
        out = []
        for i, child in enumerate(node.children):
            f = dtype.field(i)
            for p, types, leaf in leaf_paths(child, f.type):
                proj = pa.struct([pa.field(f.name, types[0], f.nullable, f.metadata)])
                out.append(((i,) + p, [proj] + types, leaf))
        return out
    if _is_list(node):
        if len(node.children) != 1:
            raise CorruptFileError(f"list field {node.name!r} needs one child field")
        vf = dtype.value_field
        out = []
        for p, types, leaf in leaf_paths(node.children[0], vf.type):
            item = pa.field(vf.name, types[0], vf.nullable, vf.metadata)
            proj = pa.large_list(item) if pa.types.is_large_list(dtype) else pa.list_(item)
            out.append((p, [proj] + types, leaf))
        return out
    return [((), [dtype], node)]


def assign_columns(roots) -> dict[int, int]:
    """Field id -> column index as 2.1 allocates them: leaves only, in pre-order."""
    out: dict[int, int] = {}

    def visit(node):
        if _is_struct(node):
            for c in node.children:
                visit(c)
        elif _is_list(node):
            for c in node.children:
                visit(c)
        else:
            out[node.id] = len(out)

    for r in roots:
        visit(r)
    return out


class LeafReader:
    """One leaf column: each page decodes to an array of the leaf's path type."""

    def __init__(self, column: ColumnInfo, path_types: list, version, path):
        self.column = column
        self.path_types = path_types
        self.dtype = path_types[0]
        self.version = version
        self.path = path
        self.num_rows = column.num_rows

    def pages_for(self, start, stop) -> list[PageInfo]:
        return [self.column.pages[i] for i in self.column.page_range(start, stop)]

    def page_data(self, source: PageSource, page: PageInfo, buffers, chunk_ids=None):
        """The levels and values of ``page`` (of some of its mini-block chunks)."""
        layout = parse_layout(page, self.version, self.path)
        where = page.describe()
        kind = layout.WhichOneof("layout")
        if kind == "mini_block_layout":
            mb = random_access.miniblock(page, buffers, self.path)
            return mb.decode(chunk_ids)
        if kind == "full_zip_layout":
            return pages.decode_full_zip(layout.full_zip_layout, buffers, where, self.path)
        if kind == "constant_layout":
            return pages.decode_constant(layout.constant_layout, buffers, page.num_rows, where,
                                         self.path)
        if kind == "blob_layout":
            return pages.decode_blob(layout.blob_layout, buffers, source.fetch, source.data_end,
                                     where, self.path)
        raise UnsupportedFeatureError(f"{where}: page layout {kind!r}", self.path)

    def decode_page(self, source: PageSource, page: PageInfo, buffers) -> pa.Array:
        data = self.page_data(source, page, buffers)
        arr = assemble.page_array(data, self.path_types, page.describe(), self.path)
        if len(arr) != page.num_rows:
            raise CorruptFileError(f"{page.describe()}: decoded {len(arr)} rows, page has "
                                   f"{page.num_rows}", self.path)
        return arr

    def read(self, source: PageSource, start, stop) -> list[pa.Array]:
        out = []
        decode = lambda page, bufs: self.decode_page(source, page, bufs)  # noqa: E731
        for i in self.column.page_range(start, stop):
            page = self.column.pages[i]
            arr = source.decoded(page, decode)
            lo = max(start, page.row_start) - page.row_start
            hi = min(stop, page.row_stop) - page.row_start
            out.append(arr if lo == 0 and hi == len(arr) else arr.slice(lo, hi - lo))
        return out

    def evict_before(self, source, row):
        pages_ = self.column.page_range(row, row + 1)
        first = pages_.start if len(pages_) else len(self.column.pages)
        source.evict_before(self.column.index, first)

    def take(self, source: PageSource, rows: np.ndarray) -> list[pa.Array]:
        """Chunks holding exactly ``rows`` (sorted, unique): only the mini-block chunks or
        full-zip rows that hold them are read, unless the page is decoded already."""
        return random_access.take_rows(self, source, rows)


class StructuralFieldReader:
    """A top-level field over its leaf columns."""

    def __init__(self, leaves: list, dtype, path, storage=None):
        self.leaves = leaves  # [(child index path, LeafReader)]
        self.dtype = dtype
        self.storage = dtype if storage is None else storage  # maps as lists of entries
        self.path = path
        self.num_rows = leaves[0][1].num_rows
        for p, leaf in leaves:
            if leaf.num_rows != self.num_rows:
                raise CorruptFileError(f"field columns differ in rows ({leaf.num_rows} vs "
                                       f"{self.num_rows})", path)
        self.single_leaf = len(leaves) == 1 and leaves[0][1].dtype.equals(self.storage)

    def pages_for(self, start, stop):
        return [p for _, leaf in self.leaves for p in leaf.pages_for(start, stop)]

    def _join(self, parts):
        if self.single_leaf:
            out = parts[0]
        else:
            paths = [p for p, _ in self.leaves]
            out = zip_chunks(parts, lambda arrays: assemble.merge(self.storage,
                                                                  list(zip(paths, arrays))))
        if self.storage is not self.dtype:
            out = [c.view(self.dtype) for c in out]
        return out

    def read(self, source, start, stop):
        return self._join([leaf.read(source, start, stop) for _, leaf in self.leaves])

    def evict_before(self, source, row):
        for _, leaf in self.leaves:
            leaf.evict_before(source, row)

    def take(self, source, rows):
        return self._join([leaf.take(source, rows) for _, leaf in self.leaves])


def build_field_reader(node, dtype, column_of, columns, version, path):
    """The reader of one top-level field (a FieldNode) of Arrow storage type ``dtype``."""
    leaves = []
    storage = storage_type(dtype)
    for p, types, leaf in leaf_paths(node, storage):
        idx = column_of(leaf.id)
        if idx is None or not 0 <= idx < len(columns):
            raise CorruptFileError(f"field {leaf.id} ({leaf.name!r}) has no column (column "
                                   f"index {idx})", path)
        if is_empty_struct_node(leaf):
            refuse_nested(leaf, p, path)
            leaves.append((p, EmptyStructLeafReader(columns[idx], version, path)))
            continue
        leaves.append((p, LeafReader(columns[idx], types, version, path)))
    if not leaves:
        raise UnsupportedFeatureError(f"field {node.name!r}: a struct without leaf fields", path)
    return StructuralFieldReader(leaves, dtype, path,
                                 None if storage.equals(dtype) else storage)


__all__ = ["build_field_reader", "assign_columns", "leaf_paths", "storage_type"]
