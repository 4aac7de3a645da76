"""HNSW construction (``_hnsw.build``, ``hnsw_build.build_graphs``) without a dataset: the
graphs' invariants and quality, and counted guards that the Python work per partition stays
constant whatever its rows (the insertion loop is Cython without the GIL)."""
import sys
import threading

import numpy as np
import pytest

from lancefmt.index.vector import _hnsw, hnsw_build, ivf
from lancefmt.io.cores import core_limit


def clustered(rng, n, dim=16, k=8):
    centers = rng.standard_normal((k, dim)).astype(np.float32) * 4
    return np.ascontiguousarray(centers[rng.integers(0, k, n)] +
                                rng.standard_normal((n, dim)).astype(np.float32))


def python_calls(fn):
    """Python and builtin calls made by ``fn()`` on this thread."""
    count = [0]

    def prof(frame, event, arg):
        if event in ("call", "c_call"):
            count[0] += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count[0]


@pytest.mark.parametrize("metric", [0, 1])
def test_graph_invariants_and_recall(metric):
    rng = np.random.default_rng(5)
    everything = clustered(rng, 1540)
    if metric:
        everything /= np.linalg.norm(everything, axis=1, keepdims=True)
    x, queries = np.ascontiguousarray(everything[:1500]), everything[1500:]   # queries: not nodes
    m, ef, max_level = 8, 60, 5
    levels, entry = _hnsw.build(x, metric, m, ef, max_level, _hnsw.random_levels(len(x), m, max_level, 1))
    assert entry == 0 and len(levels) == max_level
    for L, (members, offsets, nbrs, dists) in enumerate(levels):
        cap = 2 * m if L == 0 else m
        deg = np.diff(offsets)
        assert offsets[0] == 0 and offsets[-1] == nbrs.size == dists.size
        assert (deg <= cap).all() and (members[1:] > members[:-1]).all()
        if L == 0:
            assert members.size == len(x) and (deg >= 1).all()
        owner = members[np.repeat(np.arange(members.size), deg)]
        assert (nbrs != owner).all() and np.isin(nbrs, members).all()
        a, b = x[owner], x[nbrs]
        want = ((a - b) ** 2).sum(1) if metric == 0 else 1 - (a * b).sum(1)
        assert np.allclose(dists, want, rtol=1e-4, atol=1e-4)
    # the graph finds the true nearest neighbours (search on the full vectors)
    g = _hnsw.Graph([lv[1] for lv in levels], [lv[2] for lv in levels],
                    [None] + [lv[0] for lv in levels[1:]], entry, len(x))
    hits = 0
    for q in queries:
        q = np.ascontiguousarray(q, np.float32)
        nodes, _ = _hnsw.search(g, 0, metric, q, x, None, 0.0, 0, 8, 40, 10, np.ones(1, np.uint8),
                                False, -np.inf, np.inf)
        d = ((x - q) ** 2).sum(1) if metric == 0 else -(x @ q)
        hits += len(set(nodes.tolist()) & set(np.argsort(d)[:10].tolist()))
    assert hits / (10 * len(queries)) >= 0.97


def test_kernel_python_calls_do_not_grow_with_rows():
    rng = np.random.default_rng(7)
    calls = []
    for n in (200, 3000):
        x = clustered(rng, n)
        lv = _hnsw.random_levels(n, 8, 5, 1)
        calls.append(python_calls(lambda: _hnsw.build(x, 0, 8, 40, 5, lv)))
    assert calls[0] == calls[1] > 5    # numpy's Python functions, a few per level


def test_build_graphs_python_calls_per_partition_are_constant(monkeypatch):
    """Partitions of 50 rows or of 1,000: the same Python calls (one thread, so the profiler
    sees them all), and one kernel call per non-empty partition."""
    rng = np.random.default_rng(8)
    built = []
    real = _hnsw.build

    class Counting:
        random_levels = staticmethod(_hnsw.random_levels)

        @staticmethod
        def build(*args):
            built.append(len(args[0]))
            return real(*args)

    monkeypatch.setattr(hnsw_build, "_hnsw", Counting)
    calls = []
    for rows in (50, 1000):
        x = clustered(rng, 4 * rows)
        offsets = np.array([0, 1, 2, 2, 3]) * rows
        lengths = np.array([rows, rows, 0, rows, rows])
        with core_limit(1):
            calls.append(python_calls(
                lambda: hnsw_build.build_graphs(x, offsets, lengths, "l2", {"m": 6}, 3)))
    assert calls[0] == calls[1]
    assert sorted(built) == [50] * 4 + [1000] * 4


def test_each_in_parallel_runs_every_item_once_on_the_pool():
    seen = []
    lock = threading.Lock()

    def work(i):
        with lock:
            seen.append(i)

    ivf.each_in_parallel(range(40), work)
    assert sorted(seen) == list(range(40))
    ivf.each_in_parallel([], work)
    assert len(seen) == 40


def test_each_in_parallel_keeps_to_the_process_core_share():
    """Inside a Spark task's share (``core_limit``) the partitions are built on that many
    threads, not one per core of the host."""
    threads = set()
    lock = threading.Lock()

    def work(_):
        with lock:
            threads.add(threading.get_ident())

    with core_limit(1):
        ivf.each_in_parallel(range(64), work)
    assert len(threads) == 1
