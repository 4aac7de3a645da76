"""BITMAP and LABEL_LIST indices: building them and answering look-ups, lancefmt vs pylance.

setup_cache writes, with pylance (storage 2.2, 10 fragments), a 10M-row dataset with ``cat``
(strings ``c0``..``c99``, uniformly random) and a 2M-row one with ``tags`` (lists of 0-3 labels
of 50, some null lists). Each library builds its index on its own copy (``replace=True``, so a
build replaces the previous one). Look-ups run on the copy lancefmt indexed, through a fresh
dataset object each time (the index cache of a process stays warm, as in a service):
``scanner(filter=...).count_rows()`` and ``to_table(filter=..., columns=["id"])``.

``track_*_speedup`` is pylance time / lancefmt time, measured back to back in one process
(above 1: lancefmt faster). Targets: BITMAP build >= 1.0; ``cat = 'c7'`` look-ups >= 1.0.

Run as a script for a quick comparison without asv:
``PYTHONPATH=. python asv_bench/benchmarks/index_bitmap.py [rows]``.
"""
import os
import shutil
import sys
import time

import numpy as np
import pyarrow as pa

try:
    from .common import scratch_dir, speedup
except ImportError:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import scratch_dir, speedup

ROWS = 10_000_000
LIST_ROWS = 2_000_000
FRAGMENTS = 10
EQUALS = "cat = 'c7'"
IN_LIST = "cat IN ('c1', 'c2', 'c3')"
LABELS = "array_has_any(tags, ['t7'])"


def cat_table(rows):
    codes = np.random.default_rng(42).integers(0, 100, rows).astype(np.int32)
    cats = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array([f"c{i}" for i in range(100)]))
    return pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "cat": cats.cast(pa.string())})


def tags_table(rows):
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 4, rows)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    labels = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 50, int(offsets[-1])).astype(np.int32)),
                                            pa.array([f"t{i}" for i in range(50)])).cast(pa.string())
    mask = pa.array(rng.random(rows) < 0.05)
    tags = pa.ListArray.from_arrays(pa.array(offsets), labels, mask=mask)
    return pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "tags": tags})


def write_fixtures(root, rows=ROWS, list_rows=LIST_ROWS):
    import lance

    import lancefmt

    paths = {}
    for name, table in (("cat", cat_table(rows)), ("tags", tags_table(list_rows))):
        for who in ("ours", "peer"):
            path = os.path.join(root, f"{name}_{who}")
            shutil.rmtree(path, ignore_errors=True)
            lance.write_dataset(table, path, max_rows_per_file=len(table) // FRAGMENTS,
                                data_storage_version="2.2")
            paths[f"{name}_{who}"] = path
    lancefmt.dataset(paths["cat_ours"]).create_scalar_index("cat", "BITMAP")
    lancefmt.dataset(paths["tags_ours"]).create_scalar_index("tags", "LABEL_LIST")
    return paths


def builders(paths, column, kind):
    import lance

    import lancefmt

    def ours():
        lancefmt.dataset(paths[f"{column}_ours"]).create_scalar_index(column, kind, replace=True)

    def peer():
        lance.dataset(paths[f"{column}_peer"]).create_scalar_index(column, kind, replace=True)

    return ours, peer


def lookups(path, sql, how):
    import lance

    import lancefmt

    if how == "count":
        return (lambda: lancefmt.dataset(path).scanner(filter=sql).count_rows(),
                lambda: lance.dataset(path).scanner(filter=sql).count_rows())
    return (lambda: lancefmt.dataset(path).to_table(filter=sql, columns=["id"]),
            lambda: lance.dataset(path).to_table(filter=sql, columns=["id"]))


class BitmapIndex:
    timeout = 1800
    number = 1
    repeat = 3

    def setup_cache(self):
        root = scratch_dir("index_bitmap")
        marker = os.path.join(root, f"ready-{ROWS}-{LIST_ROWS}")
        names = ("cat_ours", "cat_peer", "tags_ours", "tags_peer")
        if not os.path.exists(marker):
            write_fixtures(root)
            open(marker, "w").close()
        return {n: os.path.join(root, n) for n in names}

    def time_lancefmt_build(self, paths):
        builders(paths, "cat", "BITMAP")[0]()

    def time_pylance_build(self, paths):
        builders(paths, "cat", "BITMAP")[1]()

    def track_build_speedup(self, paths):
        return speedup(*builders(paths, "cat", "BITMAP"), repeat=2, warmup=0)

    def time_lancefmt_equals_count(self, paths):
        lookups(paths["cat_ours"], EQUALS, "count")[0]()

    def time_pylance_equals_count(self, paths):
        lookups(paths["cat_ours"], EQUALS, "count")[1]()

    def track_equals_count_speedup(self, paths):
        return speedup(*lookups(paths["cat_ours"], EQUALS, "count"), repeat=7)

    def track_equals_to_table_speedup(self, paths):
        return speedup(*lookups(paths["cat_ours"], EQUALS, "table"), repeat=5)

    def track_in_count_speedup(self, paths):
        return speedup(*lookups(paths["cat_ours"], IN_LIST, "count"), repeat=5)

    def track_label_list_build_speedup(self, paths):
        return speedup(*builders(paths, "tags", "LABEL_LIST"), repeat=2, warmup=0)

    def track_labels_count_speedup(self, paths):
        return speedup(*lookups(paths["tags_ours"], LABELS, "count"), repeat=5)

    track_build_speedup.unit = "x"
    track_equals_count_speedup.unit = "x"
    track_equals_to_table_speedup.unit = "x"
    track_in_count_speedup.unit = "x"
    track_label_list_build_speedup.unit = "x"
    track_labels_count_speedup.unit = "x"


def _interleaved(ours, peer, repeat):
    """Best times of ``ours`` and ``peer``, run alternately."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((ours, peer)):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def main(rows):
    root = scratch_dir("index_bitmap_script")
    paths = write_fixtures(root, rows, max(rows // 5, 1000))
    cases = [("BITMAP build", builders(paths, "cat", "BITMAP"), 2, 0),
             ("LABEL_LIST build", builders(paths, "tags", "LABEL_LIST"), 2, 0),
             (f"count {EQUALS}", lookups(paths["cat_ours"], EQUALS, "count"), 7, 1),
             (f"to_table {EQUALS}", lookups(paths["cat_ours"], EQUALS, "table"), 5, 1),
             (f"count {IN_LIST}", lookups(paths["cat_ours"], IN_LIST, "count"), 5, 1),
             (f"count {LABELS}", lookups(paths["tags_ours"], LABELS, "count"), 5, 1)]
    print(f"{rows:,} rows (lists: {max(rows // 5, 1000):,}); best of n, interleaved")
    for label, (ours, peer), repeat, warmup in cases:
        for _ in range(warmup):
            ours(), peer()
        o, p = _interleaved(ours, peer, repeat)
        print(f"{label:45s} lancefmt {o * 1e3:9.1f} ms   pylance {p * 1e3:9.1f} ms   ratio {p / o:5.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROWS)
