"""write_dataset / dataset / scans on lancefmt alone (pylance checks are in tests/interop)."""
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancefmt
from lancefmt.errors import DatasetExistsError, DatasetNotFoundError, InvalidArgumentError, UnsupportedFeatureError


def table(n=100, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "x": (ids * 0.5).astype(np.float64),
        "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in ids]),
        "tags": pa.array([[f"t{i}"] * int(i % 3) for i in ids], pa.list_(pa.string())),
        "st": pa.array([{"a": int(i), "b": float(i)} for i in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 4).astype(np.float32)), 4),
    })


@pytest.fixture(params=["local", "memory"])
def uri(request, tmp_path, memory_uri):
    return str(tmp_path / "ds") if request.param == "local" else memory_uri


def test_create_append_overwrite(uri):
    t = table(100)
    ds = lancefmt.write_dataset(t, uri, max_rows_per_file=30)
    assert ds.version == 1
    assert [f.physical_rows for f in ds.get_fragments()] == [30, 30, 30, 10]
    assert ds.to_table().equals(t)
    # the dataset object is the handle (a memory:// URI names a new private store, as in pylance)
    with pytest.raises(DatasetExistsError):
        lancefmt.write_dataset(t, ds)
    ds = lancefmt.write_dataset(table(10, 100), ds, mode="append")
    assert ds.version == 2 and ds.count_rows() == 110
    assert [f.id for f in ds.get_fragments()] == [0, 1, 2, 3, 4]
    ds = lancefmt.write_dataset(table(5, 1000), ds, mode="overwrite")
    assert ds.version == 3 and ds.count_rows() == 5
    assert [f.id for f in ds.get_fragments()] == [5]
    assert ds.to_table()["id"].to_pylist() == list(range(1000, 1005))
    assert [v["version"] for v in ds.versions()] == [1, 2, 3]
    assert lancefmt.dataset(ds, version=2).count_rows() == 110
    if uri.startswith("memory://"):
        with pytest.raises(lancefmt.DatasetNotFoundError):
            lancefmt.dataset(uri)


def test_input_kinds(tmp_path):
    t = table(20)
    inputs = {
        "table": t,
        "batch": t.to_batches()[0],
        "reader": t.to_reader(),
        "iterable": iter(t.to_batches(max_chunksize=7)),
        "pandas": pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}),
        "dict": {"a": [1, 2]},
    }
    for name, data in inputs.items():
        ds = lancefmt.write_dataset(data, str(tmp_path / name))
        expected = data.num_rows if hasattr(data, "num_rows") else (20 if name in ("reader", "iterable") else len(next(iter(data.values()))) if isinstance(data, dict) else len(data))
        assert ds.count_rows() == expected, name
    with pytest.raises(InvalidArgumentError):
        lancefmt.write_dataset(iter([]), str(tmp_path / "empty"))
    ds = lancefmt.write_dataset(iter([]), str(tmp_path / "empty2"), schema=t.schema)
    assert ds.count_rows() == 0 and ds.schema.names == t.schema.names


def test_field_ids_are_depth_first(tmp_path):
    ds = lancefmt.write_dataset(table(3), str(tmp_path / "ds"))
    fields = ds.lance_fields
    assert [(f.name, f.id, f.parent_id) for f in fields] == [
        ("id", 0, -1), ("x", 1, -1), ("name", 2, -1), ("tags", 3, -1), ("item", 4, 3),
        ("st", 5, -1), ("a", 6, 5), ("b", 7, 5), ("vec", 8, -1)]
    m = ds.manifest
    assert m.max_fragment_id == 0
    assert m.writer_version.library == "lancefmt"
    assert m.data_format.file_format == "lance" and m.data_format.version == "2.2"
    assert m.timestamp.seconds > 0
    assert m.transaction_file.endswith(".txn")


