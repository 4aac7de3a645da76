"""The progress bar follows the Spark jobs started inside its block, and only those."""
import pytest

pytest.importorskip("pyspark")
from lancefmt.spark.progress import spark_progress  # noqa: E402


def test_progress_counts_the_tasks_of_the_block(spark):
    spark.range(10).count()  # a job before the block is not counted
    with spark_progress(spark, "test", interval=0.05) as poller:
        spark.range(0, 1000, numPartitions=3).selectExpr("sum(id)").collect()
    done = sum(d for d, _ in poller.stages.values())
    total = sum(t for _, t in poller.stages.values())
    assert total >= 3 and done == total
    assert poller.bar.n == done
