"""``LanceTable``: the Delta-style shape over the distributed jobs gives what pylance's own
operations give on a copy; merge conditions are key equalities, anything else is refused."""
import lance
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import LanceError, NotSupportedError
from lancefmt.spark.table import LanceTable, merge_keys

from .conftest import assert_same_rows, twins


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