def test_append_schema_checks(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"a": [1, 2], "b": ["x", "y"]}), uri)
    # same columns in another order is fine
    ds = lancefmt.write_dataset(pa.table({"b": ["z"], "a": [3]}), uri, mode="append")
    assert ds.to_table().to_pydict() == {"a": [1, 2, 3], "b": ["x", "y", "z"]}
    with pytest.raises(InvalidArgumentError, match="columns"):  # an unknown column
        lancefmt.write_dataset(pa.table({"a": [1], "c": [1]}), uri, mode="append")
    with pytest.raises(InvalidArgumentError, match="does not match"):
        lancefmt.write_dataset(pa.table({"a": ["no"], "b": ["x"]}), uri, mode="append")
    assert lancefmt.dataset(uri).version == 2
    # a nullable column may be missing (as pylance allows): it reads as nulls
    ds = lancefmt.write_dataset(pa.table({"a": [4]}), uri, mode="append")
    assert ds.to_table().to_pydict() == {"a": [1, 2, 3, 4], "b": ["x", "y", "z", None]}
    with pytest.raises(UnsupportedFeatureError, match="2.3"):
        lancefmt.write_dataset(pa.table({"a": [1]}), str(tmp_path / "x"), data_storage_version="2.3")


def test_reads(uri):
    t = table(100)
    ds = lancefmt.write_dataset(t, uri, max_rows_per_file=30)
    assert ds.to_table(columns=["name", "id"]).column_names == ["name", "id"]
    assert ds.to_table(filter="id >= 95")["id"].to_pylist() == [95, 96, 97, 98, 99]
    assert ds.to_table(filter=pc.field("id") < 3, columns=["x"]).to_pydict() == {"x": [0.0, 0.5, 1.0]}
    assert ds.count_rows("id < 10") == 10
    assert ds.count_rows() == 100
    frag2 = ds.get_fragments()[2]
    assert ds.to_table(fragments=[frag2])["id"].to_pylist() == list(range(60, 90))
    assert ds.to_table(limit=5, offset=28)["id"].to_pylist() == [28, 29, 30, 31, 32]
    assert ds.to_table(limit=0).num_rows == 0
    assert [b.num_rows for b in ds.to_batches(batch_size=20)] == [20, 10, 20, 10, 20, 10, 10]
    addr = ds.to_table(columns=["id"], with_row_address=True, filter="id IN (0, 31, 99)")
    assert addr["_rowaddr"].to_pylist() == [0, (1 << 32) | 1, (3 << 32) | 9]
    assert addr.schema.field("_rowaddr").type == pa.uint64()
    assert ds.to_table(columns=["id"], with_row_id=True)["_rowid"].to_pylist()[31] == (1 << 32) | 1
    assert ds.take([99, 0, 31]).to_pydict()["id"] == [99, 0, 31]
    assert ds.take([5], columns=["name"]).column_names == ["name"]
    with pytest.raises(InvalidArgumentError):
        ds.to_table(columns=["nope"])
    with pytest.raises(InvalidArgumentError):
        ds.to_table(filter="nope > 1")


def test_fragment_pickles_small_and_scans_alone(tmp_path):
    ds = lancefmt.write_dataset(table(1000), str(tmp_path / "ds"), max_rows_per_file=100)
    frag = ds.get_fragments()[3]
    data = pickle.dumps(frag)
    assert len(data) < 2000
    back = pickle.loads(data)
    assert back.to_table()["id"].to_pylist() == list(range(300, 400))
    assert back.count_rows("id < 350") == 50
    assert back.data_files() == frag.data_files()
    assert back.deletion_file() is None and back.deletion_mask() is None
    assert back.take([0, 99])["id"].to_pylist() == [300, 399]
    assert list(back.row_ids()[:2]) == [(3 << 32), (3 << 32) | 1]
    assert pickle.loads(pickle.dumps(ds)).version == ds.version


