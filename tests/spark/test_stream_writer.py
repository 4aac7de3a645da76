"""The streaming sink on a real local SparkSession: a file source feeding a Lance dataset over one
checkpoint, restarts, replays of committed batches, and failed micro-batches."""
import importlib
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
import lance  # noqa: E402

import lancefmt  # noqa: E402
from lancefmt.spark.history import BATCH_ID_KEY, QUERY_ID_KEY, transaction, version_numbers  # noqa: E402


def add_file(directory, start, n, name=None):
    os.makedirs(directory, exist_ok=True)
    t = pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                  "s": pa.array([f"row-{i}" for i in range(start, start + n)])})
    pq.write_table(t, os.path.join(directory, name or f"part-{start:08d}.parquet"))


def run_stream(spark, source, checkpoint, uri, select=("id", "s")):
    query = (spark.readStream.schema("id long, s string").option("maxFilesPerTrigger", 1)
             .parquet(source).selectExpr(*select)
             .writeStream.format("lance").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(uri))
    query.awaitTermination()
    return query


def data_files(uri):
    return sorted(f for f in os.listdir(os.path.join(uri, "data")))


def test_three_runs_over_one_checkpoint(spark, tmp_path):
    source, ckpt, uri = str(tmp_path / "in"), str(tmp_path / "ckpt"), str(tmp_path / "out.lance")
    add_file(source, 0, 100)
    add_file(source, 100, 50)
    query = run_stream(spark, source, ckpt, uri)           # two files: two micro-batches
    assert version_numbers(uri) == [1, 2]
    add_file(source, 150, 30)
    run_stream(spark, source, ckpt, uri)                   # one new file: one more version
    assert version_numbers(uri) == [1, 2, 3]
    files = data_files(uri)
    run_stream(spark, source, ckpt, uri)                   # nothing new: nothing written
    assert version_numbers(uri) == [1, 2, 3] and data_files(uri) == files

    t = lance.dataset(uri).to_table()
    assert sorted(t["id"].to_pylist()) == list(range(180))  # every row once
    ids = set()
    for v in (1, 2, 3):
        _, txn = transaction(uri, v)
        assert txn.kind == ("overwrite" if v == 1 else "append")
        assert txn.transaction_properties[QUERY_ID_KEY] == str(query.id)
        ids.add(int(txn.transaction_properties[BATCH_ID_KEY]))
    assert ids == {0, 1, 2}
    assert not os.path.exists(os.path.join(uri, "_lancefmt_staging"))


def test_replayed_batch_is_skipped(spark, tmp_path):
    """A query killed after its sink committed but before Spark recorded the batch as done
    replays the batch on restart: the replay adds no version and no files."""
    source, ckpt, uri = str(tmp_path / "in"), str(tmp_path / "ckpt"), str(tmp_path / "out.lance")
    add_file(source, 0, 100)
    add_file(source, 100, 100)
    run_stream(spark, source, ckpt, uri)
    assert version_numbers(uri) == [1, 2]
    files = data_files(uri)
    for name in ("1", ".1.crc"):                           # the kill: batch 1 not marked done
        os.remove(os.path.join(ckpt, "commits", name))
    run_stream(spark, source, ckpt, uri)
    assert version_numbers(uri) == [1, 2] and data_files(uri) == files
    assert sorted(lancefmt.dataset(uri).to_table()["id"].to_pylist()) == list(range(200))
    add_file(source, 200, 10)                              # and the query carries on
    run_stream(spark, source, ckpt, uri)
    assert version_numbers(uri) == [1, 2, 3]
    assert sorted(lance.dataset(uri).to_table()["id"].to_pylist()) == list(range(210))


def test_failed_micro_batch_leaves_nothing_then_restart_completes(spark, tmp_path):
    source, ckpt, uri = str(tmp_path / "in"), str(tmp_path / "ckpt"), str(tmp_path / "out.lance")
    add_file(source, 0, 100)
    run_stream(spark, source, ckpt, uri)
    files = data_files(uri)
    add_file(source, 100, 5000, name="part-bad.parquet")   # a row in it fails the batch
    with pytest.raises(Exception):
        run_stream(spark, source, ckpt, uri,
                   select=("id", "CASE WHEN id = 4000 THEN raise_error('boom') ELSE s END AS s"))
    assert version_numbers(uri) == [1] and data_files(uri) == files
    assert not os.path.exists(os.path.join(uri, "_lancefmt_staging"))
    run_stream(spark, source, ckpt, uri)                   # restarted, the batch goes through
    assert version_numbers(uri) == [1, 2]
    assert sorted(lance.dataset(uri).to_table()["id"].to_pylist()) == list(range(5100))


