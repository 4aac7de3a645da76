"""Data evolution vs pylance: compaction and merge_insert (issue 13).

Fixtures (``setup_cache``, 2.0 data files written by lancefmt, read by both):

* ``compact``: 1,000 fragments of 100 rows (id, x float64, s string), 20% of the rows deleted
  (``id % 5 = 0``: every fragment has a deletion file). Timed: ``optimize.compact_files()``
  with the defaults (everything becomes one fragment).
* ``merge_insert``: 2,000,000 rows (id, x float64, s string) in 2 fragments; the source is
  100,000 rows, half of them matching existing ids (spread over the table), half new. Timed:
  ``merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)``.

Both mutate the dataset, so each run works on a fresh copy of the fixture (the copy is not
timed). ``track_*_speedup`` = pylance time / lancefmt time, best of several interleaved runs
in one process (above 1 = lancefmt faster).

Direct run: ``PYTHONPATH=.. python -m benchmarks.write_api`` from ``asv_bench``.
"""
import os
import shutil
import time

import numpy as np
import pyarrow as pa

from .common import scratch_dir

COMPACT_FRAGMENTS, COMPACT_ROWS = 1000, 100
BIG_ROWS, SOURCE_ROWS = 2_000_000, 100_000


def _rows(ids):
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5,
                     "s": pa.array(np.char.add("s", (ids % 1000).astype(str)))})


def build_compact(root):
    import lancefmt

    shutil.rmtree(root, ignore_errors=True)
    n = COMPACT_FRAGMENTS * COMPACT_ROWS
    ds = lancefmt.write_dataset(_rows(np.arange(n)), root, max_rows_per_file=COMPACT_ROWS)
    ds.delete("id % 5 = 0")
    assert len(ds.get_fragments()) == COMPACT_FRAGMENTS
    return root


def build_merge(root):
    import lancefmt

    shutil.rmtree(root, ignore_errors=True)
    lancefmt.write_dataset(_rows(np.arange(BIG_ROWS)), root)
    rng = np.random.default_rng(0)
    matched = rng.choice(BIG_ROWS, SOURCE_ROWS // 2, replace=False)
    new = np.arange(BIG_ROWS, BIG_ROWS + SOURCE_ROWS // 2)
    src = _rows(np.concatenate([matched, new]))
    src = src.set_column(1, "x", pa.array(np.full(src.num_rows, -1.0)))
    return root, src


def _fresh(fixture, name):
    work = os.path.join(os.path.dirname(fixture), name)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(fixture, work)
    return work


def _compact_ours(uri):
    import lancefmt

    return lancefmt.dataset(uri).optimize.compact_files()


def _compact_pylance(uri):
    import lance

    return lance.dataset(uri).optimize.compact_files()


def _merge_ours(uri, src):
    import lancefmt

    ds = lancefmt.dataset(uri)
    return ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)


def _merge_pylance(uri, src):
    import lance

    ds = lance.dataset(uri)
    return ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)


def _timed(fixture, name, fn, *args):
    work = _fresh(fixture, name)
    t0 = time.perf_counter()
    out = fn(work, *args)
    elapsed = time.perf_counter() - t0
    return elapsed, out


def interleaved(fixture, ours, peer, *args, repeat=3):
    """(best lancefmt time, best pylance time) over ``repeat`` interleaved runs."""
    best_ours = best_peer = float("inf")
    for _ in range(repeat):
        best_ours = min(best_ours, _timed(fixture, "work-ours", ours, *args)[0])
        best_peer = min(best_peer, _timed(fixture, "work-peer", peer, *args)[0])
    return best_ours, best_peer


class Compaction:
    timeout = 1200
    number = 1
    repeat = 3

    def setup_cache(self):
        return build_compact(os.path.join(scratch_dir("write_api_compact"), "fixture"))

    def setup(self, fixture):
        self.work = _fresh(fixture, "work")

    def time_compact_lancefmt(self, fixture):
        _compact_ours(self.work)

    def time_compact_pylance(self, fixture):
        _compact_pylance(self.work)

    def track_compact_speedup(self, fixture):
        ours, peer = interleaved(fixture, _compact_ours, _compact_pylance)
        return peer / ours

    track_compact_speedup.unit = "pylance/lancefmt"


class MergeInsert:
    timeout = 1200
    number = 1
    repeat = 3

    def setup_cache(self):
        root, src = build_merge(os.path.join(scratch_dir("write_api_merge"), "fixture"))
        return root, src

    def setup(self, cache):
        fixture, self.src = cache
        self.work = _fresh(fixture, "work")

    def time_merge_insert_lancefmt(self, cache):
        _merge_ours(self.work, self.src)

    def time_merge_insert_pylance(self, cache):
        _merge_pylance(self.work, self.src)

    def track_merge_insert_speedup(self, cache):
        fixture, src = cache
        ours, peer = interleaved(fixture, _merge_ours, _merge_pylance, src)
        return peer / ours

    track_merge_insert_speedup.unit = "pylance/lancefmt"


def main():
    base = scratch_dir("write_api_direct")
    fixture = build_compact(os.path.join(base, "compact", "fixture"))
    ours, peer = interleaved(fixture, _compact_ours, _compact_pylance)
    print(f"compact 1000 fragments, 20% deleted: lancefmt {ours:.3f}s  pylance {peer:.3f}s  "
          f"speedup {peer / ours:.2f}")
    fixture, src = build_merge(os.path.join(base, "merge", "fixture"))
    ours, peer = interleaved(fixture, _merge_ours, _merge_pylance, src)
    print(f"merge_insert 100k (half new) into 2M: lancefmt {ours:.3f}s  pylance {peer:.3f}s  "
          f"speedup {peer / ours:.2f}")


if __name__ == "__main__":
    main()