def test_versions_checkout_restore(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(10), uri)
    lancefmt.write_dataset(table(10, 10), uri, mode="append")
    ds = lancefmt.write_dataset(table(1, 50), uri, mode="overwrite")
    assert ds.count_rows() == 1
    old = ds.checkout_version(2)
    assert old.count_rows() == 20
    assert old.restore() is None  # as pylance: the object moves to the new version
    assert old.version == 4 and old.count_rows() == 20
    assert ds.checkout_version(2).version == 2 and ds.version == 3  # checkout: a separate object
    assert lancefmt.dataset(uri).to_table().equals(old.to_table())
    with pytest.raises(DatasetNotFoundError):
        lancefmt.dataset(uri, version=9)
    with pytest.raises(DatasetNotFoundError):
        lancefmt.dataset(str(tmp_path / "nothing"))


def test_delete(uri):
    ds = lancefmt.write_dataset(table(100), uri, max_rows_per_file=30)
    assert ds.delete("id % 10 = 3") == {"num_deleted_rows": 10}
    assert ds.count_rows() == 90 and ds.version == 2
    assert ds.delete(pc.field("id") >= 90) == {"num_deleted_rows": 9}  # drops the last fragment
    assert ds.count_rows() == 81
    assert [f.id for f in ds.get_fragments()] == [0, 1, 2]
    assert ds.to_table(filter="id % 10 = 3").num_rows == 0
    f0 = ds.get_fragments()[0]
    assert f0.num_deletions == 3
    mask = f0.deletion_mask()
    assert mask.sum() == 27 and not mask[3] and mask[4]
    assert ds.take([3])["id"].to_pylist() == [4]
    before = ds.version
    assert ds.delete("id < 0") == {"num_deleted_rows": 0}
    assert ds.version == before + 1  # an empty delete still commits a version, as pylance


def test_round_robin_start_offset(tmp_path):
    bases = [lancefmt.BasePath(str(tmp_path / f"b{i}"), name=f"b{i}") for i in range(3)]
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(2), uri, initial_bases=bases)
    ids = {b.name: b.id for b in lancefmt.dataset(uri).base_paths.values()}
    for offset in range(4):
        frags = lancefmt.write_fragments(table(4), uri, max_rows_per_file=2,
                                         target_bases=["b0", "b1", "b2"], target_offset=offset)
        got = [f.files[0].base_id for f in frags]
        names = ["b0", "b1", "b2"]
        assert got == [ids[names[(offset + k) % 3]] for k in range(2)]


def test_staging_records_let_an_abort_find_every_file(tmp_path):
    from lancefmt.dataset.write.staging import abort_staged_job, staged_files, staging_uri
    from lancefmt.errors import CommitConflictError
    import os

    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(2), uri)
    before = sorted(os.listdir(os.path.join(uri, "data")))
    staging = staging_uri(uri, "job1")
    frags = lancefmt.write_fragments(table(10), uri, max_rows_per_file=3, staging=staging)
    recorded = sorted(staged_files(staging))
    assert len(recorded) == len(frags) == 4
    assert sorted(os.path.basename(u) for u in recorded) == sorted(f.files[0].path for f in frags)
    removed = abort_staged_job(staging, settle=0.1)
    assert sorted(removed) == recorded
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before
    assert not os.path.exists(os.path.join(uri, "_lancefmt_staging"))
    # a task that starts a file after the abort marker is stopped (and removes its own files)
    from lancefmt.dataset.write.staging import ABORTED_MARKER
    from lancefmt.io import open_store

    open_store(staging).put(staging + "/" + ABORTED_MARKER, b"")
    with pytest.raises(CommitConflictError):
        lancefmt.write_fragments(table(10), uri, max_rows_per_file=3, staging=staging)
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before


