"""Conditions the ``lance`` scan applies for the Spark jobs (``lancefmt.spark.prefilter``):
only the subset whose meaning is the same in Spark SQL and Lance's filter, and over it the
scan's rows equal Spark's; deletes by such conditions run without Spark reading rows and
equal pylance's."""
import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.spark import dml
from lancefmt.spark.prefilter import lance_prefilter

from .conftest import arm_fault, assert_same_rows, twins, unreferenced_files

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("b", pa.bool_()),
                    ("x", pa.float64()), ("t", pa.int8()), ("u", pa.uint32())])

IN_SUBSET = [
    "id > 10", "id % 5 = 0", "id % -3 <> 1", "s = 'a' AND b", "NOT b OR id IN (1, 2, -3)",
    "id BETWEEN 1 AND 5", "s IS NOT NULL", "t < 100", "(id > 1) AND (s <> \"q\")",
    "b", "NOT (t IS NULL) AND t >= -128",
]
OUTSIDE = [
    "x > 1", "t > 300", "id = '5'", "ID = 5", "id > 1.5", "u > 3", "id = id + 1",
    "s LIKE 'a%'", "upper(s) = 'A'", "id IN (1, NULL)", "true", "id % 0 = 0", "id % -1 = 0",
    "id = 9223372036854775808", "1 = 1", "id IN (SELECT 1)", "not a sql (", "",
]


@pytest.mark.parametrize("text", IN_SUBSET)
def test_conditions_in_the_subset_are_passed_on(text):
    assert lance_prefilter(text, SCHEMA) is not None


@pytest.mark.parametrize("text", OUTSIDE)
def test_other_conditions_are_left_to_spark(text):
    assert lance_prefilter(text, SCHEMA) is None


def test_a_name_differing_only_in_case_from_another_is_left_to_spark():
    schema = pa.schema([("a", pa.int64()), ("A", pa.int64())])
    assert lance_prefilter("a = 1", schema) is None


def _nullable_rows(n=400):
    rng = np.random.default_rng(7)
    ids = np.arange(n, dtype=np.int64)
    t = pa.array(rng.integers(-128, 128, n).astype(np.int8), mask=rng.random(n) < 0.2)
    s = pa.array([None if i % 7 == 0 else f"k{i % 13}" for i in ids])
    b = pa.array([None if i % 11 == 0 else bool(i % 3) for i in ids])
    return pa.table({"id": ids, "t": t, "s": s, "b": b})


CONDITIONS = [
    "id % 5 = 0 OR t > 50", "NOT (s = 'k3') AND b", "NOT b", "t BETWEEN -10 AND 10",
    "s IN ('k1', 'k2') OR t IS NULL", "NOT (t < 0 OR s <> 'k4')", "id % -7 = -0",
]


@pytest.mark.spark
@pytest.mark.parametrize("text", CONDITIONS)
def test_the_scan_keeps_exactly_the_rows_spark_keeps(spark, tmp_path, text):
    uri = str(tmp_path / "t.lance")
    lancefmt.write_dataset(_nullable_rows(), uri, max_rows_per_file=100)
    prefilter = lance_prefilter(text, lancefmt.dataset(uri).schema)
    assert prefilter is not None
    theirs = sorted(r.id for r in spark.read.format("lance").load(uri).filter(text).collect())
    ours = lancefmt.dataset(uri).to_table(columns=["id"], filter=prefilter)["id"].to_pylist()
    assert sorted(ours) == theirs and theirs  # and not empty: the condition does something


@pytest.mark.spark
def test_a_delete_by_a_scan_condition_runs_as_tasks_and_equals_pylance(spark, tmp_path,
                                                                      monkeypatch):
    uri, copy = twins(tmp_path, _nullable_rows(), max_rows_per_file=100)
    calls = []
    real = dml.run_tasks
    monkeypatch.setattr(dml, "run_tasks", lambda *a, **k: calls.append(a[3]) or real(*a, **k))
    marker = arm_fault("delete")  # a task killed: Spark runs it again, one commit
    n = dml.delete(spark, uri, "t > 50 OR id < 100")
    assert not os.path.exists(marker)
    assert calls == [dml._delete_on_executor]
    lance.dataset(copy).delete("t > 50 OR id < 100")
    assert n == 100 + int((_nullable_rows()["t"].to_numpy(zero_copy_only=False)[100:] > 50).sum())
    assert lance.dataset(uri).version == 2
    assert [f.fragment_id for f in lance.dataset(uri).get_fragments()] == [1, 2, 3]
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []


@pytest.mark.spark
def test_a_delete_outside_the_subset_reads_rows_through_spark(spark, tmp_path, monkeypatch):
    from pyspark.sql import functions as F

    uri, copy = twins(tmp_path, _nullable_rows(), max_rows_per_file=100)
    calls = []
    monkeypatch.setattr(dml, "run_tasks", lambda *a, **k: calls.append(a))
    n = dml.delete(spark, uri, F.upper(F.col("s")) == "K3")
    assert calls == [] and n == lance.dataset(copy).count_rows("s = 'k3'")
    lance.dataset(copy).delete("s = 'k3'")
    assert_same_rows(uri, copy)


@pytest.mark.spark
def test_an_update_with_a_scan_condition_equals_pylance(spark, tmp_path):
    uri, copy = twins(tmp_path, _nullable_rows(), max_rows_per_file=100)
    n = dml.update(spark, uri, {"t": "t - 1"}, "t > 0 AND s = 'k5'")
    theirs = lance.dataset(copy).update({"t": "t - 1"}, "t > 0 AND s = 'k5'")
    assert n == theirs["num_rows_updated"] > 0
    assert_same_rows(uri, copy)
