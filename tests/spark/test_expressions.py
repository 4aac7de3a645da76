"""Expressions given to the jobs: the columns a predicate reads, for SQL text and Columns."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.spark import dml
from lancefmt.spark.expressions import empty_frame, referenced_columns
from lancefmt.spark.jobs import Pinned

from .conftest import twins

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()),
                    ("t", pa.string())])


def test_sql_text_names_its_columns():
    assert referenced_columns(["id < 3 AND s IS NULL"], SCHEMA.names) == ["id", "s"]
    assert referenced_columns(["target.x > source.x"], SCHEMA.names, {"target"}) == ["x"]


def test_a_column_reads_only_what_spark_resolves_it_to(spark):
    """Columns whose printed form is no SQL are resolved by Spark's analyzer; in a merge only
    the target's side counts."""
    from pyspark.sql import functions as F

    df = empty_frame(spark, SCHEMA)
    col = F.when(F.col("s").startswith("r1"), F.col("x")).otherwise(F.lit(0.0)) > F.length("t")
    assert referenced_columns([col], SCHEMA.names, frame=(df, df)) == ["x", "s", "t"]
    target = empty_frame(spark, SCHEMA, "target")
    source = spark.createDataFrame([], "id long, x double").alias("source")
    both = target.crossJoin(source)
    cond = (F.col("target.id") == F.col("source.id")) & (F.col("source.x") > F.col("target.x"))
    assert referenced_columns([cond], SCHEMA.names, {"target"}, (both, target)) == ["id", "x"]
    assert referenced_columns([F.col("nope") > 1], SCHEMA.names, frame=(df, df)) is None


def test_delete_with_a_column_reads_only_its_columns(spark, tmp_path, monkeypatch):
    from pyspark.sql import functions as F

    ids = np.arange(20, dtype=np.int64)
    uri, _ = twins(tmp_path, pa.table({"id": ids, "x": ids * 0.5, "s": ids.astype(str),
                                       "t": ids.astype(str)}))
    real, asked = Pinned.read, []

    def spy(self, spark, columns=None, **kw):
        asked.append(columns)
        return real(self, spark, columns, **kw)

    monkeypatch.setattr(Pinned, "read", spy)
    assert dml.delete(spark, uri, F.col("s").startswith("1") & (F.col("x") > 4)) == 10
    assert asked == [["x", "s"]]
