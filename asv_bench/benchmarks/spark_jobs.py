"""The distributed jobs of ``lancefmt.spark`` (issue 29) vs single-process pylance on a copy.

Fixture (``setup_cache``, written once by lancefmt, 2.2): ``ROWS`` rows (int64 id, float64 x,
string s) in ``FRAGMENTS`` fragments, plus ``compact``: 400 fragments of 500 rows with 20% of
the rows deleted. Each timed run works on a fresh copy (the copy is not timed). The operations,
each on Spark (``local[2]``, the session started and warmed up before timing) and with pylance:

* ``compact``: ``compaction.compact`` / ``optimize.compact_files()`` (defaults);
* ``backfill``: ``backfill.add_columns({"y": "x * 2 + id"})`` / ``add_columns`` of the same SQL;
* ``delete``: ``dml.delete("id % 7 = 3")`` / ``delete`` (every fragment gets a deletion file);
* ``update``: ``dml.update({"x": "x + 1"}, "id % 100 = 0")`` / ``update`` (1% of the rows);
* ``merge``: an upsert of ``SOURCE_ROWS`` rows, half matching ids spread over the table, half
  new (the source a cached Spark DataFrame / the same Arrow table).

``track_*_ratio`` = pylance time / Spark time, best of interleaved runs (above 1: the Spark job
faster). Spark's fixed cost per job (planning, scheduling, Python workers, a row-by-row read of
the ``lance`` source in the JVM) is seconds, so on one machine with 2 cores pylance wins at
these sizes; the numbers show how far off the distributed jobs are.

Direct run: ``PYTHONPATH=.. python -m benchmarks.spark_jobs [op ...] [--repeat N]`` from
``asv_bench``.
"""
import argparse
import os
import shutil
import sys
import time

import numpy as np
import pyarrow as pa

from .common import scratch_dir

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.isdir(os.path.join(_CHECKOUT, "lancefmt")) and sys.path[:1] != [_CHECKOUT]:
    sys.path.insert(0, _CHECKOUT)

ROWS, FRAGMENTS, SOURCE_ROWS = 1_000_000, 4, 50_000
COMPACT_FRAGMENTS, COMPACT_ROWS = 400, 500
OPS = ("compact", "backfill", "delete", "update", "merge")


def _rows(ids):
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5,
                     "s": pa.array(np.char.add("s", (ids % 1000).astype(str)))})


