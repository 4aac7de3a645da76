"""The Spark writer's protocol without a SparkSession: plan on the "driver", write() as tasks
would, then commit()/abort() -- with concurrent writers in between."""
import os
import pickle

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
from pyspark.sql import types as T  # noqa: E402

import lancefmt  # noqa: E402
from lancefmt.errors import CommitConflictError, DatasetExistsError, InvalidArgumentError  # noqa: E402
from lancefmt.spark.options import WriteOptions  # noqa: E402
from lancefmt.spark.writer import LanceWriter  # noqa: E402

SCHEMA = T.StructType([T.StructField("id", T.LongType()), T.StructField("s", T.StringType())])


def batches(start, n, size=100):
    for a in range(start, start + n, size):
        b = min(start + n, a + size)
        yield pa.record_batch({"id": pa.array(range(a, b), pa.int64()),
                               "s": pa.array([f"r{i}" for i in range(a, b)])})


def plan(uri, overwrite=False, **options):
    writer = LanceWriter.plan(WriteOptions.parse({"path": uri, **options}), SCHEMA, overwrite)
    return pickle.loads(pickle.dumps(writer))  # as Spark ships it


def run_tasks(writer, *ranges):
    return [pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(writer)).write(batches(a, n))))
            for a, n in ranges]


def files(root):
    return {os.path.join(r, n) for r, _, ns in os.walk(root) for n in ns}


def test_one_commit_for_all_tasks(tmp_path):
    uri = str(tmp_path / "ds")
    writer = plan(uri, max_rows_per_file="150")
    messages = run_tasks(writer, (0, 300), (300, 200))
    assert [m.rows for m in messages] == [300, 200]
    assert len(pickle.dumps(messages[0])) < 2_000
    writer.commit(messages)
    ds = lancefmt.dataset(uri)
    assert ds.version == 1 and ds.count_rows() == 500 and len(ds.get_fragments()) == 4
    assert sorted(ds.to_table()["id"].to_pylist()) == list(range(500))


def test_abort_deletes_every_file_written(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([0], pa.int64()), "s": ["x"]}), uri)
    before = files(tmp_path)
    writer = plan(uri)
    messages = run_tasks(writer, (0, 100), (100, 100)) + [None]  # a failed task sends None
    assert files(tmp_path) != before
    writer.abort(messages)
    assert files(tmp_path) == before and lancefmt.dataset(uri).version == 1


def test_append_is_rebased_over_a_concurrent_append(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([-1], pa.int64()), "s": ["x"]}), uri)
    writer = plan(uri)
    messages = run_tasks(writer, (0, 100))
    lancefmt.write_dataset(pa.table({"id": pa.array([-2], pa.int64()), "s": ["y"]}), uri, mode="append")
    writer.commit(messages)
    ds = lancefmt.dataset(uri)
    assert ds.version == 3 and ds.count_rows() == 102


def test_append_after_a_concurrent_overwrite_conflicts_and_cleans_up(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([-1], pa.int64()), "s": ["x"]}), uri)
    writer = plan(uri)
    messages = run_tasks(writer, (0, 100))
    lancefmt.write_dataset(pa.table({"id": pa.array([-2], pa.int64()), "s": ["y"]}), uri, mode="overwrite")
    written = [u for m in messages for u in m.files]
    assert all(os.path.exists(u) for u in written)
    with pytest.raises(CommitConflictError):
        writer.commit(messages)
    assert not any(os.path.exists(u) for u in written)
    assert lancefmt.dataset(uri).to_table()["id"].to_pylist() == [-2]


def test_creating_append_never_replaces_a_concurrently_created_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    writer = plan(uri)
    assert writer.mode == "create" and writer.read_version == 0
    messages = run_tasks(writer, (0, 10))
    lancefmt.write_dataset(pa.table({"id": pa.array([-2], pa.int64()), "s": ["y"]}), uri)
    with pytest.raises(DatasetExistsError):
        writer.commit(messages)
    assert lancefmt.dataset(uri).to_table()["id"].to_pylist() == [-2]


def test_overwrite_of_a_missing_dataset_creates_with_bases(tmp_path):
    uri, b1 = str(tmp_path / "ds"), str(tmp_path / "b1")
    writer = plan(uri, overwrite=True, initial_bases=f'[{{"path": "{b1}", "name": "b1"}}]',
                  target_bases="b1")
    writer.commit(run_tasks(writer, (0, 50)))
    ds = lancefmt.dataset(uri)
    assert [b.name for b in ds.base_paths.values()] == ["b1"] and len(files(b1)) == 1


def test_initial_bases_on_an_existing_dataset_is_refused(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([0], pa.int64()), "s": ["x"]}), uri)
    with pytest.raises(InvalidArgumentError, match="only applies when creating"):
        plan(uri, initial_bases='["/somewhere"]')


def test_metadata_columns_are_not_written(tmp_path):
    uri = str(tmp_path / "ds")
    schema = T.StructType(SCHEMA.fields + [T.StructField("_rowid", T.LongType(), False)])
    writer = LanceWriter.plan(WriteOptions.parse({"path": uri}), schema, False)
    batch = pa.record_batch({"id": pa.array([1], pa.int64()), "s": ["a"], "_rowid": pa.array([9], pa.int64())})
    writer.commit([writer.write(iter([batch]))])
    assert lancefmt.dataset(uri).schema.names == ["id", "s"]


def test_overwrite_keeps_the_bases_and_targets_them(tmp_path):
    uri, b1, b2 = str(tmp_path / "ds"), str(tmp_path / "b1"), str(tmp_path / "b2")
    bases = f'[{{"path": "{b1}", "name": "b1"}}, {{"path": "{b2}", "name": "b2"}}]'
    writer = plan(uri, initial_bases=bases, target_bases="b1", enable_stable_row_ids="true")
    writer.commit(run_tasks(writer, (0, 10)))
    assert lancefmt.dataset(uri).has_stable_row_ids
    writer = plan(uri, overwrite=True, target_bases="b2")
    writer.commit(run_tasks(writer, (100, 10), (200, 10)))
    ds = lancefmt.dataset(uri)
    assert ds.version == 2 and sorted(b.name for b in ds.base_paths.values()) == ["b1", "b2"]
    assert sorted(ds.to_table()["id"].to_pylist()) == list(range(100, 110)) + list(range(200, 210))
    assert len(files(b2)) == 2 and len(files(b1)) == 1   # v1's file stays for time travel
    assert lancefmt.dataset(uri, 1).count_rows() == 10
