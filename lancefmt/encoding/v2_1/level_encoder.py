"""Rep/def levels of mini-block chunks bit-packed as pylance 14 writes them: out-of-line
FastLanes bit-packing of the u16 levels at the page's widest level width, each chunk's levels
zero-padded to a multiple of 1024 (``out_of_line_bitpacking{16, flat(w)}``)."""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb


class LevelPacker:
    def __init__(self, levels: np.ndarray):
        self.levels = levels
        top = int(levels.max()) if len(levels) else 0
        self.width = max(1, top.bit_length())

    def chunk(self, start: int, end: int) -> bytes:
        """The packed levels ``[start, end)``: 128 * width bytes per 1024 levels."""
        from ._fastlanes import pack

        n = end - start
        if n == 0:
            return b""
        words = np.zeros(-(-n // 1024) * 1024, dtype=np.uint16)
        words[:n] = self.levels[start:end]
        return pack(words, 16, self.width).tobytes()

    def describe(self, target: pb.CompressiveEncoding):
        target.out_of_line_bitpacking.uncompressed_bits_per_value = 16
        target.out_of_line_bitpacking.values.flat.bits_per_value = self.width
