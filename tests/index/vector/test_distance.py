"""Brute-force distances: Lance's definitions, its summation order for float32, and ranking
by (distance, row id)."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.index.vector import distance as D


def ref(q, X, metric):
    q64, X64 = q.astype(np.float64), X.astype(np.float64)
    if metric == "l2":
        return ((X64 - q64) ** 2).sum(1)
    if metric == "dot":
        return 1 - X64 @ q64
    if metric == "cosine":
        return 1 - X64 @ q64 / np.linalg.norm(X64, axis=1) / np.linalg.norm(q64)
    return np.unpackbits(np.bitwise_xor(X, q), axis=1).sum(1)


@pytest.mark.parametrize("dim", [3, 8, 13, 16, 17, 37, 128])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("metric", ["l2", "dot", "cosine"])
def test_float_distances_match_their_definition(dim, dtype, metric):
    rng = np.random.default_rng(dim)
    X = rng.standard_normal((50, dim)).astype(dtype)
    q = rng.standard_normal(dim).astype(dtype)
    got = D.distances(q, X, metric)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(q, X, metric), rtol=2e-5, atol=2e-5)


def test_float32_sums_in_lances_lane_order():
    # 17+ values: 16 lanes, tail first; (1e8 + 1) - 1e8 shows the order in float32
    x = np.zeros(17, np.float32)
    y = np.zeros(17, np.float32)
    y[0], y[16] = 1e4, 1.0   # lane 0 holds 1e8, the tail holds 1
    assert D.distances(x, y[None, :], "l2")[0] == np.float32(np.float32(1.0) + np.float32(1e8))
    # at most 16 values: 8 lanes with fused multiply-adds (exact products accumulate)
    a = np.full(16, 1 + 2 ** -12, np.float32)
    got = D.distances(a, a[None, :], "dot")[0]
    lanes = np.float64(a[0]) * a[0] * 2          # each lane: fma(a, a, a*a)
    assert got == np.float32(1) - np.float32(np.float32(lanes) * 8)


def test_uint8_hamming_and_query_truncation():
    X = np.array([[0, 255], [1, 1], [15, 0]], np.uint8)
    q = D.as_query([1.9, 0.2], pa.uint8())
    assert q.tolist() == [1, 0]
    assert D.distances(q, X, "hamming").tolist() == [1 + 8, 1, 3]
    with pytest.raises(D.MetricError, match="does not support UInt8"):
        D.check_metric("l2", pa.uint8())
    with pytest.raises(D.MetricError, match="hamming does not support Float32"):
        D.check_metric("hamming", pa.float32())
    assert D.default_metric(pa.uint8()) == "hamming" and D.default_metric(pa.float16()) == "l2"
    assert D.parse_metric("Euclidean") == "l2"
    with pytest.raises(D.MetricError):
        D.parse_metric("manhattan")


def test_null_rows_and_sliced_columns():
    col = pa.array([[0.0, 0.0], None, [3.0, 4.0], [1.0, 0.0]], pa.list_(pa.float32(), 2)).slice(1)
    d = D.column_distances([np.zeros(2, np.float32)], col, "l2", pa.float32())
    assert np.isnan(d[0]) and d[1:].tolist() == [25.0, 1.0]


def test_multivector_rows_sum_each_querys_nearest_vector():
    t = pa.list_(pa.list_(pa.float32(), 2))
    col = pa.array([[[0, 0], [5, 5]], [], None, [[1, 1]]], t)
    qs = [np.array([0, 0], np.float32), np.array([4, 4], np.float32)]
    d = D.column_distances(qs, col, "l2", pa.float32())
    assert d[0] == 0 + 2 and np.isnan(d[1]) and np.isnan(d[2]) and d[3] == 2 + 18


def test_ranking_breaks_ties_by_row_id_across_the_cut():
    dist = np.array([0.5, 0.1, 0.5, np.nan, 0.5, 0.2], np.float32)
    ids = np.array([9, 8, 3, 1, 5, 7], np.uint64)
    assert D.ranked(dist, ids, 3).tolist() == [1, 5, 2]      # the 0.5 tie goes to row id 3
    assert sorted(D.smallest(dist, 3).tolist()) == [0, 1, 2, 4, 5]
    assert D.ranked(dist, ids).tolist() == [1, 5, 2, 4, 0]   # NaN never ranks
