"""Spark through the ``lance`` source and sink vs Spark's native Parquet reader and writer.

Data: 2M rows (int64 id, float64 x, int32 k, string s). setup_cache writes it once as a Lance
dataset (lancefmt, 2 fragments of 1M rows) and as Parquet (pyarrow, 1M-row row groups). Each
benchmark process starts one local SparkSession (``local[2]``; the first query warms the JVM and
the Python workers outside the timings).

Read: ``count(*)`` + ``sum(x)``. Parquet prunes columns on its own; the Python Data Source API
cannot (no column pruning through Spark 4.3), so ``time_count_sum_lance`` reads every column and
``time_count_sum_lance_projected`` shows the ``columns`` option. ``track_count_sum_ratio`` is
Parquet time / lance time, back to back (above 1: lance faster). Target (issue 7): >= 0.5, i.e.
within 2x of native Parquet.

Write: the same generated DataFrame (``spark.range`` + expressions, 2 partitions) saved through
our sink (``mode("overwrite")`` into a fresh path: one Overwrite commit) and with
``df.write.parquet``. ``track_write_ratio`` is Parquet time / lance time; ``track_write_rows_per_s``
is our sink's throughput.
"""
import os
import shutil
import time
import uuid

import numpy as np
import pyarrow as pa

from .common import best_time, scratch_dir, speedup

ROWS = 2_000_000
PARTITIONS = 2


def _table(rows, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids),
        "x": pa.array(rng.random(rows)),
        "k": pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
        "s": pa.array(np.char.add("name-", (ids % 5000).astype(str))),
    })


def write_fixtures(root, rows=ROWS):
    import pyarrow.parquet as pq

    import lancefmt

    lance_uri = os.path.join(root, "data.lance")
    parquet_path = os.path.join(root, "data.parquet")
    for path in (lance_uri, parquet_path):
        shutil.rmtree(path, ignore_errors=True)
    t = _table(rows)
    lancefmt.write_dataset(t, lance_uri, max_rows_per_file=rows // PARTITIONS)
    os.makedirs(parquet_path)
    pq.write_table(t, os.path.join(parquet_path, "part-0.parquet"), row_group_size=rows // PARTITIONS)
    return {"lance": lance_uri, "parquet": parquet_path}


def _session():
    from lancefmt.spark import local_session

    return local_session(f"local[{PARTITIONS}]", "lancefmt-bench",
                         conf={"spark.sql.shuffle.partitions": str(PARTITIONS),
                               "spark.driver.memory": "2g"})


class SparkRead:
    timeout = 1200
    number = 1
    repeat = 5

    def setup_cache(self):
        root = scratch_dir("spark_source")
        marker = os.path.join(root, f"ready-{ROWS}")
        if not os.path.exists(marker):
            write_fixtures(root)
            open(marker, "w").close()
        return {"lance": os.path.join(root, "data.lance"), "parquet": os.path.join(root, "data.parquet")}

    def setup(self, paths):
        self.spark = _session()
        self.lance_uri, self.parquet_path = paths["lance"], paths["parquet"]
        assert self._lance()() == self._parquet()()  # warm-up, and the same answer

    def teardown(self, paths):
        self.spark.stop()

    def _lance(self, columns=None):
        def run():
            reader = self.spark.read.format("lance")
            if columns:
                reader = reader.option("columns", columns)
            row = reader.load(self.lance_uri).selectExpr("count(*) AS n", "sum(x) AS sx").collect()[0]
            return row.n, round(row.sx, 6)
        return run

    def _parquet(self):
        def run():
            row = self.spark.read.parquet(self.parquet_path).selectExpr(
                "count(*) AS n", "sum(x) AS sx").collect()[0]
            return row.n, round(row.sx, 6)
        return run

    def time_count_sum_lance(self, paths):
        self._lance()()

    def time_count_sum_lance_projected(self, paths):
        self._lance("x")()

    def time_count_sum_parquet(self, paths):
        self._parquet()()

    def track_count_sum_ratio(self, paths):
        return speedup(self._lance(), self._parquet(), repeat=5)

    track_count_sum_ratio.unit = "parquet time / lance time"

    def track_count_sum_projected_ratio(self, paths):
        return speedup(self._lance("x"), self._parquet(), repeat=5)

    track_count_sum_projected_ratio.unit = "parquet time / lance time"


class SparkWrite:
    timeout = 1200
    number = 1
    repeat = 3

    def setup(self):
        self.spark = _session()
        self.root = os.path.join(scratch_dir("spark_sink"), uuid.uuid4().hex)
        os.makedirs(self.root)
        self.df = self.spark.range(0, ROWS, numPartitions=PARTITIONS).selectExpr(
            "id", "rand(7) AS x", "CAST(id % 1000 AS INT) AS k",
            "concat('name-', CAST(id % 5000 AS STRING)) AS s")
        self._lance()()  # warm-up
        self._parquet()()

    def teardown(self):
        self.spark.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def _fresh(self, suffix):
        return os.path.join(self.root, f"{uuid.uuid4().hex}.{suffix}")

    def _lance(self):
        def run():
            path = self._fresh("lance")
            self.df.write.format("lance").mode("overwrite").save(path)
            shutil.rmtree(path)
        return run

    def _parquet(self):
        def run():
            path = self._fresh("parquet")
            self.df.write.mode("overwrite").parquet(path)
            shutil.rmtree(path)
        return run

    def time_write_lance(self):
        self._lance()()

    def time_write_parquet(self):
        self._parquet()()

    def track_write_ratio(self):
        return speedup(self._lance(), self._parquet(), repeat=3)

    track_write_ratio.unit = "parquet time / lance time"

    def track_write_rows_per_s(self):
        return ROWS / best_time(self._lance(), repeat=3, warmup=0)

    track_write_rows_per_s.unit = "rows/s"


def main():
    """``python -m benchmarks.spark_source`` (from asv_bench/): every number in one run."""
    read = SparkRead()
    paths = read.setup_cache()
    read.setup(paths)
    try:
        for name, fn in (("lance (all columns)", read._lance()), ("lance (columns=x)", read._lance("x")),
                         ("parquet", read._parquet())):
            print(f"count+sum  {name:22s} {best_time(fn, repeat=5):.3f} s")
        print(f"count+sum  ratio parquet/lance       {read.track_count_sum_ratio(paths):.2f}")
        print(f"count+sum  ratio parquet/lance (x)   {read.track_count_sum_projected_ratio(paths):.2f}")
    finally:
        read.teardown(paths)
    write = SparkWrite()
    write.setup()
    try:
        t_lance, t_parquet = best_time(write._lance(), repeat=3), best_time(write._parquet(), repeat=3)
        print(f"write      lance {t_lance:.3f} s ({ROWS / t_lance / 1e6:.2f} M rows/s), "
              f"parquet {t_parquet:.3f} s ({ROWS / t_parquet / 1e6:.2f} M rows/s)")
        print(f"write      ratio parquet/lance       {write.track_write_ratio():.2f}")
    finally:
        write.teardown()


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"({time.time() - t0:.0f} s)")
