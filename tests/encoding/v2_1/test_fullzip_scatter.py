"""Full-zip pages copy their values in bounded chunks (a page of large strings once needed
~25x its size in index arrays); the bytes are those of a one-shot copy."""
import numpy as np
import pytest

from lancefmt.encoding.v2_1 import fullzip_encoder
from lancefmt.encoding.v2_1.fullzip_encoder import scatter_values


@pytest.mark.parametrize("count", [3, 500])
@pytest.mark.parametrize("chunk", [1, 700, 1 << 23])
def test_scatter_matches_a_plain_copy(monkeypatch, count, chunk):
    monkeypatch.setattr(fullzip_encoder, "SCATTER_CHUNK_BYTES", chunk)
    rng = np.random.default_rng(count)
    lens = rng.integers(0, 300, count)
    src_starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    data = rng.integers(0, 256, int(lens.sum()), dtype=np.uint8)
    gaps = rng.integers(0, 9, count)
    dst_starts = np.cumsum(gaps + np.concatenate([[0], lens[:-1]]))
    out = np.zeros(int(dst_starts[-1] + lens[-1]), np.uint8)
    scatter_values(out, data, src_starts, dst_starts, lens)
    want = np.zeros_like(out)
    for s, d, n in zip(src_starts, dst_starts, lens):
        want[d:d + n] = data[s:s + n]
    assert np.array_equal(out, want)
