"""Local scans of an opened dataset, lancefmt vs pylance side by side (issue 37).

Fixtures (written once with pylance, shared with ``random_access`` and ``dataset_scan``): 2M
rows (int64, float64, int32) in 10 fragments at storage versions 2.0 and 2.2, a 2.0 copy with
stable row ids, and a 2.0 copy with 10% of the rows deleted. Each dataset is opened once in
``setup`` (a service or a training loop holds it open); ``open_scan_2.0`` opens it in every
call.

``track_ratio`` = pylance time / lancefmt time, best of several, measured back to back in one
process (above 1: lancefmt faster). Targets: ``scan_2.0`` >= 1.2, ``scan_2.2`` >= 1.7,
``rowid_stable_2.0`` >= 1.2. ``track_python_calls`` is lancefmt's Python calls per scan, run on
one thread (deterministic: a regression shows without timing; the test suite bounds such
counts in ``tests/dataset/read/test_scan_guards.py``).

Run directly for a one-shot table: ``python -m benchmarks.local_scan`` from ``asv_bench``.
"""
import cProfile
import os
import pstats
import sys

from .common import best_time, speedup

# asv (``--python=same``) drops PYTHONPATH: measure this checkout, not the venv's install
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.isdir(os.path.join(_CHECKOUT, "lancefmt")) and sys.path[:1] != [_CHECKOUT]:
    sys.path.insert(0, _CHECKOUT)

CASES = ["scan_2.0", "scan_2.2", "rowid_stable_2.0", "deleted10_2.0", "open_scan_2.0"]


def fixtures() -> dict:
    from . import dataset_scan, random_access
    from .common import scratch_dir

    paths = random_access.fixtures()
    root = scratch_dir("dataset_scan")
    marker = os.path.join(root, f"ready-{dataset_scan.ROWS}")
    if not os.path.exists(marker):
        dataset_scan.write_fixtures(root)
        open(marker, "w").close()
    paths["deleted10"] = os.path.join(root, "deleted10")
    return paths


def _case(paths, case):
    """(path, to_table keywords, whether every call opens the dataset)."""
    return {"scan_2.0": (paths["2.0"], {}, False),
            "scan_2.2": (paths["2.2"], {}, False),
            "rowid_stable_2.0": (paths["stable_2.0"], {"with_row_id": True}, False),
            "deleted10_2.0": (paths["deleted10"], {}, False),
            "open_scan_2.0": (paths["2.0"], {}, True)}[case]


def callables(paths, case, **extra):
    """(lancefmt's scan, pylance's scan) for ``case`` (``extra``: more ``to_table`` keywords
    for lancefmt)."""
    import lance

    import lancefmt

    path, kw, reopen = _case(paths, case)
    ours_kw = {**kw, **extra}
    if reopen:
        return (lambda: lancefmt.dataset(path).to_table(**ours_kw)), \
            (lambda: lance.dataset(path).to_table(**kw))
    ours, peer = lancefmt.dataset(path), lance.dataset(path)
    return (lambda: ours.to_table(**ours_kw)), (lambda: peer.to_table(**kw))


def python_calls(paths, case) -> int:
    """Python function calls of one lancefmt scan (cProfile's count), the scan on the calling
    thread alone so that every call is counted and the count does not depend on scheduling."""
    fn = callables(paths, case, threads=1)[0]
    fn()
    profile = cProfile.Profile()
    profile.enable()
    fn()
    profile.disable()
    return sum(s[1] for s in pstats.Stats(profile).stats.values())


class LocalScan:
    params = CASES
    param_names = ["case"]
    timeout = 1200
    number = 1
    repeat = 7

    def setup_cache(self):
        return fixtures()

    def setup(self, paths, case):
        self.ours, self.peer = callables(paths, case)
        assert self.ours().equals(self.peer())  # also warms the page cache

    def time_lancefmt(self, paths, case):
        self.ours()

    def time_pylance(self, paths, case):
        self.peer()

    def track_ratio(self, paths, case):
        return speedup(self.ours, self.peer, repeat=9)

    def track_python_calls(self, paths, case):
        return python_calls(paths, case)

    track_ratio.unit = "pylance time / lancefmt time"
    track_python_calls.unit = "calls"


def main():  # pragma: no cover - a one-shot report
    paths = fixtures()
    for case in CASES:
        ours, peer = callables(paths, case)
        assert ours().equals(peer())
        o, p = best_time(ours, repeat=9), best_time(peer, repeat=9)
        print(f"{case:18s} lancefmt {o * 1e3:7.2f} ms  pylance {p * 1e3:7.2f} ms  ratio "
              f"{speedup(ours, peer, repeat=9):5.2f}  calls {python_calls(paths, case)}")


if __name__ == "__main__":  # pragma: no cover
    main()
