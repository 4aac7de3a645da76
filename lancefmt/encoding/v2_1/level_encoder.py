"""Rep/def levels of mini-block chunks bit-packed as pylance 14 writes them: out-of-line
FastLanes bit-packing of the u16 levels at the page's widest level width, each chunk's last
partial block packed or raw by Lance's rule
(``out_of_line_bitpacking{16, flat(w)}``)."""
from __future__ import annotations

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb


class LevelPacker:
    def __init__(self, levels: np.ndarray):
        self.levels = levels
        top = int(levels.max()) if len(levels) else 0
        self.width = max(1, top.bit_length())

    def chunk(self, start: int, end: int) -> bytes:
        """The packed levels ``[start, end)``: 128 * width bytes per full 1024 levels; the
        tail packed as one more zero-padded block when the padding costs less than packing
        saves (``w * (1024 - tail) < (16 - w) * tail``), else raw u16 -- Lance's rule, which
        its readers use to tell the two apart."""
        from ._fastlanes import pack

        n = end - start
        if n == 0:
            return b""
        w = self.width
        full, tail = divmod(n, 1024)
        packed_tail = tail and w * (1024 - tail) < (16 - w) * tail
        words = np.zeros((full + (1 if packed_tail else 0)) * 1024, dtype=np.uint16)
        body = self.levels[start:start + len(words)] if packed_tail else \
            self.levels[start:start + full * 1024]
        words[:len(body)] = body
        out = pack(words, 16, w).tobytes() if len(words) else b""
        if tail and not packed_tail:
            out += self.levels[start + full * 1024:end].astype("<u2").tobytes()
        return out

    def describe(self, target: pb.CompressiveEncoding):
        target.out_of_line_bitpacking.uncompressed_bits_per_value = 16
        target.out_of_line_bitpacking.values.flat.bits_per_value = self.width
