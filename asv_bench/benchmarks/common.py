"""Helpers shared by the benchmark modules.

Every comparison benchmark has ``time_*`` methods for lancefmt and for pylance (the peer) on the
same files, plus a ``track_*_ratio`` method that times both in the same process, one after the
other, and returns ``peer_time / lancefmt_time`` (above 1 means lancefmt is faster). asv reports
the ratio as a tracked number, so the target lives in the benchmark, not in a unit test.
"""
import os
import tempfile
import time


def best_time(fn, repeat=5, warmup=1):
    """Best wall time of ``fn()`` over ``repeat`` runs, after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def speedup(ours, peer, repeat=5, warmup=1):
    """peer time / our time, measured back to back (interleaved) in one process."""
    ours_best = peer_best = float("inf")
    for _ in range(warmup):
        ours()
        peer()
    for _ in range(repeat):
        t0 = time.perf_counter()
        ours()
        ours_best = min(ours_best, time.perf_counter() - t0)
        t0 = time.perf_counter()
        peer()
        peer_best = min(peer_best, time.perf_counter() - t0)
    return peer_best / ours_best


def scratch_dir(name):
    """A stable scratch directory for benchmark fixtures (reused across asv processes)."""
    root = os.environ.get("LANCEFMT_BENCH_DIR") or os.path.join(tempfile.gettempdir(), "lancefmt-bench")
    path = os.path.join(root, name)
    os.makedirs(path, exist_ok=True)
    return path
