"""Comparing two libraries' nearest-neighbour answers where equal distances may come in either
order: the distances must agree position by position, and the rows must agree within every run
of tied distances. The run that reaches the k-th answer may hold different rows, since rows past
k can tie with it too (PQ and SQ codes make exact ties common)."""
import numpy as np


def assert_same_ranking(a, b, rtol=1e-5, atol=0.0):
    """``a``/``b``: tables with ``id`` and ``_distance``; ties compared within (rtol, atol)."""
    ids_a, ids_b = a["id"].to_pylist(), b["id"].to_pylist()
    dist_a, dist_b = a["_distance"].to_numpy(), b["_distance"].to_numpy()
    assert len(ids_a) == len(ids_b), (ids_a, ids_b)
    np.testing.assert_allclose(dist_a, dist_b, rtol=rtol, atol=atol)
    start, n = 0, len(ids_a)
    while start < n:
        end = start + 1
        while end < n and np.isclose(dist_a[end], dist_a[start], rtol=rtol, atol=atol):
            end += 1
        if end < n:   # a run inside the answer: the same rows, in any order
            assert set(ids_a[start:end]) == set(ids_b[start:end]), (start, ids_a, ids_b)
        start = end
