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


def _blocks_of_mixed_widths(rng, t, n):
    """``n`` values whose 1024-blocks have different maxima (one all-zero block, one full)."""
    dt = DTYPES[t]
    vals = np.zeros(n, dt)
    for b in range(0, n, 1024):
        w = int(rng.integers(0, t + 1)) if b else t
        blk = _random_block(rng, t, w)[:min(1024, n - b)]
        vals[b:b + len(blk)] = blk
    if n > 2048:
        vals[1024:2048] = 0
    return vals


@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("n", [1, 1023, 1024, 5000])
def test_block_widths_are_bit_lengths_of_block_maxima(t, n):
    vals = _blocks_of_mixed_widths(np.random.default_rng(t + n), t, n)
    got = _fastlanes.block_widths(vals.view(np.uint8), t, n)
    want = [int(vals[b:b + 1024].max()).bit_length() for b in range(0, n, 1024)]
    assert got.tolist() == want


@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("n", [1, 1500, 4096])
def test_pack_blocks_matches_per_block_pack(t, n):
    """Both output layouts of the whole-page kernel, rebuilt from the one-block kernel."""
    vals = _blocks_of_mixed_widths(np.random.default_rng(7 * t + n), t, n)
    widths = _fastlanes.block_widths(vals.view(np.uint8), t, n)
    padded = np.zeros(len(widths) * 1024, DTYPES[t])
    padded[:n] = vals
    blocks = [np.concatenate([np.array([w], DTYPES[t]).view(np.uint8),
                              _fastlanes.pack(padded[k * 1024:(k + 1) * 1024], t, int(w))])
              for k, w in enumerate(widths)]
    data, starts = _fastlanes.pack_blocks(vals.view(np.uint8), t, n, widths)
    assert data.tobytes() == b"".join(b.tobytes() for b in blocks)
    assert starts.tolist() == np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).tolist()
    for large in (False, True):
        chunks, meta = _fastlanes.pack_blocks(vals.view(np.uint8), t, n, widths, True, large)
        want, words = b"", []
        for k, b in enumerate(blocks):
            head = (0).to_bytes(2, "little") + len(b).to_bytes(4 if large else 2, "little")
            head += b"\xfe" * (8 - len(head))
            chunk = head + b.tobytes() + b"\xfe" * (-len(b) % 8)
            want += chunk
            words.append(((len(chunk) // 8 - 1) << 4) | (10 if k + 1 < len(blocks) else 0))
        assert chunks.tobytes() == want
        assert meta.tolist() == words


def test_pack_blocks_checks_its_inputs():
    vals = np.arange(2048, dtype=np.uint16)
    with pytest.raises(ValueError):
        _fastlanes.pack_blocks(vals.view(np.uint8), 16, 2048, np.array([11], np.uint8))
    with pytest.raises(ValueError):
        _fastlanes.pack_blocks(vals.view(np.uint8), 16, 2048, np.array([11, 17], np.uint8))
    with pytest.raises(ValueError):
        _fastlanes.block_widths(vals.view(np.uint8), 16, 4096)
    # a misaligned view is copied, not read unaligned
    raw = np.zeros(2 * 2048 + 1, np.uint8)
    raw[1:] = vals.view(np.uint8)
    assert _fastlanes.block_widths(raw[1:], 16, 2048).tolist() == [10, 11]
