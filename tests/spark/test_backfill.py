"""Backfilling columns on executors (``lancefmt.spark.backfill.add_columns``): Spark expressions
(SQL and a Python UDF) or a pylance-style batch UDF, one new column file per fragment and no
other file rewritten, equal to pylance's ``add_columns`` on a copy; a killed task is retried
without a second commit; a concurrent append is caught up with, reusing the files written."""
import os

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancefmt
from lancefmt.errors import LanceError
from lancefmt.spark import backfill

from .conftest import arm_fault, assert_same_rows, twins, unreferenced_files

pytestmark = pytest.mark.spark


def rows(lo, hi):
    ids = np.arange(lo, hi, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5, "s": pa.array([f"r{i}" for i in ids])})


def fixture(tmp_path):
    uri, copy = twins(tmp_path, rows(0, 120), max_rows_per_file=40)
    for u in (uri, copy):
        lance.dataset(u).delete("id % 9 = 4")
    return uri, copy


def data_files(uri):
    return [[f.path for f in frag.data_files()] for frag in lance.dataset(uri).get_fragments()]


def upper_s(batch):
    return pa.record_batch({"t": pc.utf8_upper(batch.column("s"))})


def test_expressions_and_a_python_udf_equal_pylance(spark, tmp_path):
    from pyspark.sql import functions as F

    uri, copy = fixture(tmp_path)
    before = data_files(uri)
    marker = arm_fault("backfill")
    upper = F.udf(lambda s: s.upper(), "string")
    version = backfill.add_columns(spark, uri, {"y": "x * 2 + id", "t": upper(F.col("s"))})
    assert not os.path.exists(marker)
    lance.dataset(copy).add_columns({"y": "x * 2 + id"})
    lance.dataset(copy).add_columns(lance.batch_udf()(upper_s), read_columns=["s"])
    assert version == lance.dataset(uri).version == 3                # one commit
    after = data_files(uri)
    assert [a[:-1] for a in after] == before and all(len(a) == 2 for a in after)
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []


def test_batch_udf_equals_pylance_with_a_task_killed(spark, tmp_path):
    uri, copy = fixture(tmp_path)

    def double(batch):
        return pa.record_batch({"x2": pc.multiply(batch.column("x"), 2.0)})

    marker = arm_fault("backfill")
    backfill.add_columns(spark, uri, double, read_columns=["x"])
    assert not os.path.exists(marker)
    lance.dataset(copy).add_columns(double, read_columns=["x"])
    assert lance.dataset(uri).version == 3
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []


def test_concurrent_append_is_backfilled_too(spark, tmp_path, monkeypatch):
    """``Merge`` conflicts with an append: the job runs again on the latest version and only
    writes the column file of the appended fragment."""
    uri, _ = fixture(tmp_path)
    real, calls = backfill.run_tasks, []

    def patched(spark_, job, tasks, *args):
        calls.append(sum(len(t[1]) for t in tasks))        # fragments written by this run
        out = real(spark_, job, tasks, *args)
        if len(calls) == 1:
            lancefmt.write_dataset(rows(500, 510), uri, mode="append")
        return out

    monkeypatch.setattr(backfill, "run_tasks", patched)
    backfill.add_columns(spark, uri, lambda b: pa.record_batch({"x2": pc.multiply(b["x"], 2.0)}),
                         read_columns=["x"])
    assert calls == [3, 1]                                    # the first 3 reused, then 1 more
    t = lance.dataset(uri).to_table()
    assert sorted(t["id"].to_pylist()) == [i for i in range(120) if i % 9 != 4] + list(range(500, 510))
    assert t["x2"].to_pylist() == [x * 2 for x in t["x"].to_pylist()]
    assert lance.dataset(uri).version == 4                    # delete, append, merge
    assert unreferenced_files(uri) == []


def test_existing_column_names_are_refused(spark, tmp_path):
    uri, _ = fixture(tmp_path)
    with pytest.raises(LanceError, match="x"):
        backfill.add_columns(spark, uri, {"x": "id + 1"})
    with pytest.raises(LanceError):
        backfill.add_columns(spark, uri, {})
    assert lance.dataset(uri).version == 2
