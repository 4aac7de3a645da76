"""The writer-side Cython helpers of mini-block pages against numpy."""
import numpy as np
import pytest

from lancefmt.encoding.v2_1 import _chunk_writer


@pytest.mark.parametrize("dt", [np.uint8, np.int16, np.float32, np.int64])
def test_count_runs_matches_numpy_and_stops_past_the_limit(dt):
    rng = np.random.default_rng(3)
    vals = np.repeat(rng.integers(0, 4, 500), rng.integers(1, 9, 500)).astype(dt)
    t = vals.dtype.itemsize * 8
    want = int(np.count_nonzero(vals[1:] != vals[:-1])) + 1
    assert _chunk_writer.count_runs(vals.view(np.uint8), t, len(vals), 10**9) == want
    assert _chunk_writer.count_runs(vals.view(np.uint8), t, len(vals), 5) == 6
    assert _chunk_writer.count_runs(vals.view(np.uint8), t, 0, 5) == 0
    # unaligned input is fine
    raw = np.zeros(vals.nbytes + 1, np.uint8)
    raw[1:] = vals.view(np.uint8)
    assert _chunk_writer.count_runs(raw[1:], t, len(vals), 10**9) == want
    with pytest.raises(ValueError):
        _chunk_writer.count_runs(vals.view(np.uint8), t, len(vals) + 1, 10)


def _page_with_and_without_cython_chunks(monkeypatch, arr, version):
    """The same string page encoded with the one-pass Cython chunking and with the general
    per-chunk Python path (the reference)."""
    import pyarrow as pa  # noqa: F401

    from lancefmt.encoding.v2_1 import miniblock_encoder, value_encoders
    from lancefmt.encoding.v2_1.options import LeafOptions
    from lancefmt.encoding.v2_1.page_encoder import PageInput
    from lancefmt.encoding.v2_1.value_block import value_block

    def encode():
        inp = PageInput([], None, None, value_block(arr), None, len(arr), 0, 0)
        return miniblock_encoder.encode(inp, version, LeafOptions())

    fast = encode()
    with monkeypatch.context() as m:
        m.setattr(value_encoders.VariableEncoder, "page_chunks", lambda self, large: None)
        slow = encode()
    return fast, slow


@pytest.mark.parametrize("version", [(2, 1), (2, 2)])
@pytest.mark.parametrize("kind", ["names", "empty", "mixed", "sliced", "large", "fsst"])
def test_variable_chunks_match_the_general_path(monkeypatch, version, kind):
    import pyarrow as pa

    rng = np.random.default_rng(5)
    if kind == "names":      # FSST-sized page of short strings
        arr = pa.array([f"n-{i % 77}" for i in range(3000)])
    elif kind == "empty":
        arr = pa.array([""] * 5000)
    elif kind == "mixed":    # lengths 0..3000: chunks of every power of two, one-value chunks
        arr = pa.array([b"x" * int(k) for k in rng.integers(0, 3000, 400)], pa.binary())
    elif kind == "sliced":
        arr = pa.array([f"v{i}" for i in range(2000)]).slice(7, 1500)
    elif kind == "large":
        arr = pa.array([f"w{i}" * (i % 9) for i in range(3000)], pa.large_string())
    else:                    # above 32 KiB: FSST, whose compressed strings chunk the same way
        arr = pa.array([f"https://example.com/{i % 300}/item" for i in range(4000)])
    fast, slow = _page_with_and_without_cython_chunks(monkeypatch, arr, version)
    assert fast is not None and slow is not None
    assert fast.encoding == slow.encoding
    assert [bytes(b) for b in fast.buffers] == [bytes(b) for b in slow.buffers]
    if kind == "fsst":
        assert fast.encoding.HasField("mini_block_layout") and \
            fast.encoding.mini_block_layout.value_compression.HasField("fsst")


def test_variable_chunks_refuse_a_value_too_big_for_a_2_1_chunk():
    data = np.zeros(70000, np.uint8)
    offs = np.array([0, 10, 70000], np.int64)
    assert _chunk_writer.assemble_variable(data, offs, 4, False, 4096, 4096, 65535, 32768) is None
    out, meta = _chunk_writer.assemble_variable(data, offs, 4, True, 4096, 4096, (1 << 32) - 1,
                                                1 << 35)
    assert len(meta) == 2 and len(out) == sum(((int(w) >> 4) + 1) * 8 for w in meta)


def test_variable_chunks_check_offsets():
    data = np.zeros(8, np.uint8)
    for offs in ([0, 9], [0, 5, 3], [-1, 2]):
        with pytest.raises(ValueError):
            _chunk_writer.assemble_variable(data, np.array(offs, np.int64), 4, False, 4096, 4096,
                                            65535, 32768)
    with pytest.raises(ValueError):
        _chunk_writer.assemble_variable(data, np.array([0, 1], np.int64), 3, False, 4096, 4096,
                                        65535, 32768)
