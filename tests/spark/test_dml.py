"""Delete and update by a Spark predicate on executors (``lancefmt.spark.dml``): equal to
pylance's ``delete``/``update`` on a copy, only the fragments with matching rows touched, one
commit even with a task killed, stable row ids kept, and a concurrent delete of the same
fragment handled by running again on the latest version."""
import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import LanceError
from lancefmt.spark import dml
from lancefmt.spark.history import transaction

from .conftest import (
    arm_fault, assert_same_rows, twins, unreferenced_files, writer_between_tasks_and_commit,
)

pytestmark = pytest.mark.spark


def rows(lo, hi):
    ids = np.arange(lo, hi, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5, "s": pa.array([f"r{i}" for i in ids])})


def fragments(uri):
    return {f.fragment_id: (tuple(d.path for d in f.data_files()),
                            f.metadata.deletion_file and f.metadata.deletion_file.asdict())
            for f in lance.dataset(uri).get_fragments()}


def test_delete_equals_pylance_and_touches_only_matching_fragments(spark, tmp_path):
    from pyspark.sql import functions as F

    uri, copy = twins(tmp_path, rows(0, 100), max_rows_per_file=25)
    before = fragments(uri)
    marker = arm_fault("delete")
    odd = F.udf(lambda i: i % 2 == 1, "boolean")
    n = dml.delete(spark, uri, (F.col("id") >= 25) & (F.col("id") < 60) & odd("id"))
    assert not os.path.exists(marker)
    lance.dataset(copy).delete("id >= 25 AND id < 60 AND id % 2 = 1")
    assert n == 18 and lance.dataset(uri).version == 2
    predicate = transaction(uri, 2)[1].operation.predicate  # Spark's text, not the Column's repr
    assert not predicate.startswith("Column<") and ">=(id, 25)" in predicate
    after = fragments(uri)
    assert after[0] == before[0] and after[3] == before[3]        # untouched
    assert after[1] != before[1] and after[2] != before[2]
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []


def test_delete_of_whole_fragments_and_of_nothing(spark, tmp_path):
    uri, copy = twins(tmp_path, rows(0, 100), max_rows_per_file=25)
    assert dml.delete(spark, uri, "id < 50 OR id = 99") == 51
    lance.dataset(copy).delete("id < 50 OR id = 99")
    assert sorted(f.fragment_id for f in lance.dataset(uri).get_fragments()) == [2, 3]
    assert_same_rows(uri, copy)
    assert dml.delete(spark, uri, "id > 1000") == 0
    assert lance.dataset(uri).version == 2                         # nothing matched: no commit


def test_update_equals_pylance_with_a_task_killed(spark, tmp_path):
    uri, copy = twins(tmp_path, rows(0, 100), max_rows_per_file=25)
    for u in (uri, copy):
        lance.dataset(u).delete("id % 10 = 7")
    marker = arm_fault("update")
    n = dml.update(spark, uri, {"x": "x + 1", "s": "concat(s, '!')"}, "id BETWEEN 20 AND 44")
    assert not os.path.exists(marker)
    theirs = lance.dataset(copy).update({"x": "x + 1", "s": "s || '!'"}, "id >= 20 AND id <= 44")
    assert n == theirs["num_rows_updated"] == 23
    assert lance.dataset(uri).version == 3
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []


def test_update_keeps_stable_row_ids_like_pylance(spark, tmp_path):
    uri, copy = twins(tmp_path, rows(0, 60), max_rows_per_file=20, enable_stable_row_ids=True)
    dml.update(spark, uri, {"x": "-x"}, "id % 3 = 0")
    lance.dataset(copy).update({"x": "-x"}, "id % 3 = 0")
    ours = lance.dataset(uri).to_table(with_row_id=True).sort_by("id")
    theirs = lance.dataset(copy).to_table(with_row_id=True).sort_by("id")
    assert ours.equals(theirs)
    assert lance.dataset(uri).to_table(filter="id = 3")["x"].to_pylist() == [-1.5]


def test_update_without_a_condition_and_errors(spark, tmp_path):
    uri, copy = twins(tmp_path, rows(0, 30), max_rows_per_file=10)
    assert dml.update(spark, uri, {"id": "id * 10"}) == 30
    lance.dataset(copy).update({"id": "id * 10"})
    assert_same_rows(uri, copy)
    with pytest.raises(LanceError, match="nope"):
        dml.update(spark, uri, {"nope": "1"})
    with pytest.raises(LanceError):
        dml.update(spark, uri, {})
    assert lance.dataset(uri).version == 2


def test_concurrent_delete_of_the_same_fragment_runs_the_update_again(spark, tmp_path,
                                                                     monkeypatch):
    uri, _ = twins(tmp_path, rows(0, 40), max_rows_per_file=20)
    calls = writer_between_tasks_and_commit(   # a delete in fragment 0, as the update
        monkeypatch, dml, lambda: lancefmt.dataset(uri).delete("id = 1"))
    assert dml.update(spark, uri, {"x": "100.0"}, "id < 5") == 4    # 0, 2, 3, 4: after the delete
    assert len(calls) == 2
    t = lance.dataset(uri).to_table().sort_by("id")
    assert t["id"].to_pylist() == [0] + list(range(2, 40))
    assert t["x"].to_pylist()[:4] == [100.0] * 4 and t["x"].to_pylist()[4] == 2.5
    assert lance.dataset(uri).version == 3
    assert unreferenced_files(uri) == []
