"""Merge (upsert) from a DataFrame on executors (``lancefmt.spark.merge.MergeBuilder``): every
clause equal to pylance's ``merge_insert`` on a copy (rows and statistics), only fragments
with matched rows touched, one commit even with a task killed, stable row ids kept, ambiguous
matches and ``when_matched_fail`` refused without a commit."""
import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import LanceError
from lancefmt.spark.merge import MergeBuilder

from .conftest import (
    arm_fault, assert_same_rows, twins, unreferenced_files, writer_between_tasks_and_commit,
)

pytestmark = pytest.mark.spark


def rows(ids, x=None):
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5 if x is None else np.full(ids.size, x),
                     "s": pa.array([f"r{i}" for i in ids])})


def both(spark, tmp_path, source, clauses, **write_kw):
    """Run ``clauses(builder)`` with the source table on Spark and with pylance on a copy:
    (our stats, pylance's stats, uri, copy)."""
    uri, copy = twins(tmp_path, rows(range(100)), max_rows_per_file=25, **write_kw)
    for u in (uri, copy):
        lance.dataset(u).delete("id % 10 = 9")
    ours = clauses(MergeBuilder(spark, uri, spark.createDataFrame(source.to_pandas()), "id"))
    theirs = clauses(lance.dataset(copy).merge_insert("id")).execute(source)
    return ours.execute(), theirs, uri, copy


def stats_of(s):
    return {k: s[k] for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}


def test_upsert_equals_pylance_with_a_task_killed(spark, tmp_path):
    source = rows([3, 9, 30, 31, 150, 151], x=-1.0)            # 9 was deleted: inserted again
    marker = arm_fault("merge")
    ours, theirs, uri, copy = both(spark, tmp_path, source, lambda b: b.when_matched_update_all()
                                   .when_not_matched_insert_all())
    assert not os.path.exists(marker)
    assert stats_of(ours) == stats_of(theirs) == {"num_inserted_rows": 3, "num_updated_rows": 3,
                                                  "num_deleted_rows": 0}
    assert lance.dataset(uri).version == 3
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []
    touched = {f.fragment_id for f in lance.dataset(uri).get_fragments()
               if f.metadata.deletion_file is not None and f.metadata.deletion_file.read_version == 2}
    assert touched == {0, 1}                                    # fragments 2 and 3 untouched


def test_not_matched_by_source_delete_and_conditions_equal_pylance(spark, tmp_path):
    source = rows([1, 2, 60, 200], x=25.0)
    ours, theirs, uri, copy = both(
        spark, tmp_path, source,
        lambda b: b.when_matched_update_all("target.x < source.x").when_not_matched_insert_all()
        .when_not_matched_by_source_delete("id >= 80"))
    assert stats_of(ours) == stats_of(theirs)
    assert ours["num_deleted_rows"] == 18 and ours["num_updated_rows"] == 2
    assert_same_rows(uri, copy)


def test_matched_delete_equals_pylance(spark, tmp_path):
    ours, theirs, uri, copy = both(spark, tmp_path, rows([5, 6, 7, 500]),
                                   lambda b: b.when_matched_delete())
    assert stats_of(ours) == stats_of(theirs)
    assert ours["num_deleted_rows"] == 3
    assert_same_rows(uri, copy)


def test_upsert_keeps_stable_row_ids_like_pylance(spark, tmp_path):
    ours, theirs, uri, copy = both(spark, tmp_path, rows([4, 40, 140], x=7.0),
                                   lambda b: b.when_matched_update_all()
                                   .when_not_matched_insert_all(), enable_stable_row_ids=True)
    assert stats_of(ours) == stats_of(theirs)
    a = lance.dataset(uri).to_table(with_row_id=True).sort_by("id")
    b = lance.dataset(copy).to_table(with_row_id=True).sort_by("id")
    assert a.filter(pa.compute.less(a["id"], 100)).equals(b.filter(pa.compute.less(b["id"], 100)))
    assert a.num_rows == b.num_rows


def test_ambiguous_matches_and_matched_fail_commit_nothing(spark, tmp_path):
    uri = str(tmp_path / "ds.lance")
    lancefmt.write_dataset(rows(range(20)), uri, max_rows_per_file=10)
    twice = spark.createDataFrame(rows([3, 3, 50]).to_pandas())
    with pytest.raises(LanceError, match="[Aa]mbiguous"):
        MergeBuilder(spark, uri, twice, "id").when_matched_update_all().execute()
    once = spark.createDataFrame(rows([3, 50]).to_pandas())
    with pytest.raises(LanceError, match="when_matched_fail"):
        MergeBuilder(spark, uri, once, "id").when_matched_fail().when_not_matched_insert_all() \
            .execute()
    with pytest.raises(LanceError, match="columns"):
        MergeBuilder(spark, uri, once.drop("s"), "id").when_matched_update_all().execute()
    assert lance.dataset(uri).version == 1
    assert unreferenced_files(uri) == []


