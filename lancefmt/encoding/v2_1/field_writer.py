"""Field writers of Lance 2.1 / 2.2: a top-level field's arrays -> pages of its leaf columns.

Only leaves own columns (pre-order, as :func:`.field_reader.assign_columns`). Each leaf column
shreds incoming arrays into levels and visible values (:mod:`.shred`) and buffers them until
about ``page_buffer_bytes``, then encodes a page (:mod:`.page_encoder`): memory per column
stays bounded as in the 2.0 writer.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import UnsupportedFeatureError
from .field_reader import assign_columns, storage_type
from .encoded_page import PageInput
from .page_encoder import encode_page
from .shred import ITEM, LIST, layer_codes, leaf_paths_of, shred
from .value_block import is_variable, value_block

DICT_SAMPLE = 4096
DICT_MIN_VALUES = 100


def maybe_dictionary(values: pa.Array, options) -> pa.Array:
    """Low-cardinality strings / binary as a structural dictionary (items once, u32 indices
    that bit-pack), when that is at most half the plain size. A sample decides cheaply
    whether the full hash pass is worth doing."""
    t = values.type
    n = len(values)
    if options.dict_size_ratio is not None:
        from .requested_encoders import dictionary_by_ratio

        return dictionary_by_ratio(values, options.dict_size_ratio)
    if not is_variable(t) or n < DICT_MIN_VALUES or options.compression == "none" or \
            options.compression == "fsst":
        return values
    sample = values.slice(0, DICT_SAMPLE) if n > DICT_SAMPLE else values
    if len(pc.unique(sample)) > len(sample) // 8:
        return values
    enc = values.dictionary_encode()
    items = enc.dictionary
    bits = max(1, int(len(items)).bit_length())
    plain = values.nbytes
    if items.nbytes + n * bits / 8 > plain / 2:
        return values
    return enc

DEFAULT_PAGE_BUFFER_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024
BLOB_META_KEY = "lance-encoding:blob"


class LeafColumnWriter:
    def __init__(self, column: int, path: tuple, sink, version, options, page_buffer_bytes):
        self.column = column
        self.path = path
        self.sink = sink
        self.version = version
        self.options = options
        self.page_buffer_bytes = page_buffer_bytes
        self.pending = []
        self.pending_bytes = 0
        self.wrote_any = False

    def append(self, arr: pa.Array):
        piece = shred(arr, self.path)
        self.pending.append(piece)
        self.pending_bytes += piece.values.nbytes + 4 * piece.num_entries
        if self.pending_bytes >= self.page_buffer_bytes:
            self.flush()

    def flush(self):
        if not self.pending:
            return
        pieces, self.pending, self.pending_bytes = self.pending, [], 0
        if all(p.num_rows == 0 for p in pieces) and self.wrote_any:
            return
        self.wrote_any = True
        submit = getattr(self.sink, "submit", None)
        if submit is None:
            self.sink.emit(self.column, self._encode(pieces))
        else:  # encoded on the writer's pool, written in order
            submit(self.column, lambda: self._encode(pieces))

    def _encode(self, pieces):
        """The page of buffered pieces (runs on an encoding thread: reads only its input)."""
        kinds = pieces[0].kinds
        if kinds == (ITEM,) and not any(p.values.null_count for p in pieces):
            kill = np.zeros(0, np.uint16)  # a flat leaf without nulls: no levels to gather
        else:
            kill = np.concatenate([p.kill for p in pieces])
        rep = np.concatenate([p.rep for p in pieces]) if pieces[0].rep is not None else None
        values = pieces[0].values if len(pieces) == 1 else pa.concat_arrays(
            [p.values for p in pieces])
        num_rows = sum(p.num_rows for p in pieces)
        layers, defs = layer_codes(kinds, kill)
        list_layers = [i for i, k in enumerate(kinds) if k == LIST]
        visible = None
        if list_layers and len(kill):
            inner = list_layers[-1]
            layer_of = (kill.astype(np.int32) - 1) // 2
            visible = (kill == 0) | (layer_of > inner)
        max_rep = len(list_layers)
        values = maybe_dictionary(values, self.options)
        inp = PageInput(layers, rep, defs, value_block(values), visible, num_rows, max_rep, 0)
        return encode_page(inp, self.version, self.options)

    def finish(self):
        pass


class StructuralFieldWriter:
    """One top-level field over its leaf columns."""

    def __init__(self, leaves: list):
        self.leaves = leaves

    def append(self, arr):
        if isinstance(arr.type, pa.BaseExtensionType):
            arr = arr.storage
        for leaf in self.leaves:
            leaf.append(arr)

    def flush(self):
        for leaf in self.leaves:
            leaf.flush()

    def finish(self):
        for leaf in self.leaves:
            leaf.finish()


def _leaf_nodes(node):
    lt = node.logical_type
    if (lt == "struct" and not node.is_packed_struct() and node.children) or lt in (
            "list", "list.struct", "large_list", "large_list.struct", "map"):
        out = []
        for c in node.children:
            out.extend(_leaf_nodes(c))
        return out
    return [node]


def _has_map(dtype) -> bool:
    if pa.types.is_map(dtype):
        return True
    if pa.types.is_struct(dtype):
        return any(_has_map(dtype.field(i).type) for i in range(dtype.num_fields))
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or \
            pa.types.is_fixed_size_list(dtype):
        return _has_map(dtype.value_type)
    return False


def build_field_writer(node, arrow_field: pa.Field, column_of: dict, sink, version,
                       page_buffer_bytes=DEFAULT_PAGE_BUFFER_BYTES):
    from .options import LeafOptions

    dtype = arrow_field.type
    if isinstance(dtype, pa.BaseExtensionType):
        dtype = dtype.storage_type
    if tuple(version) < (2, 2) and _has_map(dtype):
        raise UnsupportedFeatureError(
            f"field {node.name!r}: the map type needs Lance file version 2.2 (pylance 14: Map "
            f"data type is not enabled by the selected file format)")
    nodes = _leaf_nodes(node)
    if any(leaf.is_packed_struct() for leaf in nodes):
        from .packed_writer import leaf_paths

        paths = leaf_paths(dtype, node)
    else:
        paths = leaf_paths_of(dtype)
    if len(paths) != len(nodes):
        raise UnsupportedFeatureError(
            f"field {node.name!r}: {len(nodes)} leaf fields but {len(paths)} leaves in {dtype}")
    leaves = []
    for p, leaf in zip(paths, nodes):
        from .blob_writer import BlobLeafWriter, blob_leaf
        from .empty_struct import EmptyStructLeafWriter, is_empty_struct_node, refuse_nested

        if is_empty_struct_node(leaf):
            refuse_nested(leaf, p, None)
            leaves.append(EmptyStructLeafWriter(column_of[leaf.id], sink, leaf.name))
            continue

        if blob_leaf(leaf, dtype, p):
            leaves.append(BlobLeafWriter(column_of[leaf.id], p, sink, version,
                                         page_buffer_bytes, leaf.name))
            continue
        if leaf.is_packed_struct():
            from .blob_writer import leaf_arrow_type
            from .packed_writer import PackedLeafWriter

            leaves.append(PackedLeafWriter(column_of[leaf.id], p, leaf_arrow_type(dtype, p)[0],
                                           sink, version, page_buffer_bytes, leaf.name))
            continue
        leaves.append(LeafColumnWriter(column_of[leaf.id], p, sink, version,
                                       LeafOptions.from_metadata(leaf.field.metadata,
                                                                 leaf.name),
                                       page_buffer_bytes))
    return StructuralFieldWriter(leaves)


def column_allocation(roots) -> list[tuple[int, int]]:
    return sorted(assign_columns(roots).items(), key=lambda kv: kv[1])


class FieldWriters:
    """The 2.1 / 2.2 write scheme, as :func:`lancefmt.encoding.field_writers_for` returns it."""

    default_max_page_bytes = DEFAULT_MAX_PAGE_BYTES
    default_page_buffer_bytes = DEFAULT_PAGE_BUFFER_BYTES

    def __init__(self, version):
        from .layout import PAGE_LAYOUT_URL

        self.version = tuple(version)
        self.page_encoding_url = PAGE_LAYOUT_URL

    @staticmethod
    def column_allocation(roots):
        return column_allocation(roots)

    def build(self, root, arrow_field, column_of, sink, page_buffer_bytes, max_page_bytes):
        return build_field_writer(root, arrow_field, column_of, sink, self.version,
                                  min(page_buffer_bytes, max_page_bytes))
