"""Mini-block value encodings: how one chunk's visible values become its value buffers.

Each encoder answers ``chunk_count(start)`` (a power-of-two count of values for a chunk of
about 4 KiB), ``chunk_value_bytes`` / ``chunk_buffers`` for a value range, ``description()``
(the CompressiveEncoding) and ``num_buffers``; ``dictionary`` is (items encoding, items buffer,
count) for dictionary pages, else None.
"""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import UnsupportedFeatureError
from .value_block import DictBlock, FixedBlock, VariableBlock

TARGET = 4096
MAX_VALUES = 4096


def _pow2_floor(x: int) -> int:
    return 1 << (max(int(x), 1).bit_length() - 1)


class FlatEncoder:
    """Fixed-width values (bits a byte multiple), booleans (bitmaps) and fixed-size lists."""

    dictionary = None

    def __init__(self, block: FixedBlock):
        self.block = block
        cum = int(np.prod(block.fsl_dims or (1,)))
        self.cum = cum
        self.row_bits = block.bits * cum
        self.validity = [v for v in block.fsl_validity]
        if block.bits == 1:
            self.bools = np.unpackbits(block.data, count=block.n * cum, bitorder="little")
        elif block.bits % 8:
            raise UnsupportedFeatureError(f"{block.bits}-bit values")
        self.num_buffers = 1 + sum(1 for v in self.validity if v is not None)
        self.count = max(1, min(MAX_VALUES, _pow2_floor(TARGET * 8 // max(self.row_bits, 1))))

    def chunk_count(self, s):
        return self.count

    def _data(self, s, e):
        if self.block.bits == 1:
            return np.packbits(self.bools[s * self.cum:e * self.cum], bitorder="little")
        w = self.row_bits // 8
        return self.block.data[s * w:e * w]

    def chunk_value_bytes(self, s, e):
        sizes = [((e - s) * self.cum + 7) // 8 for v in self.validity if v is not None]
        bits = (e - s) * self.row_bits
        return sizes + [(bits + 7) // 8]

    def chunk_buffers(self, s, e):
        out = [np.packbits(v[s * self.cum:e * self.cum], bitorder="little")
               for v in self.validity if v is not None]
        return out + [self._data(s, e)]

    def description(self) -> pb.CompressiveEncoding:
        enc = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=self.block.bits))
        dims = list(self.block.fsl_dims)
        for d, v in zip(reversed(dims), reversed(self.validity)):
            enc = pb.CompressiveEncoding(fixed_size_list=pb.FixedSizeList(
                items_per_value=d, values=enc, has_validity=v is not None))
        return enc


class VariableEncoder:
    """Strings / binary: per chunk ``n + 1`` u32 offsets from the buffer start, the bytes,
    0x48 padding to 4."""

    dictionary = None
    num_buffers = 1

    def __init__(self, block: VariableBlock):
        self.block = block
        self.offsets = block.offsets
        self.width = 8 if block.large else 4
        # bytes of values [0, i): offsets + data
        self.cum = self.offsets + self.width * np.arange(len(self.offsets), dtype=np.int64)

    def chunk_count(self, s):
        hi = int(np.searchsorted(self.cum, self.cum[s] + TARGET, side="right")) - 1
        return max(1, min(MAX_VALUES, _pow2_floor(hi - s)))

    def chunk_value_bytes(self, s, e):
        size = self.width * (e - s + 1) + int(self.offsets[e] - self.offsets[s])
        return [size + (-size) % self.width]

    def chunk_buffers(self, s, e):
        n = e - s
        base = self.width * (n + 1)
        offs = (self.offsets[s:e + 1] - self.offsets[s] + base).astype(f"<u{self.width}")
        data = self.block.data[self.offsets[s]:self.offsets[e]]
        size = base + len(data)
        return [offs.tobytes() + data.tobytes() + b"\x48" * ((-size) % self.width)]

    def description(self) -> pb.CompressiveEncoding:
        return pb.CompressiveEncoding(variable=pb.Variable(
            offsets=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=8 * self.width))))


class DictionaryEncoder:
    """u32 indices (encoded like any integers) plus the items as one block-encoded buffer."""

    def __init__(self, block: DictBlock, version, options):
        self.inner = choose(block.indices, version, options)
        self.num_buffers = self.inner.num_buffers
        items = block.items
        if isinstance(items, VariableBlock):
            w = 8 if items.large else 4
            n = items.n
            head = np.array([8 * w, 2 * w + w * (n + 1)], dtype=f"<u{w}")
            buf = head.tobytes() + items.offsets.astype(f"<u{w}").tobytes() + items.data.tobytes()
            enc = pb.CompressiveEncoding(variable=pb.Variable(
                offsets=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=8 * w))))
        else:
            if items.bits % 8 or items.fsl_dims:
                raise UnsupportedFeatureError("dictionary of non-byte-aligned values")
            buf = items.data.tobytes()
            enc = pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=items.bits))
        self.dictionary = (enc, buf, items.n)

    def chunk_count(self, s):
        return self.inner.chunk_count(s)

    def chunk_value_bytes(self, s, e):
        return self.inner.chunk_value_bytes(s, e)

    def chunk_buffers(self, s, e):
        return self.inner.chunk_buffers(s, e)

    def description(self):
        return self.inner.description()


def choose(block, version, options):
    """The value encoder of a mini-block page."""
    if isinstance(block, DictBlock):
        return DictionaryEncoder(block, version, options)
    if isinstance(block, VariableBlock):
        return VariableEncoder(block)
    return FlatEncoder(block)
