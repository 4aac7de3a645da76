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


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 8])
def test_never_fewer_partitions_than_cores_or_fragments(cores):
    frags = [FakeFragment(i, 20_000 // 7 + (i < 20_000 % 7)) for i in range(7)]
    parts = plan_partitions(frags, 1 << 20, cores)
    assert len(parts) >= min(7, cores)
    assert [r for p in ranges(parts) for r in p] == [(f.id, 0, f.physical_rows) for f in frags]


def test_tiny_fragments_fill_every_core():
    parts = plan_partitions([FakeFragment(i, 1) for i in range(5)], 1 << 20, 4)
    assert len(parts) == 4 and sum(p.num_rows for p in parts) == 5


def test_few_big_fragments_are_cut_for_the_cores():
    parts = plan_partitions([FakeFragment(0, 1_000_000)], 1 << 20, 4)
    assert ranges(parts) == [[(0, i * 250_000, (i + 1) * 250_000)] for i in range(4)]
    # but never into ranges below MIN_SPLIT_ROWS
    assert len(plan_partitions([FakeFragment(0, 20_000)], 1 << 20, 4)) == 1


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


def test_wide_batches_are_split_by_bytes(tmp_path):
    uri = str(tmp_path / "vectors")
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.ones(1000 * 256, np.float32)), 256)
    lancefmt.write_dataset(pa.table({"id": pa.array(np.arange(1000)), "vec": vectors}), uri)
    source = LanceDataSource({"path": uri, "max_batch_bytes": str(100_000)})
    reader = source.reader(source.schema())
    out = [b for p in reader.partitions() for b in reader.read(p)]
    assert sum(b.num_rows for b in out) == 1000 and len(out) >= 10
    assert max(b.nbytes for b in out) <= 110_000


def test_batches_are_sized_by_row_width():
    from lancefmt.spark.reader import MAX_BATCH_ROWS, MIN_BATCH_ROWS, batch_rows

    schema = pa.schema([("x", pa.float64()), ("s", pa.string()), ("vec", pa.list_(pa.float32(), 768))])
    assert batch_rows(schema, ["x"]) == MAX_BATCH_ROWS
    assert 4 * MIN_BATCH_ROWS < batch_rows(schema, ["x", "s"]) < MAX_BATCH_ROWS
    assert batch_rows(schema, ["x", "vec"]) == MIN_BATCH_ROWS  # 3 KB rows: the floor
