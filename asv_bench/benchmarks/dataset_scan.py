"""Full scans of a 2M-row dataset (int64, float64, int32; 10 fragments): lancefmt vs pylance.

setup_cache writes the dataset once with pylance (storage 2.0, 10 fragments of 200k rows), plus
a copy with 10% of the rows deleted (pylance's own delete). ``time_*`` scan with each library;
``track_*_speedup`` is pylance time / lancefmt time measured back to back (above 1: lancefmt
faster). Targets: >= 1.0 for the plain scan (issue 4); >= 3.0 with 10% deleted and >= 2.0 with
row ids (issue 5).
"""
import os
import shutil

import numpy as np
import pyarrow as pa

from .common import scratch_dir, speedup

ROWS = 2_000_000
FRAGMENTS = 10


def _table(rows, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({
        "i64": pa.array(np.arange(rows, dtype=np.int64)),
        "f64": pa.array(rng.random(rows)),
        "i32": pa.array(rng.integers(0, 1 << 30, rows, dtype=np.int32)),
    })


def write_fixtures(root, rows=ROWS):
    import lance

    plain = os.path.join(root, "plain")
    deleted = os.path.join(root, "deleted10")
    stable = os.path.join(root, "stable_deleted10")
    for path in (plain, deleted, stable):
        shutil.rmtree(path, ignore_errors=True)
    t = _table(rows)
    per_file = rows // FRAGMENTS
    lance.write_dataset(t, plain, max_rows_per_file=per_file, data_storage_version="2.0")
    lance.write_dataset(t, deleted, max_rows_per_file=per_file, data_storage_version="2.0")
    lance.dataset(deleted).delete("i64 % 10 = 3")
    lance.write_dataset(t, stable, max_rows_per_file=per_file, data_storage_version="2.0",
                        enable_stable_row_ids=True)
    lance.dataset(stable).delete("i64 % 10 = 3")
    return {"plain": plain, "deleted10": deleted, "stable_deleted10": stable}


class DatasetScan:
    timeout = 1200
    number = 1
    repeat = 5

    def setup_cache(self):
        root = scratch_dir("dataset_scan")
        marker = os.path.join(root, f"ready-{ROWS}")
        if not os.path.exists(marker):
            write_fixtures(root)
            open(marker, "w").close()
        return {"plain": os.path.join(root, "plain"), "deleted10": os.path.join(root, "deleted10"),
                "stable_deleted10": os.path.join(root, "stable_deleted10")}

    @staticmethod
    def _ours(path, **kw):
        import lancefmt

        return lambda: lancefmt.dataset(path).to_table(**kw)

    @staticmethod
    def _peer(path, **kw):
        import lance

        return lambda: lance.dataset(path).to_table(**kw)

    def time_lancefmt_scan(self, paths):
        self._ours(paths["plain"])()

    def time_pylance_scan(self, paths):
        self._peer(paths["plain"])()

    def track_scan_speedup(self, paths):
        return speedup(self._ours(paths["plain"]), self._peer(paths["plain"]))

    def time_lancefmt_scan_deleted10(self, paths):
        self._ours(paths["deleted10"])()

    def time_pylance_scan_deleted10(self, paths):
        self._peer(paths["deleted10"])()

    def track_scan_deleted10_speedup(self, paths):
        return speedup(self._ours(paths["deleted10"]), self._peer(paths["deleted10"]))

    def track_scan_row_id_speedup(self, paths):
        return speedup(self._ours(paths["stable_deleted10"], with_row_id=True),
                       self._peer(paths["stable_deleted10"], with_row_id=True))

    track_scan_speedup.unit = "x"
    track_scan_deleted10_speedup.unit = "x"
    track_scan_row_id_speedup.unit = "x"
