"""Blob columns (``lance-encoding:blob`` on a binary field) in 2.1 / 2.2 files, as pylance's
file writer lays them out in both versions (blob v1): every non-empty value is written as its
own 64-byte aligned buffer in the data region, and the column's pages are ``BlobLayout`` pages
whose inner mini-block page holds one packed (position u64, size u64) per entry -- (0, 0) for
an empty value, ``((def << 16) | rep, 0)`` for a null -- with the field's rep/def layers on
the blob layout.
"""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import UnsupportedFeatureError
from .encoded_page import EncodedPage, PageInput
from .shred import LIST, layer_codes
from .value_block import FixedBlock

BLOB_META_KEY = "lance-encoding:blob"


def is_blob_leaf(leaf, arrow_type) -> bool:
    """Whether the leaf is a blob column. pylance 14 writes blobs only from large_binary
    (binary: "Expected LargeBinary array"; strings: "Blob encoding is not available"), and
    writes blobs under lists that it cannot read back: all refused here, before writing."""
    import pyarrow as pa

    md = leaf.field.metadata or {}
    if BLOB_META_KEY not in md and BLOB_META_KEY.encode() not in md:
        return False
    if not pa.types.is_large_binary(arrow_type):
        raise UnsupportedFeatureError(
            f"field {leaf.name!r}: blob encoding (lance-encoding:blob) in Lance 2.1/2.2 files "
            f"needs large_binary values, not {arrow_type}")
    return True


def leaf_arrow_type(dtype, path):
    """(the Arrow type of the leaf at a struct-step path, whether a list lies above it)."""
    from .shred import is_list_type
    import pyarrow as pa

    steps = list(path)
    under_list = False
    while True:
        if pa.types.is_struct(dtype):
            if not steps:
                return dtype, under_list
            dtype = dtype.field(steps.pop(0)).type
        elif pa.types.is_map(dtype):
            under_list = True
            dtype = pa.struct([dtype.key_field, dtype.item_field])
        elif is_list_type(dtype):
            under_list = True
            dtype = dtype.value_type
        else:
            return dtype, under_list


def blob_leaf(leaf, dtype, path) -> bool:
    """Whether the leaf at ``path`` of a top-level ``dtype`` is a blob column (refusing the
    blob columns pylance cannot write or read back)."""
    leaf_type, under_list = leaf_arrow_type(dtype, path)
    if not is_blob_leaf(leaf, leaf_type):
        return False
    if under_list:
        raise UnsupportedFeatureError(
            f"field {leaf.name!r}: blob columns inside lists are not supported (pylance 14 "
            f"cannot read them back)")
    return True


def descriptions_page(positions, sizes, layers, num_rows, version) -> EncodedPage:
    from . import miniblock_encoder

    n = len(positions)
    words = np.empty((n, 2), dtype="<u8")
    words[:, 0] = positions
    words[:, 1] = sizes
    block = FixedBlock(128, words.reshape(-1).view(np.uint8), n)
    inner = miniblock_encoder.encode(
        PageInput([pb.REPDEF_ALL_VALID_ITEM], None, None, block, None, n, 0, 0), version, None)
    mb = inner.encoding.mini_block_layout
    flat = pb.CompressiveEncoding()
    flat.CopyFrom(mb.value_compression)
    mb.value_compression.CopyFrom(pb.CompressiveEncoding(packed_struct=pb.PackedStruct(
        values=flat, bits_per_value=[64, 64])))
    blob = pb.BlobLayout()
    blob.inner_layout.CopyFrom(inner.encoding)
    blob.layers.extend(layers)
    return EncodedPage(pb.PageLayout(blob_layout=blob), inner.buffers, num_rows)


class BlobLeafWriter:
    """One blob leaf column (no lists above it: pylance's readers refuse those too)."""

    def __init__(self, column, path, sink, version, page_buffer_bytes, name):
        self.column = column
        self.path = path
        self.sink = sink
        self.version = version
        self.page_buffer_bytes = page_buffer_bytes
        self.name = name
        self.pending = []
        self.pending_bytes = 0

    def append(self, arr):
        from .shred import shred

        piece = shred(arr, self.path)
        if LIST in piece.kinds:
            raise UnsupportedFeatureError(
                f"field {self.name!r}: blob columns inside lists are not supported")
        self.pending.append(piece)
        self.pending_bytes += piece.values.nbytes
        if self.pending_bytes >= self.page_buffer_bytes:
            self.flush()

    def flush(self):
        import pyarrow as pa

        if not self.pending:
            return
        pieces, self.pending, self.pending_bytes = self.pending, [], 0
        kill = np.concatenate([p.kill for p in pieces])
        values = pieces[0].values if len(pieces) == 1 else pa.concat_arrays(
            [p.values for p in pieces])
        if len(values) != len(kill):
            raise UnsupportedFeatureError(f"field {self.name!r}: blob entries without values")
        layers, defs = layer_codes(pieces[0].kinds, kill)
        n = len(kill)
        offsets = np.frombuffer(values.buffers()[1], dtype="<i8")[values.offset:values.offset + n + 1]
        data = values.buffers()[2]
        lens = np.diff(offsets)
        positions = np.zeros(n, dtype=np.uint64)
        sizes = np.zeros(n, dtype=np.uint64)
        if defs is not None:
            null = defs > 0
            positions[null] = defs[null].astype(np.uint64) << np.uint64(16)
        else:
            null = np.zeros(n, dtype=bool)
        for i in np.flatnonzero(~null & (lens > 0)):
            pos, size = self.sink.write_buffer(data.slice(int(offsets[i]), int(lens[i])))
            positions[i], sizes[i] = pos, size
        self.sink.emit(self.column, descriptions_page(positions, sizes, layers,
                                                      sum(p.num_rows for p in pieces),
                                                      self.version))

    def finish(self):
        pass
