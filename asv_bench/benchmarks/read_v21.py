"""Reading pylance-default (file version 2.2) datasets: lancefmt vs pylance on the same data.

setup_cache writes one 2M-row dataset with pylance 14's defaults (int64 ids -> bit-packed,
float64, int32 in [0, 1000) -> bit-packed, a string column -> FSST), no storage version given.
Cases (``track_*_ratio`` = pylance time / lancefmt time, interleaved in one process; above 1:
lancefmt faster):

* ``scan``: ``to_table()`` of the whole dataset -- target >= 0.8;
* ``bitpacked``: ``to_table(columns=["i64"])``, a bit-packed int64 column alone -- target >= 1.0;
* ``take``: ``take`` of 1,000 random rows (all columns) -- target >= 1.0.

Run alone: ``python -m benchmarks.read_v21`` from ``asv_bench`` prints the three ratios.
"""
import os
import shutil

import numpy as np
import pyarrow as pa

from .common import scratch_dir, speedup

ROWS = 2_000_000
CASES = ["scan", "bitpacked", "take"]


def _table(rows, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({
        "i64": pa.array(np.arange(rows, dtype=np.int64)),
        "f64": pa.array(rng.normal(size=rows)),
        "i32": pa.array(rng.integers(0, 1000, rows).astype(np.int32)),
        "s": pa.array(np.char.add("name-", rng.integers(0, 10**7, rows).astype(str))
                      .astype(object)),
    })


def write_fixture(uri, rows=ROWS):
    import lance

    tmp = uri + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    lance.write_dataset(_table(rows), tmp)  # pylance's defaults: file version 2.2
    os.replace(tmp, uri)


def _fixture():
    uri = os.path.join(scratch_dir("read_v21"), f"default-{ROWS}")
    if not os.path.exists(uri):
        write_fixture(uri)
    return uri


def _callables(uri, case):
    import lance

    import lancefmt

    ours_ds, peer_ds = lancefmt.dataset(uri), lance.dataset(uri)
    if case == "scan":
        return (lambda: ours_ds.to_table()), (lambda: peer_ds.to_table())
    if case == "bitpacked":
        return (lambda: ours_ds.to_table(columns=["i64"])), \
            (lambda: peer_ds.to_table(columns=["i64"]))
    rows = np.random.default_rng(1).choice(ROWS, 1000, replace=False)
    return (lambda: ours_ds.take(rows)), (lambda: peer_ds.take(rows))


class ReadV21:
    params = CASES
    param_names = ["case"]
    timeout = 1200
    number = 1
    repeat = 5

    def setup_cache(self):
        return _fixture()

    def setup(self, uri, case):
        self.ours, self.peer = _callables(uri, case)
        self.ours()  # warm the page cache
        self.peer()

    def time_lancefmt(self, uri, case):
        self.ours()

    def time_pylance(self, uri, case):
        self.peer()

    def track_ratio(self, uri, case):
        return speedup(self.ours, self.peer, repeat=7)

    track_ratio.unit = "x (pylance time / lancefmt time)"


if __name__ == "__main__":
    path = _fixture()
    for c in CASES:
        ours, peer = _callables(path, c)
        print(f"{c:10s} ratio {speedup(ours, peer, repeat=7):.2f}")
