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
