"""Spark filter objects -> pyarrow expressions (no SparkSession needed)."""
import datetime as dt

import pyarrow as pa
import pyarrow.dataset as pads
import pytest

datasource = pytest.importorskip("pyspark.sql.datasource")
from lancefmt.spark.filters import filter_to_expression, split_filters  # noqa: E402

T = pa.table({
    "id": pa.array(range(10), pa.int64()),
    "s": pa.array([None, "a", "ab", "b", "ba", "abc", "c", None, "x", "y"]),
    "d": pa.array([dt.date(2024, 1, i + 1) for i in range(10)]),
    "st": pa.array([{"x": i} for i in range(10)]),
})


def ids(expr):
    return pads.dataset(T).to_table(filter=expr).column("id").to_pylist()


def test_comparisons_and_strings():
    F = datasource
    assert ids(filter_to_expression(F.EqualTo(("id",), 3), T.schema)) == [3]
    assert ids(filter_to_expression(F.GreaterThan(("id",), 7), T.schema)) == [8, 9]
    assert ids(filter_to_expression(F.GreaterThanOrEqual(("id",), 8), T.schema)) == [8, 9]
    assert ids(filter_to_expression(F.LessThan(("id",), 2), T.schema)) == [0, 1]
    assert ids(filter_to_expression(F.LessThanOrEqual(("id",), 1), T.schema)) == [0, 1]
    assert ids(filter_to_expression(F.In(("id",), (1, 5)), T.schema)) == [1, 5]
    assert ids(filter_to_expression(F.IsNull(("s",)), T.schema)) == [0, 7]
    assert len(ids(filter_to_expression(F.IsNotNull(("s",)), T.schema))) == 8
    assert ids(filter_to_expression(F.Not(F.LessThan(("id",), 8)), T.schema)) == [8, 9]
    assert ids(filter_to_expression(F.StringStartsWith(("s",), "ab"), T.schema)) == [2, 5]
    assert ids(filter_to_expression(F.StringEndsWith(("s",), "a"), T.schema)) == [1, 4]
    assert ids(filter_to_expression(F.StringContains(("s",), "b"), T.schema)) == [2, 3, 4, 5]
    assert ids(filter_to_expression(F.EqualNullSafe(("s",), "c"), T.schema)) == [6]
    assert ids(filter_to_expression(F.EqualTo(("d",), dt.date(2024, 1, 3)), T.schema)) == [2]
    assert ids(filter_to_expression(F.GreaterThan(("st", "x"), 8), T.schema)) == [9]


def test_untranslatable_filters_go_back_to_spark():
    F = datasource
    filters = [F.EqualTo(("nope",), 1), F.EqualTo(("id",), "not a number"),
               F.StringStartsWith(("id",), "1"), F.GreaterThan(("id",), 4), F.LessThan(("id",), 7)]
    pushed, rejected = split_filters(filters, T.schema)
    assert rejected == filters[:3]
    assert ids(pushed) == [5, 6]