def test_sink_needs_a_checkpoint(spark, tmp_path):
    from lancefmt.spark.stream_writer import query_identity

    with pytest.raises(lancefmt.LanceError, match="checkpointLocation"):
        query_identity({"path": str(tmp_path)})
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "metadata").write_text('{"id":"abc"}')
    assert query_identity({"path": "x", "checkpointLocation": str(ckpt)}) == "abc"
    shutil.rmtree(ckpt)
    assert query_identity({"path": "x", "checkpointLocation": str(ckpt)}).startswith("checkpoint-")


def _batches(start, n):
    t = pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                  "s": pa.array([f"row-{i}" for i in range(start, start + n)])})
    return t.to_batches(max_chunksize=64)


def test_sink_protocol_without_spark(tmp_path):
    """The driver/executor protocol by hand: creation with initial bases, appends, a replayed
    batch, an empty batch, an aborted one."""
    import json

    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from lancefmt.spark.stream_writer import LanceStreamWriter

    uri = str(tmp_path / "out.lance")
    bases = json.dumps([{"path": str(tmp_path / "b1"), "name": "b1"}])
    options = {"path": uri, "query_id": "q-1", "initial_bases": bases, "target_bases": "b1"}
    schema = StructType([StructField("id", LongType()), StructField("s", StringType())])
    planned = LanceStreamWriter.plan_stream(options, schema, False)  # pickled to executors once

    def batch(batch_id, start, n):
        msg = planned.write(iter(_batches(start, n)))
        LanceStreamWriter.plan_stream(options, schema, False).commit([msg], batch_id)
        return msg

    batch(0, 0, 100)
    batch(1, 100, 50)            # the dataset exists now: the "create" writer appends
    assert version_numbers(uri) == [1, 2]
    replay = batch(1, 100, 50)  # batch 1 again (a restart): skipped, its files removed
    assert version_numbers(uri) == [1, 2]
    assert not any(os.path.exists(u[len("file://"):] if u.startswith("file://") else u)
                   for u in replay.files)
    batch(2, 0, 0)               # no rows: no commit
    assert version_numbers(uri) == [1, 2]
    msg = planned.write(iter(_batches(150, 10)))
    LanceStreamWriter.plan_stream(options, schema, False).abort([msg], 3)
    assert version_numbers(uri) == [1, 2] and msg.files
    assert len(os.listdir(tmp_path / "b1")) == 2    # the two committed files, nothing else
    killed = planned.write(iter(_batches(150, 10)))  # a task of a run killed mid-batch
    batch(3, 150, 10)                                  # the restarted run's batch 3
    assert version_numbers(uri) == [1, 2, 3]
    assert not any(os.path.exists(u[len("file://"):] if u.startswith("file://") else u)
                   for u in killed.files)              # the staging records found them
    assert len(os.listdir(tmp_path / "b1")) == 3
    ds = lancefmt.dataset(uri)
    assert sorted(ds.to_table()["id"].to_pylist()) == list(range(160))
    assert lance.dataset(uri).count_rows() == 160
    _, txn = transaction(uri, 2)
    assert txn.transaction_properties == {QUERY_ID_KEY: "q-1", BATCH_ID_KEY: "1"}
    with pytest.raises(lancefmt.LanceError, match="append"):
        LanceStreamWriter.plan_stream(options, schema, True)


def test_replay_after_a_kill_between_commit_and_cleanup_keeps_committed_files(tmp_path, monkeypatch):
    """A run killed after committing batch 1 but before clearing its staging records: the
    replayed batch 1 (skipped) and a later abort must not delete the files version 2 references."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    write_module = importlib.import_module("lancefmt.dataset.write.staging")
    from lancefmt.spark.stream_writer import LanceStreamWriter

    uri = str(tmp_path / "out.lance")
    options = {"path": uri, "query_id": "q-kill"}
    schema = StructType([StructField("id", LongType()), StructField("s", StringType())])

    def writer():
        return LanceStreamWriter.plan_stream(options, schema, False)

    writer().commit([writer().write(iter(_batches(0, 100)))], 0)
    msg = writer().write(iter(_batches(100, 50)))
    with monkeypatch.context() as m:
        m.setattr(write_module, "clear_staging", lambda *a, **k: None)  # the kill
        writer().commit([msg], 1)
    assert version_numbers(uri) == [1, 2]
    replay = writer().write(iter(_batches(100, 50)))
    writer().commit([replay], 1)                      # skipped: only the replay's files go
    failed = writer().write(iter(_batches(150, 10)))
    writer().abort([failed], 2)                       # an aborted batch 2 after it
    assert version_numbers(uri) == [1, 2]
    assert all(os.path.exists(u[len("file://"):] if u.startswith("file://") else u) for u in msg.files)
    assert not any(os.path.exists(u[len("file://"):] if u.startswith("file://") else u)
                   for u in replay.files + failed.files)
    assert sorted(lance.dataset(uri).to_table()["id"].to_pylist()) == list(range(150))
