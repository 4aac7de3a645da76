"""The FSST encoder (Cython) against the FSST decoder (Cython) the reader uses, and the
symbol-table blob against Lance's layout."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from lancefmt.encoding.v2_1 import fsst_encoder as fe
from lancefmt.encoding.v2_1._fsst import fsst_decode
from lancefmt.encoding.v2_1._fsst_encode import count_codes, fsst_encode
from lancefmt.encoding.v2_1.compressive import FsstTable
from lancefmt.encoding.v2_1.value_block import value_block


def _roundtrip(strings):
    block = value_block(pa.array(strings, pa.binary()))
    vals, lens = fe.build_table(block)
    offs, data = fsst_encode(np.ascontiguousarray(block.data), block.offsets, vals, lens)
    table = FsstTable(fe.serialise_table(vals, lens), "t")
    back_offs, back, bad = fsst_decode(data, offs, table.symbols, table.lens)
    assert bad == -1
    assert np.array_equal(back_offs, block.offsets)
    assert back.tobytes() == block.data.tobytes()
    return len(data), len(block.data)


def test_urls_compress_to_a_fraction_and_round_trip():
    rng = np.random.default_rng(0)
    urls = [f"https://shop.example.com/item/{int(v)}?ref=home".encode()
            for v in rng.integers(0, 10**7, 5000)]
    packed, raw = _roundtrip(urls)
    assert packed < 0.4 * raw


def test_random_bytes_escape_and_round_trip():
    rng = np.random.default_rng(1)
    blobs = [rng.integers(0, 256, int(k), dtype=np.uint8).tobytes()
             for k in rng.integers(0, 40, 2000)]
    packed, raw = _roundtrip(blobs)
    assert packed <= 2 * raw


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=30), max_size=80))
def test_any_strings_round_trip(strings):
    _roundtrip(strings)


def test_table_blob_has_lance_layout():
    vals = np.array([0x6F6F, 0x61], dtype=np.uint64)
    lens = np.array([2, 1], dtype=np.uint8)
    blob = fe.serialise_table(vals, lens)
    assert len(blob) == 8 + 256 * 8 + 256
    header = int.from_bytes(blob[:8], "little")
    assert header >> 32 == 0x46535354 and header & 0xFF == 2 and (header >> 24) & 1
    assert blob[8:24] == vals.astype("<u8").tobytes() and blob[24:26] == b"\x02\x01"
    assert set(blob[26:]) == {0}


def test_longest_symbol_wins():
    vals = np.array([0x61, 0x6161, 0x616161], dtype=np.uint64)   # a, aa, aaa
    lens = np.array([1, 2, 3], dtype=np.uint8)
    offs, data = fsst_encode(np.frombuffer(b"aaaaaaab", np.uint8), np.array([0, 8]), vals, lens)
    # aaa aaa a + escaped b
    assert data.tobytes() == bytes([2, 2, 0, 255, ord("b")])
    c1, c2 = count_codes(np.frombuffer(b"aaaaaaab", np.uint8), np.array([0, 8]), vals, lens)
    assert c1[2] == 2 and c1[0] == 1 and c1[256 + ord("b")] == 1
    assert c2[2 * 512 + 2] == 1 and c2[2 * 512 + 0] == 1 and c2[0 * 512 + 256 + ord("b")] == 1


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        fsst_encode(np.zeros(4, np.uint8), np.array([0, 9]), np.zeros(0, np.uint64),
                    np.zeros(0, np.uint8))
    with pytest.raises(ValueError):
        fsst_encode(np.zeros(4, np.uint8), np.array([0, 3, 2]), np.zeros(0, np.uint64),
                    np.zeros(0, np.uint8))
    with pytest.raises(ValueError):
        fsst_encode(np.zeros(4, np.uint8), np.array([0, 4]), np.zeros(1, np.uint64),
                    np.zeros(1, np.uint8))   # a symbol of length 0


def test_incompressible_pages_are_left_plain():
    rng = np.random.default_rng(2)
    block = value_block(pa.array([rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
                                  for _ in range(1000)], pa.binary()))
    assert fe.compress_block(block) is None


def _greedy_twin(data: bytes, vals, lens) -> bytes:
    """Pure-Python greedy longest match, for checking. Among equal symbols the later code
    (the first for single bytes) is used; any of them decodes the same."""
    codes = {}
    for i, (v, n) in enumerate(zip(vals, lens)):
        sym = int(v).to_bytes(8, "little")[:int(n)]
        if n > 1 or sym not in codes:
            codes[sym] = i
    out, p = bytearray(), 0
    while p < len(data):
        for n in range(min(8, len(data) - p), 0, -1):
            c = codes.get(data[p:p + n])
            if c is not None:
                out.append(c)
                p += n
                break
        else:
            out += bytes([255, data[p]])
            p += 1
    return bytes(out)


def _symbols(words):
    vals = np.array([int.from_bytes(w, "little") for w in words], dtype=np.uint64)
    return vals, np.array([len(w) for w in words], dtype=np.uint8)


def test_many_symbols_sharing_a_prefix_match_longest_first():
    # "name-1", "name-12", ...: every symbol starts with "na" (one long chain per prefix before)
    words = [b"na", b"name-", b"e-"] + [f"me-{i}".encode()[:8] for i in range(120)] + \
        [f"name-{i}".encode()[:8] for i in range(120)]
    vals, lens = _symbols(words)
    text = b"".join(f"name-{i % 300}".encode() for i in range(2000))
    offs, data = fsst_encode(np.frombuffer(text, np.uint8), np.array([0, len(text)]), vals, lens)
    assert data.tobytes() == _greedy_twin(text, vals, lens)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=8), min_size=1, max_size=255),
       st.binary(max_size=200))
def test_encoder_is_greedy_longest_match(words, text):
    words = (words + words[:3])[:255]   # repeated symbols too
    vals, lens = _symbols(words)
    offs, data = fsst_encode(np.frombuffer(text, np.uint8), np.array([0, len(text)]), vals, lens)
    assert data.tobytes() == _greedy_twin(text, vals, lens)


def _numpy_candidates(cv, cl, c1, c2):
    """The candidates as fsst_encoder built them with numpy before pair_candidates (the
    reference: the Cython pass must choose the same tables, so files stay the same)."""
    used = np.flatnonzero(c1)
    cand_v, cand_l = [cv[used]], [cl[used]]
    cand_g = [c1[used].astype(np.int64) * cl[used]]
    pairs = np.flatnonzero(c2)
    if len(pairs):
        a, b = pairs // 512, pairs % 512
        la, lb = cl[a], cl[b]
        keep = la < 8
        a, b, la, lb, cnt = a[keep], b[keep], la[keep], lb[keep], c2[pairs[keep]]
        lb = np.minimum(lb, 8 - la)
        full = lb >= 8
        sh = np.where(full, 0, lb * 8).astype(np.uint64)
        mask = np.where(full, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << sh) - np.uint64(1))
        cand_v.append(cv[a] | ((cv[b] & mask.astype(np.uint64)) << (la * 8).astype(np.uint64)))
        cand_l.append(la + lb)
        cand_g.append(cnt.astype(np.int64) * (la + lb))
    return np.concatenate(cand_v), np.concatenate(cand_l), np.concatenate(cand_g)


@pytest.mark.parametrize("seed", range(4))
def test_pair_candidates_equal_the_numpy_reference(seed):
    from lancefmt.encoding.v2_1._fsst_encode import pair_candidates

    rng = np.random.default_rng(seed)
    words = [bytes(rng.integers(97, 103, rng.integers(1, 12)).astype(np.uint8)) for _ in range(40)]
    strings = [b"".join(rng.choice(words, rng.integers(1, 6))) for _ in range(3_000)]
    block = value_block(pa.array(strings, pa.binary()))
    data, offs = fe._sample(block)
    vals, lens = np.zeros(0, np.uint64), np.zeros(0, np.uint8)
    for _ in range(fe.GENERATIONS):  # every generation's tables, longer symbols each time
        c1, c2 = count_codes(data, offs, vals, lens)
        cv, cl = fe._code_symbols(vals, lens)
        got = pair_candidates(cv, cl, c1, c2)
        want = _numpy_candidates(cv, cl, c1, c2)
        for g, w in zip(got, want):
            assert np.array_equal(g, w)
        vals, lens = fe._next_table(vals, lens, c1, c2)
    assert len(vals) > 50 and lens.max() >= 8