@pytest.mark.parametrize("concurrent, runs", [("append", 1), ("delete", 2)])
def test_concurrent_writers_rebased_or_run_again(spark, tmp_path, monkeypatch, concurrent, runs):
    """An append while the merge runs is rebased over (both survive); a delete in a fragment
    the merge also deletes from is a conflict: the merge runs again on the latest version."""
    from lancefmt.spark import merge

    uri, copy = twins(tmp_path, rows(range(40)), max_rows_per_file=20)

    def other_writer(u):
        if concurrent == "append":
            lancefmt.write_dataset(rows([1000, 1001]), u, mode="append")
        else:
            lancefmt.dataset(u).delete("id = 31")

    calls = writer_between_tasks_and_commit(monkeypatch, merge, lambda: other_writer(uri))
    source = rows([30, 35, 77], x=-1.0)
    MergeBuilder(spark, uri, spark.createDataFrame(source.to_pandas()), "id") \
        .when_matched_update_all().when_not_matched_insert_all().execute()
    other_writer(copy)
    lance.dataset(copy).merge_insert("id").when_matched_update_all() \
        .when_not_matched_insert_all().execute(source)
    assert len(calls) == runs
    assert lance.dataset(uri).version == 3
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []


PK = {b"lance-schema:unenforced-primary-key": b"true"}


def pk_rows(ids, x=None):
    t = rows(ids, x)
    return t.cast(pa.schema([pa.field("id", pa.int64(), False, metadata=PK)] + list(t.schema)[1:]))


@pytest.mark.parametrize("concurrent, runs", [("same key", 2), ("other key", 1), ("append", 2)])
def test_concurrent_insert_of_the_same_primary_key_runs_again(spark, tmp_path, monkeypatch,
                                                              concurrent, runs):
    """On the primary key the merge carries the keys it inserts: a concurrent merge inserting
    one of them (or an append, whose keys are unknown) makes the job run again on the latest
    version, so no key ends up twice; a merge inserting other keys is rebased over. pylance,
    planned before the same concurrent writer on a copy, ends with the same rows."""
    from lancefmt.spark import merge

    uri, copy = twins(tmp_path, pk_rows(range(40)), max_rows_per_file=20)

    def other_writer(u):
        if concurrent == "append":
            lancefmt.write_dataset(pk_rows([1000]), u, mode="append")
        else:
            lancefmt.dataset(u).merge_insert("id").when_matched_update_all() \
                .when_not_matched_insert_all() \
                .execute(pk_rows([77 if concurrent == "same key" else 88], x=5.0))

    calls = writer_between_tasks_and_commit(monkeypatch, merge, lambda: other_writer(uri))
    source = pk_rows([30, 77], x=-1.0)
    MergeBuilder(spark, uri, spark.createDataFrame(source.to_pandas()), "id") \
        .when_matched_update_all().when_not_matched_insert_all().execute()
    planned = lance.dataset(copy)
    other_writer(copy)
    planned.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(source)
    assert len(calls) == runs
    ids = lance.dataset(uri).to_table()["id"].to_pylist()
    assert ids.count(77) == 1 and len(ids) == len(set(ids))
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []


def test_conditional_insert_equals_pylance_on_the_filtered_source(spark, tmp_path):
    """``when_not_matched_insert_all(condition)`` inserts only the unmatched source rows the
    condition holds for; matched rows are updated whatever the condition (pylance: an update
    with the whole source, an insert with the filtered one)."""
    uri, copy = twins(tmp_path, rows(range(20)), max_rows_per_file=10)
    source = rows([3, 4, 30, 31, 32])
    source = source.set_column(1, "x", pa.array([1.0, -1.0, 2.0, -2.0, 3.0]))
    stats = MergeBuilder(spark, uri, spark.createDataFrame(source.to_pandas()), "id") \
        .when_matched_update_all().when_not_matched_insert_all("source.x > 0").execute()
    assert stats == {"num_inserted_rows": 2, "num_updated_rows": 2, "num_deleted_rows": 0}
    peer = lance.dataset(copy)
    peer.merge_insert("id").when_matched_update_all().execute(source)
    peer.merge_insert("id").when_not_matched_insert_all() \
        .execute(source.filter(pa.compute.greater(source["x"], 0)))
    assert_same_rows(uri, copy)


def test_explicit_update_and_insert_clauses_equal_pylance(spark, tmp_path):
    """Delta's ``whenMatchedUpdate(set=)`` sets some columns from expressions over target and
    source (the others keep the target's values) and ``whenNotMatchedInsert(values=)`` builds
    the new rows (unnamed columns null); pylance: a merge of the partial source, then an
    insert of the rows built in Arrow."""
    from pyspark.sql import functions as F

    uri, copy = twins(tmp_path, rows(range(20)), max_rows_per_file=10)
    source = spark.createDataFrame([(3, 10.0), (4, 20.0), (40, 7.0)], "id long, delta double")
    stats = MergeBuilder(spark, uri, source, "id") \
        .whenMatchedUpdate("source.delta > 15", {"x": "target.x + source.delta"}) \
        .whenNotMatchedInsert(values={"id": F.col("source.id"), "x": "source.delta * 2"}) \
        .execute()
    assert stats == {"num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}
    peer = lance.dataset(copy)
    peer.merge_insert("id").when_matched_update_all().execute(
        pa.table({"id": pa.array([4], pa.int64()), "x": [2.0 + 20.0]}))
    peer.insert(pa.table({"id": pa.array([40], pa.int64()), "x": [14.0],
                          "s": pa.array([None], pa.string())}))
    assert_same_rows(uri, copy)
    with pytest.raises(LanceError):
        MergeBuilder(spark, uri, source, "id").when_matched_update(set={"nope": "1"}).execute()
    with pytest.raises(LanceError):
        MergeBuilder(spark, uri, source, "id").when_matched_update_all().execute()
