"""Value encoders that field metadata asks for (:mod:`.options`): byte-stream-split under
zstd / lz4 (``lance-encoding:bss``) and run-length encoding by ``lance-encoding:rle-threshold``.
"""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb
from .value_block import FixedBlock
from .value_encoders import FlatEncoder, RleEncoder

BSS_AUTO_MAX_ENTROPY = 4.0   # bits per byte position; pylance's "auto" threshold


ENTROPY_SAMPLE = 64          # values; pylance judges on the page's first 64


def byte_position_entropy(block: FixedBlock) -> float:
    """Mean Shannon entropy (bits) of the bytes at each position of the first values."""
    w = block.bits // 8
    k = min(block.n, ENTROPY_SAMPLE)
    mat = block.data[:k * w].reshape(k, w)
    total = 0.0
    for j in range(w):
        counts = np.bincount(mat[:, j], minlength=256)
        p = counts[counts > 0] / k
        total += float(-(p * np.log2(p)).sum())
    return total / w


class ByteStreamSplitEncoder:
    """Per chunk, byte j of every value together (chunk-local byte planes), so a general
    compressor over it sees the slowly changing high bytes in a row."""

    dictionary = None
    num_buffers = 1

    def __init__(self, block: FixedBlock):
        self.block = block
        self.width = block.bits // 8
        self.flat = FlatEncoder(block)

    @classmethod
    def maybe(cls, block: FixedBlock, options):
        """pylance's rule: only with zstd / lz4 asked for, 32/64-bit values, ``bss`` on, or
        auto (the default) when the byte positions' mean entropy is under 4 bits."""
        if options is None or options.compression not in ("zstd", "lz4"):
            return None
        if not isinstance(block, FixedBlock) or block.bits not in (32, 64) or block.fsl_dims \
                or block.n == 0:
            return None
        mode = options.bss or "auto"
        if mode == "off":
            return None
        if mode == "auto" and byte_position_entropy(block) >= BSS_AUTO_MAX_ENTROPY:
            return None
        return cls(block)

    def chunk_count(self, s):
        return self.flat.chunk_count(s)

    def chunk_value_bytes(self, s, e):
        return [(e - s) * self.width]

    def chunk_buffers(self, s, e):
        w = self.width
        vals = self.block.data[s * w:e * w].reshape(e - s, w)
        return [np.ascontiguousarray(vals.T).reshape(-1)]

    def description(self):
        return pb.CompressiveEncoding(byte_stream_split=pb.ByteStreamSplit(
            values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=self.block.bits))))


def rle_by_threshold(block: FixedBlock, threshold: float):
    """RLE exactly when runs < values * threshold (``lance-encoding:rle-threshold``)."""
    t = block.bits
    if t not in (8, 16, 32, 64) or block.fsl_dims or block.n == 0:
        return None
    words = block.data.view(np.dtype(f"<u{t // 8}"))[:block.n]
    runs = int(np.count_nonzero(words[1:] != words[:-1])) + 1
    if runs >= block.n * threshold:
        return None
    return RleEncoder(block, words)


DICT_MIN_VALUES = 100


def dictionary_by_ratio(values, ratio: float):
    """``lance-encoding:dict-size-ratio``: dictionary-encode (strings, binary, fixed-width
    values of 8..64 bits) when pylance's size estimate -- items + u32/u64 indices for
    variable values, 16-byte items + u32 indices for fixed ones -- is below ``ratio`` of the
    plain size."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .value_block import is_variable

    t = values.type
    n = len(values)
    if n < DICT_MIN_VALUES:
        return values
    fixed = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
    if not (is_variable(t) or fixed):
        return values
    card = len(pc.unique(values.drop_null()))
    if is_variable(t):
        w = 8 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else 4
        size = len(values.buffers()[2] or b"") if values.offset == 0 else int(
            pc.sum(pc.binary_length(values)).as_py() or 0)
        if size == 0:
            return values
        estimate = card * (size // n) + card * w + n * w
    else:
        size = n * t.bit_width // 8
        estimate = card * 16 + n * 4
    if estimate >= ratio * size:
        return values
    return values.dictionary_encode()
