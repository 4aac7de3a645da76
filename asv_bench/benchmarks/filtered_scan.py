"""Filtered scan of a 2M-row dataset: ``id > x AND s LIKE 'row-1%'`` (issue 12).

setup_cache writes the dataset once with pylance (storage 2.0, 10 fragments): ``id`` int64,
``s`` strings ``row-<id>``, ``v`` float64. Both libraries run the same SQL filter and return
``id``, ``s``; ``track_filtered_scan_speedup`` is pylance time / lancefmt time measured back to
back in one process (>= 1.0 is the target: lancefmt at least as fast).
"""
import os
import shutil

import numpy as np
import pyarrow as pa

from .common import scratch_dir, speedup

ROWS = 2_000_000
FRAGMENTS = 10
FILTER = "id > 500000 AND s LIKE 'row-1%'"
COLUMNS = ["id", "s"]


def write_fixture(path, rows=ROWS):
    import lance

    shutil.rmtree(path, ignore_errors=True)
    ids = np.arange(rows, dtype=np.int64)
    t = pa.table({"id": ids,
                  "s": pa.array([f"row-{i}" for i in range(rows)]),
                  "v": pa.array(np.random.default_rng(0).random(rows))})
    lance.write_dataset(t, path, max_rows_per_file=rows // FRAGMENTS, data_storage_version="2.0")


class FilteredScan:
    timeout = 1200
    number = 1
    repeat = 5

    def setup_cache(self):
        root = scratch_dir("filtered_scan")
        path = os.path.join(root, "ds")
        marker = os.path.join(root, f"ready-{ROWS}")
        if not os.path.exists(marker):
            write_fixture(path)
            open(marker, "w").close()
        return path

    @staticmethod
    def _ours(path):
        import lancefmt

        return lambda: lancefmt.dataset(path).to_table(columns=COLUMNS, filter=FILTER)

    @staticmethod
    def _peer(path):
        import lance

        return lambda: lance.dataset(path).to_table(columns=COLUMNS, filter=FILTER)

    def time_lancefmt_filtered_scan(self, path):
        self._ours(path)()

    def time_pylance_filtered_scan(self, path):
        self._peer(path)()

    def track_filtered_scan_speedup(self, path):
        return speedup(self._ours(path), self._peer(path))

    track_filtered_scan_speedup.unit = "x"


if __name__ == "__main__":  # direct run: python -m benchmarks.filtered_scan (from asv_bench/)
    b = FilteredScan()
    p = b.setup_cache()
    ours, peer = b._ours(p)(), b._peer(p)()
    assert ours.equals(peer), "lancefmt and pylance disagree"
    print(f"rows matched: {ours.num_rows}")
    for _ in range(3):
        print(f"speedup (pylance time / lancefmt time): {b.track_filtered_scan_speedup(p):.2f}")
