"""Packed structs (``lance-encoding:packed``) in 2.1 / 2.2 files, as pylance 14 writes them:
the struct is one leaf column whose mini-block values are whole rows (every field's bytes
back to back) described as ``packed_struct{bits_per_value: [...], values: flat(row bits)}``.

With string / binary fields (2.2 only) the struct goes full-zip as one variable value per
row -- each field's bytes, variable ones after a u32 / u64 length -- described as
``variable_packed_struct``, as pylance writes it.

pylance refuses fields that are not byte-wide fixed values ("PackedStruct field widths must
be positive byte widths"), variable-width fields below 2.2 ("Variable packed struct encoding
is not enabled"), and null field values; so does this writer.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import UnsupportedFeatureError
from .encoded_page import PageInput
from .page_encoder import constant_all_null
from .shred import LIST, is_list_type, layer_codes, leaf_paths_of, shred
from .value_block import FixedBlock, VariableBlock, is_variable, value_block


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
    """Byte width of every field (minus the length width for variable fields, 2.2 only),
    refusing what pylance refuses."""
    widths = []
    for f in struct_type:
        t = f.type
        if is_variable(t):
            if tuple(version) < (2, 2):
                raise UnsupportedFeatureError(
                    f"field {name!r}: packed structs with variable-width fields need Lance "
                    f"file version 2.2 (pylance: variable packed struct encoding is not "
                    f"enabled by the selected file format)")
            large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
            if not large and not (pa.types.is_string(t) or pa.types.is_binary(t)):
                raise UnsupportedFeatureError(
                    f"field {name!r}: packed struct field {f.name!r} of type {t}")
            widths.append(-(8 if large else 4))   # negative: a length of that many bytes
            continue
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
        blocks = [value_block(pa.concat_arrays([b[j].values for b in batches]))
                  for j in range(len(self.widths))]
        n = blocks[0].n
        layers, defs = layer_codes(kinds, kill)
        list_layers = [i for i, k in enumerate(kinds) if k == LIST]
        visible = None
        if list_layers and len(kill):
            layer_of = (kill.astype(np.int32) - 1) // 2
            visible = (kill == 0) | (layer_of > list_layers[-1])
        if any(w < 0 for w in self.widths):
            block = VariableBlock(*variable_rows(blocks, self.widths), n)
        else:
            rows = np.hstack([np.asarray(b.data[:n * w]).reshape(n, w)
                              for b, w in zip(blocks, self.widths)])
            block = FixedBlock(8 * sum(self.widths), np.ascontiguousarray(rows).reshape(-1), n)
        inp = PageInput(layers, rep, defs, block, visible, num_rows, len(list_layers), 0)
        if defs is not None and not np.any(defs == 0):
            self.sink.emit(self.column, constant_all_null(inp))
            return
        if isinstance(block, VariableBlock):
            self.sink.emit(self.column, self._variable_page(inp))
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

    def _variable_page(self, inp):
        from ..._proto import encodings_v2_1_pb2 as pb
        from . import fullzip_encoder
        from .options import LeafOptions

        page = fullzip_encoder.encode(inp, self.version, LeafOptions(compression="none"))
        vps = pb.VariablePackedStruct()
        for w in self.widths:
            f = vps.fields.add()
            if w > 0:
                f.value.flat.bits_per_value = 8 * w
                f.bits_per_value = 8 * w
            else:
                f.value.variable.offsets.flat.bits_per_value = -8 * w
                f.bits_per_length = -8 * w
        fz = page.encoding.full_zip_layout
        fz.value_compression.CopyFrom(pb.CompressiveEncoding(variable_packed_struct=vps))
        return page

    def finish(self):
        pass


def variable_rows(blocks, widths):
    """(int64 offsets, bytes) of rows made of every field's bytes, a variable field's after
    its little-endian length."""
    from .fullzip_encoder import byte_ranges

    n = blocks[0].n
    sizes = np.zeros((n, len(widths)), dtype=np.int64)
    for j, (b, w) in enumerate(zip(blocks, widths)):
        sizes[:, j] = w if w > 0 else -w + np.diff(b.offsets)
    row_sizes = sizes.sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(row_sizes)]).astype(np.int64)
    field_starts = offsets[:-1, None] + np.cumsum(sizes, axis=1) - sizes
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    for j, (b, w) in enumerate(zip(blocks, widths)):
        at = field_starts[:, j]
        if w > 0:
            out[(at[:, None] + np.arange(w)).reshape(-1)] = b.data[:n * w]
            continue
        lw = -w
        lens = np.diff(b.offsets)
        out[(at[:, None] + np.arange(lw)).reshape(-1)] = \
            lens.astype(f"<u{lw}").view(np.uint8)
        if lens.sum():
            src = byte_ranges(b.offsets[:-1].astype(np.int64), lens)
            dst = byte_ranges((at + lw).astype(np.int64), lens)
            out[dst] = b.data[src]
    return offsets, out
