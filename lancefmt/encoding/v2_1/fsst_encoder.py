"""FSST for 2.1 / 2.2 string pages: build a symbol table from a sample of the page, compress
every string (Cython, :mod:`._fsst_encode`), and serialise the table as Lance reads it.

Lance's table blob is always 2312 bytes: a u64 header (``"FSST"`` << 32, bit 24 = compressed,
the symbol count in the low byte), the symbols as u64 words, their lengths as bytes, zero
padding. Decoders take code c to symbol c and code 255 as an escape.
"""
from __future__ import annotations

import numpy as np

from ._fsst_encode import count_codes, fsst_encode, pair_candidates
from .value_block import VariableBlock
from .value_encoders import VariableEncoder

TABLE_BYTES = 8 + 256 * 8 + 256
MAGIC = 0x46535354 << 32
GENERATIONS = 5
SAMPLE_BYTES = 32 * 1024
MAX_SYMBOLS = 255
# pylance's thresholds for choosing FSST on its own
MIN_PAGE_BYTES = 32 * 1024
MIN_MAX_LEN = 5

_NCODES = 512


def _sample(block: VariableBlock):
    """Whole strings spread evenly over the page, about SAMPLE_BYTES in all."""
    offs = block.offsets
    total = int(offs[-1] - offs[0])
    if total <= SAMPLE_BYTES:
        return np.ascontiguousarray(block.data[int(offs[0]):int(offs[-1])]), offs - offs[0]
    n = block.n
    avg = max(1, total // max(n, 1))
    want = max(1, min(n, SAMPLE_BYTES // avg))
    picks = np.unique(np.linspace(0, n - 1, want).astype(np.int64))
    starts, ends = offs[picks], offs[picks + 1]
    lens = ends - starts
    out_offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    idx = np.repeat(starts - out_offs[:-1], lens) + np.arange(int(out_offs[-1]))
    return np.ascontiguousarray(block.data[idx]), out_offs


def _code_symbols(vals, lens):
    """(value, length) of every code 0..511: symbols, then the literal bytes at 256 + b."""
    cv = np.zeros(_NCODES, dtype=np.uint64)
    cl = np.zeros(_NCODES, dtype=np.int64)
    cv[:len(vals)] = vals
    cl[:len(vals)] = lens
    cv[256:] = np.arange(256, dtype=np.uint64)
    cl[256:] = 1
    return cv, cl


def _next_table(vals, lens, c1, c2):
    """The MAX_SYMBOLS candidates of largest gain (count * length) among the current codes
    and every pair of consecutive codes joined (cut to 8 bytes)."""
    cv, cl = _code_symbols(vals, lens)
    # the used codes and the pairs, in one Cython pass over the 512 x 512 pair counts
    v, ln, g = pair_candidates(cv, cl, np.ascontiguousarray(c1, np.uint32),
                               np.ascontiguousarray(c2, np.uint32))
    # the same symbol reached twice sums its gains
    order = np.lexsort((v, ln))
    v, ln, g = v[order], ln[order], g[order]
    first = np.ones(len(v), dtype=bool)
    first[1:] = (v[1:] != v[:-1]) | (ln[1:] != ln[:-1])
    starts = np.flatnonzero(first)
    v, ln, g = v[starts], ln[starts], np.add.reduceat(g, starts)
    # single bytes only earn their keep over an escape (2 bytes -> 1)
    top = np.lexsort((-ln, -g))[:MAX_SYMBOLS]
    return v[top].astype(np.uint64), ln[top].astype(np.uint8)


def build_table(block: VariableBlock):
    """Symbols (uint64 values, uint8 lengths) learnt from a sample of the page."""
    data, offs = _sample(block)
    vals = np.zeros(0, dtype=np.uint64)
    lens = np.zeros(0, dtype=np.uint8)
    best = None
    for _ in range(GENERATIONS):
        c1, c2 = count_codes(data, offs, vals, lens)
        size = int(c1[:256].sum()) + 2 * int(c1[256:].sum())
        if best is None or size < best[0]:
            best = (size, vals, lens)
        vals, lens = _next_table(vals, lens, c1, c2)
    c1, _ = count_codes(data, offs, vals, lens)
    size = int(c1[:256].sum()) + 2 * int(c1[256:].sum())
    if size < best[0]:
        best = (size, vals, lens)
    return best[1], best[2]


def serialise_table(vals, lens, compressed=True) -> bytes:
    n = len(vals)
    header = MAGIC | (int(bool(compressed)) << 24) | n
    out = bytearray(TABLE_BYTES)
    out[:8] = header.to_bytes(8, "little")
    out[8:8 + 8 * n] = np.asarray(vals, dtype="<u8").tobytes()
    out[8 + 8 * n:8 + 9 * n] = np.asarray(lens, dtype=np.uint8).tobytes()
    return bytes(out)


def compress_block(block: VariableBlock):
    """(compressed VariableBlock, table bytes), or None when FSST would not shrink the page."""
    if block.n == 0:
        return None
    vals, lens = build_table(block)
    data = np.ascontiguousarray(block.data)
    offs = np.ascontiguousarray(block.offsets, dtype=np.int64)
    out_offs, out = fsst_encode(data, offs, vals, lens)
    if len(out) >= int(offs[-1] - offs[0]):
        return None
    return VariableBlock(out_offs, out, block.n, block.large), serialise_table(vals, lens)


def worth_trying(block: VariableBlock, scheme) -> bool:
    """FSST when asked (``lance-encoding:compression=fsst``) or, like pylance, for pages of
    32 KiB+ holding a string of 5+ bytes."""
    if scheme == "fsst":
        return block.n > 0
    if scheme not in (None, "zstd", "lz4"):
        return False
    return int(block.offsets[-1] - block.offsets[0]) >= MIN_PAGE_BYTES and \
        block.max_len >= MIN_MAX_LEN


class FsstMiniBlockEncoder:
    """Mini-block FSST: the compressed strings chunked like plain strings (u32/u64 offsets +
    bytes per chunk), the page's table in the description."""

    dictionary = None

    def __init__(self, compressed: VariableBlock, table: bytes):
        self.inner = VariableEncoder(compressed)
        self.table = table
        self.num_buffers = self.inner.num_buffers

    @classmethod
    def maybe(cls, block: VariableBlock, scheme):
        if not worth_trying(block, scheme):
            return None
        got = compress_block(block)
        return cls(*got) if got is not None else None

    def chunk_count(self, s):
        return self.inner.chunk_count(s)

    def page_chunks(self, large):
        return self.inner.page_chunks(large)

    def chunk_value_bytes(self, s, e):
        return self.inner.chunk_value_bytes(s, e)

    def chunk_buffers(self, s, e):
        return self.inner.chunk_buffers(s, e)

    def description(self):
        from ..._proto import encodings_v2_1_pb2 as pb

        return pb.CompressiveEncoding(fsst=pb.Fsst(symbol_table=self.table,
                                                   values=self.inner.description()))
