"""The executor Python workers of local_session() fork from lancefmt.spark.daemon: lancefmt's
Spark modules are imported before any task runs, and plain PySpark work still runs there."""
import pytest

pytest.importorskip("pyspark")


def test_workers_start_with_lancefmt_imported(spark):
    def probe(_):
        import sys

        return [("lancefmt.spark.source" in sys.modules, "lancefmt.spark.reader" in sys.modules,
                 sys.modules["__main__"].__spec__.name if sys.modules["__main__"].__spec__ else "")]

    seen = spark.sparkContext.parallelize(range(2), 2).mapPartitions(probe).collect()
    assert seen and all(source and reader for source, reader, _ in seen), seen
    assert spark.conf.get("spark.python.daemon.module") == "lancefmt.spark.daemon"
    assert spark.range(10).selectExpr("sum(id) AS s").collect()[0].s == 45
