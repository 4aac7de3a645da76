"""The FTS posting-list kernels: blocks, impacts, positions and BM25 (pylance's bytes are
checked in tests/interop/test_index_fts_interop.py)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from lancefmt.index.fts._postings import (bm25_idf, bm25_weights, decode_positions,
                                          decode_posting, encode, group)


def one_token(docs, freqs, doc_lens, positions=None):
    off = np.array([0, len(docs)], np.int64)
    d = np.asarray(docs, np.uint32)
    f = np.asarray(freqs, np.uint32)
    lens = np.asarray(doc_lens, np.uint32)
    avgdl = np.float32(lens.sum()) / np.float32(lens.size)
    pos = None if positions is None else np.asarray(positions, np.uint32)
    return encode(off, d, f, lens, lens.size, float(avgdl), pos,
                  None if pos is None else np.arange(pos.size, dtype=np.int64))


def test_group_counts_frequencies_in_doc_order():
    tokens = np.array([1, 0, 1, 1, 0, 2], np.int32)
    docs = np.array([0, 0, 0, 1, 2, 2], np.uint32)
    off, d, f, order = group(tokens, docs, 3)
    assert off.tolist() == [0, 2, 4, 5]
    assert d.tolist() == [0, 2, 0, 1, 2] and f.tolist() == [1, 1, 2, 1, 1]
    assert order.tolist() == [1, 4, 0, 2, 3, 5]


def test_blocks_round_trip_and_tail_is_varints():
    rng = np.random.default_rng(3)
    n = 128 * 3 + 17
    docs = np.sort(rng.choice(100_000, n, replace=False)).astype(np.uint32)
    freqs = rng.integers(1, 300, n).astype(np.uint32)
    lens = rng.integers(1, 500, 100_000).astype(np.uint32)
    enc = one_token(docs, freqs, lens)
    assert enc["blocks_per_token"].tolist() == [4]
    off = enc["posting_offsets"]
    d, f, maxes = decode_posting(off, enc["posting"], n)
    assert d.tolist() == docs.tolist() and f.tolist() == freqs.tolist()
    assert maxes.max() == enc["max_score"][0]
    tail = bytes(enc["posting"][off[3]:off[4]])
    first = docs[384]
    assert tail[4] == (first & 0x7F) | (0x80 if first >= 0x80 else 0)
    # one level-0 impact per block and one level-1 entry
    assert enc["impacts_per_token"].tolist() == [5]


def test_block_max_score_is_lances_bm25_bound():
    enc = one_token([0, 1, 2], [1, 3, 1], [10, 4, 30])
    idf = bm25_idf([3], 3)[0]
    w = bm25_weights([1, 3, 1], [10, 4, 30], np.float32(44) / np.float32(3), idf)
    assert abs(enc["max_score"][0] - w.max()) < 1e-6
    block = bytes(enc["posting"])
    assert struct.unpack("<f", block[:4])[0] == enc["max_score"][0]


def test_impact_entry_is_quantized_frontier():
    # (freq, len): (1, 10) dominated by (1, 8); (2, 9) and (3, 20) on the frontier
    enc = one_token([0, 1, 2, 3], [1, 1, 2, 3], [10, 8, 9, 20])
    level0 = bytes(enc["impacts"][enc["impact_offsets"][0]:enc["impact_offsets"][1]])
    # last doc 3, 3 pairs; norms 8, 9 (exact), 18 (20 -> code 2<<3 | (20>>1 & 7) = 18)
    assert level0 == bytes([3, 3, 0b01, 8, 0b00, 0b01, 9])


def test_positions_round_trip_across_packed_groups():
    rng = np.random.default_rng(5)
    n = 200
    freqs = rng.integers(1, 4, n).astype(np.uint32)
    positions = np.concatenate([np.sort(rng.choice(1000, k, replace=False)) for k in freqs]).astype(np.uint32)
    enc = one_token(np.arange(n), freqs, np.full(n, 1000))
    assert enc["positions"] is None
    enc = one_token(np.arange(n), freqs, np.full(n, 1000), positions)
    blocks = enc["position_block_offsets"]
    assert blocks.tolist()[0] == 0 and blocks.size == 2
    got = decode_positions(enc["positions"], blocks, freqs)
    assert got.tolist() == positions.tolist()


@pytest.mark.parametrize("cut", [1, 5, 40])
def test_corrupt_blocks_are_value_errors(cut):
    enc = one_token(np.arange(300), np.ones(300), np.full(300, 5))
    off = enc["posting_offsets"].copy()
    data = enc["posting"][:off[-1] - cut]
    off[-1] -= cut
    with pytest.raises(ValueError):
        decode_posting(off, data, 300)
    with pytest.raises(ValueError):
        decode_posting(enc["posting_offsets"], enc["posting"], 100)     # wrong block count
    bad = enc["posting"].copy()
    bad[8] = 60                                                         # 60-bit deltas
    with pytest.raises(ValueError):
        decode_posting(enc["posting_offsets"], bad, 300)


def test_corrupt_positions_are_value_errors():
    freqs = np.full(10, 2, np.uint32)
    enc = one_token(np.arange(10), freqs, np.full(10, 5), np.tile([1, 3], 10))
    with pytest.raises(ValueError):
        decode_positions(enc["positions"][:-1], enc["position_block_offsets"], freqs)
    with pytest.raises(ValueError):
        decode_positions(enc["positions"], enc["position_block_offsets"], freqs[:5] * 3)


def test_repeated_or_unordered_documents_are_value_errors():
    enc = one_token([3, 7, 9], [1, 1, 1], np.full(10, 5))
    data = enc["posting"].copy()
    data[6] = 0          # second varint delta 4 -> 0: document 3 twice
    with pytest.raises(ValueError, match="repeats"):
        decode_posting(enc["posting_offsets"], data, 3)
    with pytest.raises(ValueError, match="cannot fit"):
        decode_positions(np.zeros(1, np.uint8), np.zeros(1, np.uint32), np.array([10_000], np.uint32))
