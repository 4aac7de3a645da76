"""Lance 2.1/2.2 compressive kernels: FastLanes bit-unpacking and FSST decoding.

Bit-unpacking 2M values (2 000 blocks of 1024) at a typical width per word type is measured
against the floor any decoder pays, a numpy copy of the decoded array (allocation + writes);
``track_unpack_over_copy`` reports unpack time / copy time (target <= 3). The page-level path
(``decode_inline_chunks``: every chunk of a page in one call, width words included) is timed
too. There is no pylance peer for a bare kernel: pylance only exposes whole-file reads, which
the file-level benchmarks compare.
"""
import numpy as np

from lancefmt.encoding.v2_1 import _fastlanes, _fsst

from .common import best_time

BLOCKS = 2000
WIDTHS = {8: 3, 16: 11, 32: 10, 64: 20}


class FastLanesUnpack:
    params = [8, 16, 32, 64]
    param_names = ["word_bits"]
    timeout = 300

    def setup(self, t):
        rng = np.random.default_rng(t)
        w = WIDTHS[t]
        dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[t]
        self.values = rng.integers(0, 1 << w, BLOCKS * 1024, dtype=np.uint64).astype(dt)
        self.packed = _fastlanes.pack(self.values, t, w)
        self.w = w
        assert np.array_equal(_fastlanes.unpack(self.packed, t, w, BLOCKS), self.values)
        # the same data as mini-block chunk value buffers: [T-bit width][packed], 8-aligned
        word = np.array([w], dt).view(np.uint8)
        chunk = np.concatenate([word, self.packed[:128 * w]])
        step = (chunk.size + 7) // 8 * 8
        self.chunks = np.zeros(step * BLOCKS, np.uint8)
        for b in range(BLOCKS):
            self.chunks[b * step:b * step + word.size] = word
            self.chunks[b * step + word.size:b * step + chunk.size] = \
                self.packed[b * 128 * w:(b + 1) * 128 * w]
        self.starts = np.arange(BLOCKS, dtype=np.int64) * step
        self.sizes = np.full(BLOCKS, chunk.size, np.int64)
        self.counts = np.full(BLOCKS, 1024, np.int64)
        got = _fastlanes.decode_inline_chunks(self.chunks, self.starts, self.sizes,
                                              self.counts, t)
        assert np.array_equal(got, self.values)

    def time_unpack(self, t):
        _fastlanes.unpack(self.packed, t, self.w, BLOCKS)

    def time_unpack_page_chunks(self, t):
        _fastlanes.decode_inline_chunks(self.chunks, self.starts, self.sizes, self.counts, t)

    def time_numpy_copy(self, t):
        self.values.copy()

    def track_unpack_over_copy(self, t):
        unpack = best_time(lambda: _fastlanes.unpack(self.packed, t, self.w, BLOCKS), repeat=7)
        copy = best_time(lambda: self.values.copy(), repeat=7)
        return unpack / copy

    track_unpack_over_copy.unit = "unpack time / copy time"


class FsstDecode:
    """1M short strings through a 3-symbol table (every code a symbol, a few escapes)."""

    timeout = 300

    def setup(self):
        syms = [b"common_p", b"refix_", b"x"]
        self.symbols = np.zeros(256, np.uint64)
        self.lens = np.zeros(256, np.uint8)
        for i, s in enumerate(syms):
            self.symbols[i] = int.from_bytes(s.ljust(8, b"\0"), "little")
            self.lens[i] = len(s)
        one = bytes([0, 1, 2, 255, 0x41, 2])
        n = 1_000_000
        self.data = np.frombuffer(one * n, np.uint8)
        self.offsets = np.arange(n + 1, dtype=np.int64) * len(one)
        offs, out, bad = _fsst.fsst_decode(self.data, self.offsets, self.symbols, self.lens)
        assert bad == -1 and out[:17].tobytes() == b"common_prefix_xAx"
        self.plain = out

    def time_fsst_decode(self):
        _fsst.fsst_decode(self.data, self.offsets, self.symbols, self.lens)

    def track_decode_over_copy(self):
        dec = best_time(lambda: _fsst.fsst_decode(self.data, self.offsets, self.symbols,
                                                  self.lens), repeat=5)
        copy = best_time(lambda: self.plain.copy(), repeat=5)
        return dec / copy

    track_decode_over_copy.unit = "decode time / copy time"
