"""Random access (issue 16): take of random rows, and scans with ``_rowid`` on a dataset with
stable row ids; lancefmt vs pylance on the same dataset, and vs Parquet (pyarrow) on the same
data.

Fixtures (written once with pylance): 2M rows (int64, float64, int32) in 10 fragments, at
storage versions 2.0 and 2.2, one copy of each with stable row ids; and the same table as one
Parquet file written with pyarrow's defaults (its default row-group size). Datasets are opened once in ``setup`` (a training loop or
a service holds its dataset open); each take reads only the wanted rows.

``track_*_ratio`` = other time / lancefmt time, measured back to back, best of several (above 1:
lancefmt faster). Targets: take 1,000 rows >= 1.5 (2.0) / >= 1.0 (2.2); take 100,000 rows >=
1.0; scan with ``_rowid`` >= 1.2; Parquet row-group takes >= 20.

Run directly for a one-shot table: ``python -m benchmarks.random_access`` from ``asv_bench``.
"""
import os
import shutil
import sys

import numpy as np
import pyarrow as pa

from .common import best_time, scratch_dir, speedup

# asv (``--python=same``) drops PYTHONPATH, so the shared venv's editable install would be
# measured instead of this checkout: put the checkout holding these benchmarks first.
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.isdir(os.path.join(_CHECKOUT, "lancefmt")) and sys.path[:1] != [_CHECKOUT]:
    sys.path.insert(0, _CHECKOUT)

ROWS = 2_000_000
FRAGMENTS = 10
VERSIONS = ["2.0", "2.2"]


def _table(rows=ROWS, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({
        "i64": pa.array(np.arange(rows, dtype=np.int64)),
        "f64": pa.array(rng.random(rows)),
        "i32": pa.array(rng.integers(0, 1 << 30, rows, dtype=np.int32)),
    })


def fixtures(rows=ROWS) -> dict:
    import lance
    import pyarrow.parquet as pq

    root = scratch_dir("random_access")
    marker = os.path.join(root, f"ready-{rows}")
    paths = {}
    for v in VERSIONS:
        paths[v] = os.path.join(root, f"plain_{v}")
        paths[f"stable_{v}"] = os.path.join(root, f"stable_{v}")
    paths["parquet"] = os.path.join(root, "data-defaults.parquet")
    if not os.path.exists(paths["parquet"] + ".ready"):
        pq.write_table(_table(rows), paths["parquet"])  # pyarrow's default row groups
        open(paths["parquet"] + ".ready", "w").close()
    if os.path.exists(marker):
        return paths
    t = _table(rows)
    for v in VERSIONS:
        for key, stable in ((v, False), (f"stable_{v}", True)):
            shutil.rmtree(paths[key], ignore_errors=True)
            lance.write_dataset(t, paths[key], max_rows_per_file=rows // FRAGMENTS,
                                data_storage_version=v, enable_stable_row_ids=stable)
    open(marker, "w").close()
    return paths


class ParquetTaker:
    """Rows by index from a Parquet file the usual pyarrow way: read the row groups holding
    wanted rows (projected columns only, one ``read_row_groups`` call), take the rows."""

    def __init__(self, path):
        import pyarrow.parquet as pq

        self.file = pq.ParquetFile(path)
        md = self.file.metadata
        self.starts = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])

    def take(self, indices, columns=None):
        idx = np.asarray(indices, dtype=np.int64)
        group_of = np.searchsorted(self.starts, idx, side="right") - 1
        groups = np.unique(group_of)
        table = self.file.read_row_groups(groups.tolist(), columns=columns)
        sizes = self.starts[groups + 1] - self.starts[groups]
        first_in_table = dict(zip(groups.tolist(), (np.cumsum(sizes) - sizes).tolist()))
        shift = np.array([first_in_table[g] - self.starts[g] for g in groups.tolist()])
        return table.take(pa.array(idx + shift[np.searchsorted(groups, group_of)]))


def random_rows(n, total=ROWS, seed=16):
    return np.sort(np.random.default_rng(seed).choice(total, n, replace=False))


