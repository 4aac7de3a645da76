"""The FastLanes kernels against a pure-Python twin written straight from the format
description (lance_v21_encodings.md §2), for every word type and every bit width."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lancefmt.encoding.v2_1 import _fastlanes

FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]
DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
CASES = [(t, w) for t in (8, 16, 32, 64) for w in range(t + 1)]


def twin_unpack(packed: bytes, t: int, w: int) -> list[int]:
    """One block, value by value: lane streams of W-bit rows, rows mapped to logical indices."""
    lanes = 1024 // t
    words = [int.from_bytes(packed[i * t // 8:(i + 1) * t // 8], "little")
             for i in range(len(packed) * 8 // t)]
    out = [0] * 1024
    for lane in range(lanes):
        stream = 0
        for k in range(w):
            stream |= words[k * lanes + lane] << (k * t)
        for r in range(t):
            idx = FL_ORDER[r // 8] * 16 + (r % 8) * 128 + lane
            out[idx] = (stream >> (r * w)) & ((1 << w) - 1)
    return out


def _random_block(rng, t, w):
    hi = (1 << w) if w < 64 else None
    if w == 0:
        return np.zeros(1024, DTYPES[t])
    if hi is None:
        return rng.integers(0, np.iinfo(np.uint64).max, 1024, dtype=np.uint64, endpoint=True)
    return rng.integers(0, hi, 1024, dtype=np.uint64).astype(DTYPES[t])


@pytest.mark.parametrize("t,w", CASES)
def test_unpack_matches_twin(t, w):
    rng = np.random.default_rng(t * 100 + w)
    packed = rng.integers(0, 256, 128 * w, dtype=np.uint8)
    got = _fastlanes.unpack(packed, t, w, 1)
    assert got.dtype == DTYPES[t]
    assert [int(x) for x in got] == twin_unpack(packed.tobytes(), t, w)


@pytest.mark.parametrize("t,w", CASES)
def test_pack_round_trip_and_random_access(t, w):
    rng = np.random.default_rng(7 + t * 100 + w)
    vals = np.concatenate([_random_block(rng, t, w), _random_block(rng, t, w)])
    packed = _fastlanes.pack(vals, t, w)
    assert packed.size == 2 * 128 * w
    assert np.array_equal(_fastlanes.unpack(packed, t, w, 2), vals)
    idx = rng.integers(0, 2048, 200).astype(np.int64)
    assert np.array_equal(_fastlanes.take(packed, t, w, idx), vals[idx])


def test_worked_example_u8_width3():
    # lance_v21_encodings.md §2.3: v[i] = (i // 128) % 8 packed at W = 3 (real pylance bytes)
    v = ((np.arange(1024) // 128) % 8).astype(np.uint8)
    packed = _fastlanes.pack(v, 8, 3)
    assert packed.size == 384
    assert packed[0] == 0x88 and packed[128] == 0xC6
    # and the u32 layout at W = 10: v[0] | v[128] << 10 | v[256] << 20 | (v[384] & 3) << 30
    p32 = _fastlanes.pack(v.astype(np.uint32), 32, 10)
    assert int(p32[:4].view(np.uint32)[0]) == (1 << 10) | (2 << 20) | (3 << 30)


@settings(max_examples=40, deadline=None)
@given(t=st.sampled_from([8, 16, 32, 64]), data=st.data())
def test_pack_unpack_hypothesis(t, data):
    w = data.draw(st.integers(0, t))
    nblocks = data.draw(st.integers(1, 3))
    vals = data.draw(st.lists(st.integers(0, (1 << w) - 1), min_size=1024 * nblocks,
                              max_size=1024 * nblocks))
    arr = np.array(vals, dtype=np.uint64).astype(DTYPES[t])
    packed = _fastlanes.pack(arr, t, w)
    assert np.array_equal(_fastlanes.unpack(packed, t, w, nblocks), arr)


def test_pack_keeps_only_low_bits():
    vals = np.full(1024, 0xFF, np.uint8)
    assert np.all(_fastlanes.unpack(_fastlanes.pack(vals, 8, 3), 8, 3, 1) == 7)


def test_kernel_checks_ranges_up_front():
    with pytest.raises(ValueError, match="need"):
        _fastlanes.unpack(np.zeros(12, np.uint8), 64, 40, 1)
    with pytest.raises(ValueError, match="bit width"):
        _fastlanes.unpack(np.zeros(12, np.uint8), 8, 9, 1)
    with pytest.raises(ValueError, match="word width"):
        _fastlanes.unpack(np.zeros(12, np.uint8), 12, 1, 1)
    with pytest.raises(ValueError, match="out of range"):
        _fastlanes.take(np.zeros(128, np.uint8), 8, 1, np.array([1024], np.int64))
    with pytest.raises(ValueError, match="multiple of 1024"):
        _fastlanes.pack(np.zeros(10, np.uint8), 8, 1)
    out = np.empty(1024, np.uint16)
    with pytest.raises(ValueError, match="output"):
        _fastlanes.unpack_into(np.zeros(128, np.uint8), 8, 1, 1, out)
