"""``LanceTable``: the Delta-style shape over the distributed jobs gives what pylance's own
operations give on a copy; key-equality merge conditions merge on keys, any other condition
is the join condition."""
import lance
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import LanceError, NotSupportedError
from lancefmt.spark.table import LanceTable, merge_keys

from .conftest import assert_same_rows, twins, unreferenced_files


def test_merge_keys_from_conditions():
    assert merge_keys("id") == ["id"]
    assert merge_keys(["a", "b"]) == ["a", "b"]
    assert merge_keys("target.id = source.id") == ["id"]
    assert merge_keys("target.a = source.a AND source.b = target.b") == ["a", "b"]
    for bad in ("target.id = source.other", "target.id < source.id",
                "target.id = source.id OR target.k = source.k", "target.id = 3"):
        with pytest.raises(NotSupportedError):
            merge_keys(bad)
    with pytest.raises(LanceError):
        merge_keys("target.id = = source.id")


@pytest.mark.spark
def test_delta_shape_equals_pylance(spark, tmp_path):
    from pyspark.sql import functions as F

    ids = np.arange(60, dtype=np.int64)
    uri, copy = twins(tmp_path, pa.table({"id": ids, "x": ids * 0.5}), max_rows_per_file=20)
    table = LanceTable.forPath(spark, uri)
    assert table.delete(F.col("id") < 5) == 5
    assert table.update("id >= 50", {"x": "x * 10"}) == 10
    source = spark.createDataFrame([(7, -1.0), (70, -2.0)], "id long, x double")
    table.merge(source, "target.id = source.id").whenMatchedUpdateAll() \
        .whenNotMatchedInsertAll().whenNotMatchedBySourceDelete("target.id > 55").execute()
    table.addColumns({"y": "id + 1"})
    table.optimize().executeCompaction()

    peer = lance.dataset(copy)
    peer.delete("id < 5")
    peer.update({"x": "x * 10"}, "id >= 50")
    peer.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .when_not_matched_by_source_delete("id > 55").execute(pa.table({"id": [7, 70], "x": [-1.0, -2.0]}))
    peer.add_columns({"y": "id + 1"})
    peer.optimize.compact_files()
    assert_same_rows(uri, copy)
    assert table.toDF().count() == lance.dataset(uri).count_rows() == 52
    assert len(lance.dataset(uri).get_fragments()) == 1


@pytest.mark.spark
def test_merge_on_any_join_condition_equals_pylance(spark, tmp_path):
    """A condition with a range term: matched pairs are the pairs it holds for, so a source
    row whose key exists but fails the range is not matched and is inserted (Delta's
    semantics); pylance: the range as the update's condition, then the insert."""
    from pyspark.sql import functions as F

    ids = np.arange(20, dtype=np.int64)
    uri, copy = twins(tmp_path, pa.table({"id": ids, "x": ids * 1.0}), max_rows_per_file=10)
    source = pa.table({"id": pa.array([3, 4, 50], pa.int64()), "x": [9.0, 1.0, 5.0]})
    table = LanceTable.forPath(spark, uri)
    cond = (F.col("target.id") == F.col("source.id")) & (F.col("target.x") < F.col("source.x"))
    stats = table.merge(spark.createDataFrame(source.to_pandas()), cond) \
        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert stats == {"num_inserted_rows": 2, "num_updated_rows": 1, "num_deleted_rows": 0}
    peer = lance.dataset(copy)
    peer.merge_insert("id").when_matched_update_all("target.x < source.x").execute(source)
    peer.insert(source.slice(1, 2))
    assert_same_rows(uri, copy)


@pytest.mark.spark
def test_range_condition_updates_many_rows_and_refuses_ambiguity(spark, tmp_path):
    """One source row may match many target rows (a range); a target row matched by two
    source rows is an ambiguity error and nothing is committed."""
    ids = np.arange(30, dtype=np.int64)
    uri, copy = twins(tmp_path, pa.table({"id": ids, "x": ids * 1.0}), max_rows_per_file=10)
    table = LanceTable.forPath(spark, uri)
    ranges = spark.createDataFrame([(0, 4, -1.0), (20, 22, -2.0)], "lo long, hi long, v double")
    cond = "target.id BETWEEN source.lo AND source.hi"
    stats = table.merge(ranges, cond).whenMatchedUpdate(set={"x": "source.v"}).execute()
    assert stats["num_updated_rows"] == 8
    peer = lance.dataset(copy)
    peer.update({"x": "-1.0"}, "id BETWEEN 0 AND 4")
    peer.update({"x": "-2.0"}, "id BETWEEN 20 AND 22")
    assert_same_rows(uri, copy)
    overlapping = spark.createDataFrame([(0, 4, 1.0), (3, 6, 2.0)], "lo long, hi long, v double")
    with pytest.raises(LanceError, match="Ambiguous"):
        table.merge(overlapping, cond).whenMatchedUpdate(set={"x": "source.v"}).execute()
    assert lance.dataset(uri).version == 2 and unreferenced_files(uri) == []