def fixtures():
    """{"table": uri, "compact": uri} under the scratch directory (written once)."""
    import lancefmt

    root = scratch_dir("spark_jobs")
    paths = {"table": os.path.join(root, "table.lance"),
             "compact": os.path.join(root, "compact.lance")}
    marker = os.path.join(root, f"ready-{ROWS}-{FRAGMENTS}-{COMPACT_FRAGMENTS}")
    if not os.path.exists(marker):
        for p in paths.values():
            shutil.rmtree(p, ignore_errors=True)
        lancefmt.write_dataset(_rows(np.arange(ROWS)), paths["table"],
                               max_rows_per_file=ROWS // FRAGMENTS)
        n = COMPACT_FRAGMENTS * COMPACT_ROWS
        ds = lancefmt.write_dataset(_rows(np.arange(n)), paths["compact"],
                                    max_rows_per_file=COMPACT_ROWS)
        ds.delete("id % 5 = 0")
        open(marker, "w").close()
    return paths


def merge_source():
    rng = np.random.default_rng(0)
    matched = rng.choice(ROWS, SOURCE_ROWS // 2, replace=False)
    new = np.arange(ROWS, ROWS + SOURCE_ROWS // 2)
    src = _rows(np.concatenate([matched, new]))
    return src.set_column(1, "x", pa.array(np.full(src.num_rows, -1.0)))


def _session():
    from lancefmt.spark import local_session

    return local_session("local[2]", "lancefmt-bench-jobs",
                         conf={"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g"})


class Jobs:
    """The timed operations: ``pair(op)`` is (Spark run, pylance run), each ``run(uri)``."""

    def __init__(self, spark):
        self.spark = spark
        self.source = merge_source()
        self.source_df = spark.createDataFrame(self.source.to_pandas()).cache()
        self.source_df.count()

    def pair(self, op):
        import lance

        from lancefmt.spark import backfill, compaction, dml
        from lancefmt.spark.merge import MergeBuilder

        if op == "compact":
            return (lambda u: compaction.compact(self.spark, u),
                    lambda u: lance.dataset(u).optimize.compact_files())
        if op == "backfill":
            return (lambda u: backfill.add_columns(self.spark, u, {"y": "x * 2 + id"}),
                    lambda u: lance.dataset(u).add_columns({"y": "x * 2 + id"}))
        if op == "delete":
            return (lambda u: dml.delete(self.spark, u, "id % 7 = 3"),
                    lambda u: lance.dataset(u).delete("id % 7 = 3"))
        if op == "update":
            return (lambda u: dml.update(self.spark, u, {"x": "x + 1"}, "id % 100 = 0"),
                    lambda u: lance.dataset(u).update({"x": "x + 1"}, "id % 100 = 0"))
        if op == "merge":
            return (lambda u: MergeBuilder(self.spark, u, self.source_df, "id")
                    .when_matched_update_all().when_not_matched_insert_all().execute(),
                    lambda u: lance.dataset(u).merge_insert("id").when_matched_update_all()
                    .when_not_matched_insert_all().execute(self.source))
        raise ValueError(op)


def _timed(fixture, name, fn):
    work = os.path.join(os.path.dirname(fixture), name)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(fixture, work)
    t0 = time.perf_counter()
    fn(work)
    elapsed = time.perf_counter() - t0
    shutil.rmtree(work, ignore_errors=True)
    return elapsed


def interleaved(paths, jobs, op, repeat=3):
    """(best Spark time, best pylance time, [pylance/Spark per repetition]); a warm-up first."""
    fixture = paths["compact" if op == "compact" else "table"]
    ours, peer = jobs.pair(op)
    _timed(fixture, "work-spark", ours)
    mine, theirs = [], []
    for _ in range(repeat):
        mine.append(_timed(fixture, "work-spark", ours))
        theirs.append(_timed(fixture, "work-pylance", peer))
    return min(mine), min(theirs), [p / o for o, p in zip(mine, theirs)]


class SparkJobs:
    timeout = 3600
    number = 1
    repeat = 1
    params = list(OPS)
    param_names = ["operation"]

    def setup_cache(self):
        return fixtures()

    def setup(self, paths, op):
        self.spark = _session()
        self.jobs = Jobs(self.spark)

    def teardown(self, paths, op):
        self.spark.stop()

    def track_ratio(self, paths, op):
        ours, peer, _ = interleaved(paths, self.jobs, op)
        return peer / ours

    track_ratio.unit = "pylance time / spark time"


def main(argv=None):
    parser = argparse.ArgumentParser(description="lancefmt's Spark jobs vs pylance")
    parser.add_argument("ops", nargs="*", help=f"some of {', '.join(OPS)} (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    unknown = [op for op in args.ops if op not in OPS]
    if unknown:
        parser.error(f"unknown operation(s) {unknown}; choose from {', '.join(OPS)}")
    paths = fixtures()
    spark = _session()
    try:
        jobs = Jobs(spark)
        print(f"{ROWS:,} rows in {FRAGMENTS} fragments (compact: {COMPACT_FRAGMENTS} x "
              f"{COMPACT_ROWS} rows), local[2], best of {args.repeat} interleaved; "
              "ratio = pylance time / spark time", flush=True)
        for op in args.ops or OPS:
            ours, peer, ratios = interleaved(paths, jobs, op, args.repeat)
            print(f"{op:9s} spark {ours:6.2f} s  pylance {peer:6.2f} s  ratio {peer / ours:5.2f} "
                  f"(per repetition {min(ratios):.2f}-{max(ratios):.2f})", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
