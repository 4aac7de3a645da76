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
        cums = np.cumprod(block.fsl_dims or (1,))
        self.layer_cum = [int(c) for c in cums]
        if block.bits == 1:
            self.bools = np.unpackbits(block.data, count=block.n * cum, bitorder="little")
        elif block.bits % 8:
            raise UnsupportedFeatureError(f"{block.bits}-bit values")
        self.num_buffers = 1 + sum(1 for v in self.validity if v is not None)
        self.count = max(1, min(MAX_VALUES, _pow2_floor(TARGET * 8 // max(self.row_bits, 1))))

    def chunk_count(self, s):
        return self.count

    def page_slices(self):
        """(data, chunk starts, counts) when every chunk is one contiguous slice of the page."""
        if self.num_buffers != 1 or self.cum != 1:
            return None
        n, c = self.block.n, self.count
        counts = np.full(-(-n // c), c, dtype=np.int64)
        if len(counts):
            counts[-1] = n - c * (len(counts) - 1)
        if self.block.bits == 1:
            ends = (np.cumsum(counts) + 7) // 8
        else:
            ends = np.cumsum(counts) * (self.block.bits // 8)
        return self.block.data, np.concatenate([[0], ends]).astype(np.int64), counts

    def _data(self, s, e):
        if self.block.bits == 1:
            return np.packbits(self.bools[s * self.cum:e * self.cum], bitorder="little")
        w = self.row_bits // 8
        return self.block.data[s * w:e * w]

    def chunk_value_bytes(self, s, e):
        sizes = [((e - s) * c + 7) // 8 for v, c in zip(self.validity, self.layer_cum)
                 if v is not None]
        bits = (e - s) * self.row_bits
        return sizes + [(bits + 7) // 8]

    def chunk_buffers(self, s, e):
        out = [np.packbits(v[s * c:e * c], bitorder="little")
               for v, c in zip(self.validity, self.layer_cum) if v is not None]
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
        self._cum = None

    @property
    def cum(self) -> np.ndarray:
        """Bytes of values ``[0, i)``, offsets and data: only the general chunking needs them
        (``page_chunks`` cuts a page without levels in Cython)."""
        if self._cum is None:
            self._cum = self.offsets + self.width * np.arange(len(self.offsets), dtype=np.int64)
        return self._cum

    def chunk_count(self, s):
        hi = int(np.searchsorted(self.cum, self.cum[s] + TARGET, side="right")) - 1
        return max(1, min(MAX_VALUES, _pow2_floor(hi - s)))

    def page_chunks(self, large: bool):
        """The page's chunks (bytes, metadata words) built in one Cython pass, or None when a
        value is too big for a chunk (the general path then decides)."""
        from ._chunk_writer import assemble_variable

        return assemble_variable(np.ascontiguousarray(self.block.data, dtype=np.uint8),
                                 np.ascontiguousarray(self.offsets, dtype=np.int64),
                                 self.width, large, TARGET, MAX_VALUES,
                                 (1 << 32) - 1 if large else 65535,
                                 (1 << 32) * 8 if large else 32768)

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
    """u32 indices (encoded like any integers: ``inner`` is their value encoder) plus the items
    as one block-encoded buffer."""

    def __init__(self, block: DictBlock, inner):
        self.inner = inner
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

    def page_slices(self):
        fn = getattr(self.inner, "page_slices", None)
        return fn() if fn is not None else None

    def page_chunks(self, large):
        fn = getattr(self.inner, "page_chunks", None)
        return fn(large) if fn is not None else None

    def chunk_value_bytes(self, s, e):
        return self.inner.chunk_value_bytes(s, e)

    def chunk_buffers(self, s, e):
        return self.inner.chunk_buffers(s, e)

    def description(self):
        return self.inner.description()


SAMPLE_BLOCKS = 8


def _sample_looks_full_width(block: FixedBlock, t: int, n: int) -> bool:
    """True when evenly spread sample blocks all need (nearly) every bit -- floats, hashes,
    random ids -- so bit-packing cannot win and the full width pass is skipped."""
    from ._fastlanes import block_widths

    nblocks = n // 1024
    if nblocks < 4 * SAMPLE_BLOCKS:
        return False
    w = t // 8
    step = nblocks // SAMPLE_BLOCKS
    for k in range(0, step * SAMPLE_BLOCKS, step):
        part = block.data[k * 1024 * w:(k + 1) * 1024 * w]
        if int(block_widths(part, t, 1024)[0]) < t - t // 16:
            return False
    return True


class BitpackEncoder:
    """FastLanes inline bit-packing: chunks of exactly 1024 values (the last zero-padded),
    each ``[T-bit width word][128 * W bytes]`` with W the bit length of the chunk's maximum
    (raw unsigned bit patterns, as Lance). Widths and packing run in the Cython kernels
    (:func:`._fastlanes.block_widths`, :func:`._fastlanes.pack_blocks`) without the GIL; pages
    without levels are packed straight into their mini-block chunks (:meth:`page_chunks`)."""

    dictionary = None
    num_buffers = 1
    fixed_count = 1024

    def __init__(self, block: FixedBlock, widths: np.ndarray):
        self.block = block
        self.t = block.bits
        self.n = block.n
        self.widths = widths
        self._blocks = None

    @classmethod
    def maybe(cls, block: FixedBlock):
        """A bit-packing encoder if it makes the values at least 10% smaller, else None."""
        from ._fastlanes import block_widths

        t = block.bits
        if t not in (8, 16, 32, 64) or block.fsl_dims or block.n == 0:
            return None
        n = block.n
        if _sample_looks_full_width(block, t, n):
            return None
        widths = block_widths(block.data, t, n)
        size = len(widths) * (t // 8) + 128 * int(widths.sum(dtype=np.int64))
        if size > 0.9 * n * (t // 8):
            return None
        return cls(block, widths)

    @property
    def packed_bytes(self) -> int:
        return len(self.widths) * (self.t // 8) + 128 * int(self.widths.sum(dtype=np.int64))

    def _packed(self):
        """(packed blocks back to back, int64 block starts), packed once on first use."""
        if self._blocks is None:
            from ._fastlanes import pack_blocks

            self._blocks = pack_blocks(self.block.data, self.t, self.n, self.widths)
        return self._blocks

    def chunk_count(self, s):
        return 1024

    def page_chunks(self, large: bool):
        """(chunk bytes, uint32 metadata words) of a page without levels, in one kernel pass."""
        from ._fastlanes import pack_blocks

        return pack_blocks(self.block.data, self.t, self.n, self.widths, True, large)

    def chunk_value_bytes(self, s, e):
        k = s // 1024
        return [(self.t // 8) + 128 * int(self.widths[k])]

    def chunk_buffers(self, s, e):
        data, starts = self._packed()
        k = s // 1024
        return [data[starts[k]:starts[k + 1]]]

    def description(self):
        return pb.CompressiveEncoding(inline_bitpacking=pb.InlineBitpacking(
            uncompressed_bits_per_value=self.t))


RLE_SAMPLE = 64 * 1024


class RleEncoder:
    """Runs of equal values: per chunk (up to 4096 values) the run values (flat) and u8 run
    lengths (runs longer than 255 split), as Lance's mini-block RLE."""

    dictionary = None
    num_buffers = 2

    def __init__(self, block: FixedBlock, words: np.ndarray):
        self.t = block.bits
        self.words = words

    @classmethod
    def maybe(cls, block: FixedBlock, best_other: int):
        t = block.bits
        if t not in (8, 16, 32, 64) or block.fsl_dims or block.n < 2:
            return None
        from ._chunk_writer import count_runs

        n = block.n
        # the most runs for which the estimate below stays within half of best_other
        limit = int((0.5 * best_other - 16 * (n // 4096 + 1)) // (t // 8 + 1)) - n // 255
        if limit < 1:
            return None
        if n > 4 * RLE_SAMPLE:  # a prefix with several times the allowed run density: no RLE
            if count_runs(block.data, t, RLE_SAMPLE, 4 * limit * RLE_SAMPLE // n) > \
                    4 * limit * RLE_SAMPLE // n:
                return None
        runs = count_runs(block.data, t, n, limit)
        estimate = (runs + n // 255) * (t // 8 + 1) + 16 * (n // 4096 + 1)
        if estimate > 0.5 * best_other:
            return None
        words = block.data.view(np.dtype(f"<u{t // 8}"))[:n]
        return cls(block, words)

    def chunk_count(self, s):
        return MAX_VALUES

    def _runs(self, s, e):
        seg = self.words[s:e]
        bounds = np.concatenate([[0], np.flatnonzero(seg[1:] != seg[:-1]) + 1, [len(seg)]])
        lens = np.diff(bounds)
        vals = seg[bounds[:-1]]
        reps = (lens + 254) // 255
        vals = np.repeat(vals, reps)
        first = np.cumsum(reps) - reps
        pos = np.arange(int(reps.sum())) - np.repeat(first, reps)
        lengths = np.where(pos < np.repeat(reps, reps) - 1, 255,
                           np.repeat(lens - 255 * (reps - 1), reps)).astype(np.uint8)
        return vals, lengths

    def chunk_value_bytes(self, s, e):
        vals, lengths = self._runs(s, e)
        return [vals.nbytes, lengths.nbytes]

    def chunk_buffers(self, s, e):
        vals, lengths = self._runs(s, e)
        return [vals, lengths]

    def description(self):
        return pb.CompressiveEncoding(rle=pb.Rle(
            values=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=self.t)),
            run_lengths=pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=8))))


class GeneralEncoder:
    """zstd / lz4 over value buffer 0 of every chunk (Lance frames: u64 / u32 length first)."""

    def __init__(self, inner, scheme: str, level):
        self.inner = inner
        self.scheme = scheme
        self.level = level
        self.num_buffers = inner.num_buffers
        self.dictionary = inner.dictionary
        self.fixed_count = getattr(inner, "fixed_count", None)
        self._cache = {}

    def chunk_count(self, s):
        return self.inner.chunk_count(s)

    def _buffers(self, s, e):
        key = (s, e)
        got = self._cache.get(key)
        if got is None:
            from .. import compression

            bufs = list(self.inner.chunk_buffers(s, e))
            first = bufs[0] if isinstance(bufs[0], bytes) else np.ascontiguousarray(bufs[0])
            bufs[0] = compression.compress(self.scheme, first, self.level)
            self._cache = {key: bufs}
            got = bufs
        return got

    def chunk_value_bytes(self, s, e):
        return [len(b) for b in self._buffers(s, e)]

    def chunk_buffers(self, s, e):
        return self._buffers(s, e)

    def description(self):
        bc = pb.BufferCompression(scheme=pb.COMPRESSION_ALGORITHM_ZSTD if self.scheme == "zstd"
                                  else pb.COMPRESSION_ALGORITHM_LZ4)
        if self.level is not None:
            bc.level = int(self.level)
        return pb.CompressiveEncoding(general=pb.General(compression=bc,
                                                         values=self.inner.description()))
