"""Read planning (no SparkSession): even partitions, small pickles, the pushdown switch."""
import pickle

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
import lancefmt  # noqa: E402
from lancefmt.spark.reader import LancePushdownReader, LanceReader, plan_partitions, pushdown_enabled  # noqa: E402
from lancefmt.spark.source import LanceDataSource  # noqa: E402


class FakeFragment:
    def __init__(self, id, rows):
        self.id, self.physical_rows = id, rows


def ranges(parts):
    return [[(f.id, a, b) for f, a, b in p.pieces] for p in parts]


def test_big_fragments_are_cut_evenly():
    parts = plan_partitions([FakeFragment(0, 10), FakeFragment(1, 3)], 4)
    assert ranges(parts) == [[(0, 0, 3)], [(0, 3, 6)], [(0, 6, 10)], [(1, 0, 3)]]


def test_small_fragments_are_packed_and_empty_ones_skipped():
    frags = [FakeFragment(i, 2) for i in range(5)] + [FakeFragment(9, 0)]
    assert ranges(plan_partitions(frags, 4)) == [[(0, 0, 2), (1, 0, 2)], [(2, 0, 2), (3, 0, 2)], [(4, 0, 2)]]
    assert plan_partitions([], 4) == []


@pytest.fixture
def dataset_uri(tmp_path):
    uri = str(tmp_path / "ds")
    t = pa.table({"id": pa.array(np.arange(3000)), "s": pa.array([str(i) for i in range(3000)])})
    lancefmt.write_dataset(t, uri, max_rows_per_file=1000)
    return uri


def test_partitions_pickle_small_and_read_back_everything(dataset_uri):
    source = LanceDataSource({"path": dataset_uri, "rows_per_partition": "600"})
    reader = source.reader(source.schema())
    parts = reader.partitions()
    assert len(parts) == 6
    blobs = [pickle.dumps(p) for p in parts]
    assert max(len(b) for b in blobs) < 2_000        # a fragment and its context, no manifest
    assert len(pickle.dumps(reader)) < 4_000
    ids = []
    for blob in blobs:
        part = pickle.loads(blob)
        for batch in pickle.loads(pickle.dumps(reader)).read(part):
            assert batch.schema.equals(reader.target)
            ids.extend(batch.column("id").to_pylist())
    assert ids == list(range(3000))


def test_schema_pins_the_version(dataset_uri):
    source = LanceDataSource({"path": dataset_uri})
    schema = source.schema()
    lancefmt.write_dataset(pa.table({"id": pa.array([1]), "s": ["x"]}), dataset_uri, mode="append")
    source = pickle.loads(pickle.dumps(source))  # as Spark ships it to the planning process
    assert source.reader(schema).version == 1
    fresh = LanceDataSource({"path": dataset_uri})
    assert fresh.reader(fresh.schema()).version == 2


def _call_in(filename, flag):
    """Run pushdown_enabled() from a frame whose code lives in ``filename`` with the planning
    flag set, as Spark's planning worker does."""
    code = compile("def _main(enable_pushdown):\n    return probe()\n", filename, "exec")
    scope = {"probe": pushdown_enabled}
    exec(code, scope)
    return scope["_main"](flag)


def test_pushdown_switch_follows_the_planning_flag(dataset_uri):
    assert pushdown_enabled() is True
    assert _call_in("/x/pyspark/sql/worker/plan_data_source_read.py", False) is False
    assert _call_in("/x/pyspark/sql/worker/plan_data_source_read.py", True) is True
    assert _call_in("/x/pyspark/sql/worker/data_source_pushdown_filters.py", False) is True
    source = LanceDataSource({"path": dataset_uri})
    assert type(source.reader(source.schema())) is LancePushdownReader
    assert "pushFilters" not in LanceReader.__dict__