def test_an_abort_removes_the_temp_file_of_a_task_killed_mid_write(tmp_path):
    """A task killed while writing a local data file leaves the file's temporary
    (``.tmp_<name>_<hex>``, never renamed into place) beside the name it staged: the job's abort
    removes it with the staged files, and leaves other temporaries alone."""
    import os
    import uuid

    from lancefmt.dataset.write.staging import abort_staged_job, stage_file, staging_uri
    from lancefmt.table.naming import data_file_name

    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(2), uri)
    data = os.path.join(uri, "data")
    before = sorted(os.listdir(data))
    staging = staging_uri(uri, "job-killed")
    name = data_file_name()
    stage_file(staging, uri + "/data/" + name)  # staged, then the process died mid-write
    torn = f".tmp_{name}_{uuid.uuid4().hex}"
    with open(os.path.join(data, torn), "wb") as f:
        f.write(b"LANC" * 100)
    other = f".tmp_{data_file_name()}_{uuid.uuid4().hex}"  # another writer's, not this job's
    with open(os.path.join(data, other), "wb") as f:
        f.write(b"x")
    abort_staged_job(staging, settle=0.05, linger=0.1)
    assert sorted(os.listdir(data)) == sorted(before + [other])


def test_a_task_of_a_closed_job_writes_nothing(tmp_path):
    """A job opened on the driver (open_staged_job) is closed by its commit or abort clearing
    its records: a task that starts afterwards (its worker started late) or stages a file
    afterwards (a speculative attempt) is refused and leaves no file and no directory."""
    import os

    from lancefmt.dataset.write.staging import (OPEN_MARKER, abort_staged_job, clear_staging,
                                        open_staged_job, staging_uri)
    from lancefmt.errors import CommitConflictError

    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(2), uri)
    before = sorted(os.listdir(os.path.join(uri, "data")))
    staging = staging_uri(uri, "job-open")
    open_staged_job(staging)
    assert os.path.exists(os.path.join(staging, OPEN_MARKER))
    frags = lancefmt.write_fragments(table(4), uri, max_rows_per_file=2, staging=staging,
                                     staging_open=True)
    assert len(frags) == 2
    clear_staging(staging)  # the job's commit: the job is closed
    for closer in ("commit", "abort"):
        if closer == "abort":
            open_staged_job(staging)
            abort_staged_job(staging, settle=0.05, linger=0.1)
        data_now = sorted(os.listdir(os.path.join(uri, "data")))
        with pytest.raises(CommitConflictError, match="aborted or has finished"):
            lancefmt.write_fragments(table(4), uri, max_rows_per_file=2, staging=staging,
                                     staging_open=True)
        assert sorted(os.listdir(os.path.join(uri, "data"))) == data_now
        assert not os.path.exists(os.path.join(uri, "_lancefmt_staging"))
    # the same late task of a job that never had the marker (a streaming query's) still runs
    lancefmt.write_fragments(table(2), uri, staging=staging)
    assert len(os.listdir(os.path.join(uri, "data"))) == len(before) + 3


def test_abort_waits_for_a_stalled_task(tmp_path):
    """A task that stalls longer than the abort's settle time between two files still has its
    files removed: the abort waits while the task's liveness record is up, and the task stops
    at its next file because the abort marker is still there."""
    import os
    import threading
    import time

    from lancefmt.dataset.write.staging import abort_staged_job, staging_uri
    from lancefmt.errors import CommitConflictError

    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(table(2), uri)
    before = sorted(os.listdir(os.path.join(uri, "data")))
    staging = staging_uri(uri, "job-stall")
    first_file = threading.Event()
    outcome = []

    def slow_batches():
        t = table(4)
        for k in range(4):
            yield from t.slice(k, 1).to_batches()
            if k == 1:
                first_file.set()
                time.sleep(1.0)        # the stall: far longer than the abort's settle time

    def task():
        reader = pa.RecordBatchReader.from_batches(table(4).schema, slow_batches())
        try:
            lancefmt.write_fragments(reader, uri, max_rows_per_file=1, staging=staging)
            outcome.append("finished")
        except CommitConflictError:
            outcome.append("stopped")

    worker = threading.Thread(target=task)
    worker.start()
    assert first_file.wait(10)
    removed = abort_staged_job(staging, settle=0.1)
    worker.join(10)
    assert outcome == ["stopped"]
    assert len(removed) >= 2
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before
    assert not os.path.exists(os.path.join(uri, "_lancefmt_staging"))
