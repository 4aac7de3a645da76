"""Packed structs (``lance-encoding:packed``) in 2.1 / 2.2 files, as pylance 14 writes them:
the struct is one leaf column whose mini-block values are whole rows (every field's bytes
back to back) described as ``packed_struct{bits_per_value: [...], values: flat(row bits)}``.

pylance refuses fields that are not byte-wide fixed values ("PackedStruct field widths must
be positive byte widths"), variable-width fields below 2.2 ("Variable packed struct encoding
is not enabled"), and null field values; so does this writer. Variable-width fields at 2.2
(pylance's full-zip ``variable_packed_struct``) are not written yet.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import UnsupportedFeatureError
from .page_encoder import PageInput, constant_all_null
from .shred import LIST, is_list_type, layer_codes, leaf_paths_of, shred
from .value_block import FixedBlock, is_variable, value_block


def leaf_paths(dtype, node, prefix=()) -> list:
    """Struct-step paths of the leaf columns under ``node``, a packed struct being one leaf."""
    if node.is_packed_struct():
        return [prefix]
    if pa.types.is_struct(dtype):
        out = []
        for i, child in enumerate(node.children):
            out.extend(leaf_paths(dtype.field(i).type, child, prefix + (i,)))
        return out
    if pa.types.is_map(dtype):
        return leaf_paths_of(dtype, prefix)
    if is_list_type(dtype) and node.children:
        return leaf_paths(dtype.value_type, node.children[0], prefix)
    return [prefix]


def field_widths(name, struct_type, version) -> list[int]:
    """Byte width of every field, refusing what pylance refuses."""
    widths = []
    for f in struct_type:
        t = f.type
        if is_variable(t):
            if tuple(version) < (2, 2):
                raise UnsupportedFeatureError(
                    f"field {name!r}: packed structs with variable-width fields need Lance "
                    f"file version 2.2 (pylance: variable packed struct encoding is not "
                    f"enabled by the selected file format)")
            raise UnsupportedFeatureError(
                f"field {name!r}: packed structs with variable-width fields (2.2 "
                f"variable_packed_struct) are not written yet")
        try:
            bits = t.bit_width
        except ValueError:
            bits = None
        if pa.types.is_struct(t) or is_list_type(t) or not bits or bits % 8:
            raise UnsupportedFeatureError(
                f"field {name!r}: packed struct field {f.name!r} of type {t} is not a "
                f"positive byte width")
        widths.append(bits // 8)
    return widths


class PackedLeafWriter:
    def __init__(self, column, path, struct_type, sink, version, page_buffer_bytes, name):
        self.column = column
        self.path = path
        self.sink = sink
        self.version = version
        self.page_buffer_bytes = page_buffer_bytes
        self.name = name
        self.widths = field_widths(name, struct_type, version)
        self.pending = []
        self.pending_bytes = 0

    def append(self, arr):
        pieces = [shred(arr, self.path + (j,)) for j in range(len(self.widths))]
        own = len(pieces[0].kinds) - 1
        for p in pieces:
            if np.any(p.kill == 2 * own + 1):
                raise UnsupportedFeatureError(
                    f"field {self.name!r}: null values inside a packed struct (pylance: "
                    f"per-value compression not supported for nullable blocks)")
        self.pending.append(pieces)
        self.pending_bytes += sum(p.values.nbytes for p in pieces)
        if self.pending_bytes >= self.page_buffer_bytes:
            self.flush()

    def flush(self):
        from . import miniblock_encoder
        from .options import LeafOptions

        if not self.pending:
            return
        batches, self.pending, self.pending_bytes = self.pending, [], 0
        first = [b[0] for b in batches]
        kinds = first[0].kinds[:-1]
        kill = np.concatenate([p.kill for p in first])
        rep = np.concatenate([p.rep for p in first]) if first[0].rep is not None else None
        num_rows = sum(p.num_rows for p in first)
        cols = []
        for j, w in enumerate(self.widths):
            vals = pa.concat_arrays([b[j].values for b in batches])
            block = value_block(vals)
            cols.append(np.asarray(block.data[:block.n * w]).reshape(block.n, w))
        n = cols[0].shape[0]
        rows = np.ascontiguousarray(np.hstack(cols)).reshape(-1)
        layers, defs = layer_codes(kinds, kill)
        list_layers = [i for i, k in enumerate(kinds) if k == LIST]
        visible = None
        if list_layers and len(kill):
            layer_of = (kill.astype(np.int32) - 1) // 2
            visible = (kill == 0) | (layer_of > list_layers[-1])
        row_bits = 8 * sum(self.widths)
        inp = PageInput(layers, rep, defs, FixedBlock(row_bits, rows, n), visible, num_rows,
                        len(list_layers), 0)
        if defs is not None and not np.any(defs == 0):
            self.sink.emit(self.column, constant_all_null(inp))
            return
        page = miniblock_encoder.encode(inp, self.version, LeafOptions(compression="none"))
        if page is None:
            raise UnsupportedFeatureError(
                f"field {self.name!r}: packed struct rows too wide for mini-block chunks")
        from ..._proto import encodings_v2_1_pb2 as pb

        mb = page.encoding.mini_block_layout
        flat = pb.CompressiveEncoding()
        flat.CopyFrom(mb.value_compression)
        mb.value_compression.CopyFrom(pb.CompressiveEncoding(packed_struct=pb.PackedStruct(
            values=flat, bits_per_value=[8 * w for w in self.widths])))
        self.sink.emit(self.column, page)

    def finish(self):
        pass