class Take:
    params = (VERSIONS, [1_000, 100_000])
    shuffled = False  # the indices in ascending order
    param_names = ["data_storage_version", "rows"]
    timeout = 1800
    number = 1
    repeat = 7

    def setup_cache(self):
        return fixtures()

    def setup(self, paths, version, rows):
        import lance

        import lancefmt

        assert lancefmt.__file__.startswith(_CHECKOUT), lancefmt.__file__
        self.ours = lancefmt.dataset(paths[version])
        self.peer = lance.dataset(paths[version])
        self.parquet = ParquetTaker(paths["parquet"])
        self.idx = random_rows(rows)
        if self.shuffled:
            self.idx = np.random.default_rng(5).permutation(self.idx)
        got = self.ours.take(self.idx)
        assert got.equals(self.peer.take(self.idx))
        assert got.equals(self.parquet.take(self.idx))

    def time_lancefmt_take(self, paths, version, rows):
        self.ours.take(self.idx)

    def time_pylance_take(self, paths, version, rows):
        self.peer.take(self.idx)

    def time_parquet_take(self, paths, version, rows):
        self.parquet.take(self.idx)

    def track_take_ratio(self, paths, version, rows):
        return speedup(lambda: self.ours.take(self.idx), lambda: self.peer.take(self.idx), repeat=9)

    def track_parquet_ratio(self, paths, version, rows):
        return speedup(lambda: self.ours.take(self.idx), lambda: self.parquet.take(self.idx),
                       repeat=9)

    track_take_ratio.unit = "pylance time / lancefmt time"
    track_parquet_ratio.unit = "parquet time / lancefmt time"


class ShuffledTake(Take):
    """The same takes with the indices in random order (a shuffled training read asks for
    rows this way). No target; reported beside the sorted takes."""
    shuffled = True


class RowIdScan:
    params = VERSIONS
    param_names = ["data_storage_version"]
    timeout = 1800
    number = 1
    repeat = 7

    def setup_cache(self):
        return fixtures()

    def setup(self, paths, version):
        import lance

        import lancefmt

        self.ours = lancefmt.dataset(paths[f"stable_{version}"])
        self.peer = lance.dataset(paths[f"stable_{version}"])
        got = self.ours.to_table(with_row_id=True)
        assert got.equals(self.peer.to_table(with_row_id=True))

    def time_lancefmt_scan_rowid(self, paths, version):
        self.ours.to_table(with_row_id=True)

    def time_pylance_scan_rowid(self, paths, version):
        self.peer.to_table(with_row_id=True)

    def track_scan_rowid_ratio(self, paths, version):
        return speedup(lambda: self.ours.to_table(with_row_id=True),
                       lambda: self.peer.to_table(with_row_id=True), repeat=9)

    track_scan_rowid_ratio.unit = "pylance time / lancefmt time"


def main():  # pragma: no cover - a one-shot report
    paths = fixtures()
    for version in VERSIONS:
        for rows in (1_000, 100_000):
            b = Take()
            b.setup(paths, version, rows)
            ours = best_time(lambda: b.ours.take(b.idx), repeat=9)
            peer = best_time(lambda: b.peer.take(b.idx), repeat=9)
            pq = best_time(lambda: b.parquet.take(b.idx), repeat=3)
            print(f"take {rows:>7} rows {version}: lancefmt {ours * 1e3:7.2f} ms  pylance "
                  f"{peer * 1e3:7.2f} ms  parquet {pq * 1e3:8.2f} ms  | ratio "
                  f"{b.track_take_ratio(paths, version, rows):5.2f}  parquet ratio "
                  f"{b.track_parquet_ratio(paths, version, rows):6.1f}")
        for rows in (1_000, 100_000):
            b = ShuffledTake()
            b.setup(paths, version, rows)
            ours = best_time(lambda: b.ours.take(b.idx), repeat=9)
            print(f"take {rows:>7} shuffled rows {version}: lancefmt {ours * 1e3:7.2f} ms  | ratio "
                  f"{b.track_take_ratio(paths, version, rows):5.2f}")
        s = RowIdScan()
        s.setup(paths, version)
        ours = best_time(lambda: s.ours.to_table(with_row_id=True), repeat=9)
        peer = best_time(lambda: s.peer.to_table(with_row_id=True), repeat=9)
        print(f"scan _rowid {version}: lancefmt {ours * 1e3:7.2f} ms  pylance {peer * 1e3:7.2f} ms"
              f"  | ratio {s.track_scan_rowid_ratio(paths, version):5.2f}")


if __name__ == "__main__":  # pragma: no cover
    main()
