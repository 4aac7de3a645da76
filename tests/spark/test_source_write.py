"""Spark writes Lance datasets through the ``lance`` sink: pylance reads the result, one version per
write, overwrite replaces, multi-base targets, failed jobs leave nothing, concurrent writers are
handled by the commit protocol."""
import json
import os

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance import DatasetBasePath

import lancefmt

pytestmark = pytest.mark.spark


def frame(spark, n, parts=4, start=0):
    return spark.range(start, start + n, numPartitions=parts).selectExpr(
        "id", "CAST(id % 13 AS DOUBLE) AS v", "concat('r', CAST(id AS STRING)) AS s")


def stats(uri, version=None):
    t = lance.dataset(uri, version=version).to_table()
    return t.num_rows, pa.compute.sum(t["id"]).as_py()


def all_files(*dirs):
    out = set()
    for d in dirs:
        for root, _, names in os.walk(d):
            out.update(os.path.join(root, n) for n in names)
    return out


def test_append_creates_then_appends_one_version_each(spark, tmp_path):
    uri = str(tmp_path / "ds")
    frame(spark, 10_000).write.format("lance").mode("append").option("max_rows_per_file", 1500).save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 1 and stats(uri) == (10_000, sum(range(10_000)))
    assert len(ds.get_fragments()) == 8          # 4 tasks x 2500 rows, 1500 rows per file
    assert ds.schema.names == ["id", "v", "s"]
    frame(spark, 5_000, start=10_000).write.format("lance").mode("append").save(uri)
    assert [v["version"] for v in lance.dataset(uri).versions()] == [1, 2]
    assert stats(uri) == (15_000, sum(range(15_000)))


def test_append_to_a_pylance_dataset(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64()),
                                  "v": pa.array(np.arange(100) * 0.5),
                                  "s": pa.array([f"p{i}" for i in range(100)])}),
                        uri, data_storage_version="2.0")
    # columns in another order: matched by name
    frame(spark, 1_000, start=100).select("s", "id", "v").write.format("lance").mode("append").save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 2 and stats(uri) == (1_100, sum(range(1_100)))
    assert ds.to_table(filter="id = 500")["s"].to_pylist() == ["r500"]


def test_overwrite_replaces_and_keeps_history(spark, tmp_path):
    uri = str(tmp_path / "ds")
    frame(spark, 1_000).write.format("lance").mode("append").save(uri)
    spark.range(0, 10, numPartitions=2).selectExpr("id * 2 AS id", "'x' AS name") \
        .write.format("lance").mode("overwrite").save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 2 and ds.schema.names == ["id", "name"]
    assert sorted(ds.to_table()["id"].to_pylist()) == list(range(0, 20, 2))
    assert stats(uri, version=1) == (1_000, sum(range(1_000)))


def test_overwrite_of_a_missing_dataset_creates_it(spark, tmp_path):
    uri = str(tmp_path / "ds")
    frame(spark, 100).write.format("lance").mode("overwrite").save(uri)
    assert lance.dataset(uri).version == 1 and stats(uri)[0] == 100


def test_default_save_mode_is_refused_by_spark(spark, tmp_path):
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        frame(spark, 10).write.format("lance").save(str(tmp_path / "ds"))


def test_create_multi_base_with_target_bases(spark, tmp_path):
    uri = str(tmp_path / "ds")
    b1, b2 = str(tmp_path / "bucket1"), str(tmp_path / "bucket2")
    bases = json.dumps([{"path": b1, "name": "b1"}, {"path": b2, "name": "b2"}])
    (frame(spark, 4_000).write.format("lance").mode("append").option("initial_bases", bases)
     .option("target_bases", "b1,b2").option("max_rows_per_file", 500).save(uri))
    ds = lance.dataset(uri)
    assert stats(uri) == (4_000, sum(range(4_000)))
    assert sorted(b.name for b in lancefmt.dataset(uri).base_paths.values()) == ["b1", "b2"]
    in_b1, in_b2 = all_files(b1), all_files(b2)
    assert len(in_b1) == len(in_b2) == 4         # each task alternates: 1000 rows -> 2 files
    assert not os.path.exists(os.path.join(uri, "data"))
    assert lancefmt.dataset(uri).count_rows() == 4_000


def test_append_to_a_pylance_multi_base_dataset(spark, tmp_path):
    uri = str(tmp_path / "ds")
    hot, cold = str(tmp_path / "hot"), str(tmp_path / "cold")
    lance.write_dataset(pa.table({"id": pa.array(range(50), pa.int64()),
                                  "v": pa.array(np.zeros(50)), "s": pa.array(["p"] * 50)}),
                        uri, data_storage_version="2.0",
                        initial_bases=[DatasetBasePath(hot, name="hot"),
                                       DatasetBasePath(cold, name="cold", is_dataset_root=True)],
                        target_bases=["hot"])
    frame(spark, 200, parts=2, start=50).write.format("lance").mode("append") \
        .option("target_bases", "cold").save(uri)
    assert stats(uri) == (250, sum(range(250)))
    assert len(all_files(os.path.join(cold, "data"))) == 2


def test_failed_task_leaves_no_version_and_no_files(spark, tmp_path):
    """Partition 3 fails after writing some files (a value that does not fit the column): the
    task deletes its own files, abort() deletes the other tasks', no version is committed."""
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([0], pa.int64()), "small": pa.array([1], pa.uint8())}), uri)
    before = all_files(tmp_path)
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key)
    spark.conf.set(key, "100")
    try:
        df = spark.range(0, 4_000, numPartitions=4).selectExpr(
            "id", "CASE WHEN id = 3950 THEN 300 ELSE id % 200 END AS small")
        with pytest.raises(Exception, match="small"):
            df.write.format("lance").mode("append").option("max_rows_per_file", 100).save(uri)
    finally:
        spark.conf.set(key, old)
    assert lancefmt.dataset(uri).version == 1
    assert all_files(tmp_path) == before


def test_failed_upstream_leaves_no_version_and_no_files(spark, tmp_path):
    """The DataFrame itself fails mid-stream (a UDF raising): same outcome."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([0], pa.int64())}), uri)
    before = all_files(tmp_path)

    def explode(x):
        if x == 1_990:
            raise ValueError("boom at 1990")
        return x

    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key)
    spark.conf.set(key, "100")
    try:
        df = spark.range(0, 2_000, numPartitions=2).select(F.udf(explode, LongType())("id").alias("id"))
        with pytest.raises(Exception, match="boom at 1990"):
            df.write.format("lance").mode("append").option("max_rows_per_file", 100).save(uri)
    finally:
        spark.conf.set(key, old)
    assert lancefmt.dataset(uri).version == 1
    assert all_files(tmp_path) == before


def _with_concurrent_commit(spark, uri, mode):
    """A DataFrame whose partition 0 commits another write to ``uri`` while the job runs."""
    def fn(batches):
        from pyspark import TaskContext

        import lancefmt as lf

        if TaskContext.get().partitionId() == 0:
            lf.write_dataset(pa.table({"id": pa.array([-1, -2], pa.int64())}), uri, mode=mode)
        yield from batches

    return spark.range(0, 1_000, numPartitions=2).mapInArrow(fn, "id long")


def test_concurrent_append_is_rebased(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([7], pa.int64())}), uri)
    _with_concurrent_commit(spark, uri, "append").write.format("lance").mode("append").save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 3                         # the concurrent append, then ours
    assert sorted(ds.to_table()["id"].to_pylist()) == sorted([-2, -1, 7] + list(range(1_000)))


def test_concurrent_overwrite_is_a_clear_conflict(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([7], pa.int64())}), uri)
    with pytest.raises(Exception, match="CommitConflictError"):
        _with_concurrent_commit(spark, uri, "overwrite").write.format("lance").mode("append").save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 2 and sorted(ds.to_table()["id"].to_pylist()) == [-2, -1]
    data = {os.path.basename(p) for p in all_files(os.path.join(uri, "data"))}
    live = {os.path.basename(u) for v in (1, 2) for fr in lancefmt.dataset(uri, v).get_fragments()
            for u in fr.data_files()}
    assert data == live                        # the Spark job's files are gone


def test_append_with_other_columns_fails_at_planning(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), uri)
    before = all_files(tmp_path)
    with pytest.raises(Exception, match="unknown \\['v'"):
        frame(spark, 10).select("id", "v").write.format("lance").mode("append").save(uri)
    assert all_files(tmp_path) == before and lancefmt.dataset(uri).version == 1


def test_lance_types_survive_a_spark_round_trip(spark, tmp_path):
    """uint64 reads as decimal(20,0), a vector as array<float>; writing them back (append, and
    overwrite of the same dataset) keeps the Lance types."""
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({
        "u": pa.array([1, 2**64 - 1], pa.uint64()),
        "vec": pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32(), 2)),
        "ls": pa.array(["a", "b"], pa.large_string())}), uri)
    schema = lancefmt.dataset(uri).schema
    df = spark.read.format("lance").load(uri)
    df.write.format("lance").mode("append").save(uri)
    spark.read.format("lance").load(uri).write.format("lance").mode("overwrite").save(uri)
    ds = lancefmt.dataset(uri)
    assert ds.version == 3
    assert [f.type for f in ds.schema] == [f.type for f in schema]
    t = lance.dataset(uri).to_table()
    assert sorted(t["u"].to_pylist()) == [1, 1, 2**64 - 1, 2**64 - 1]


def test_unsupported_storage_version_is_clear(spark, tmp_path):
    with pytest.raises(Exception, match="legacy"):
        frame(spark, 10).write.format("lance").mode("append") \
            .option("data_storage_version", "legacy").save(str(tmp_path / "ds"))
    assert not os.path.exists(str(tmp_path / "ds" / "_versions"))


def test_empty_dataframe_creates_an_empty_dataset(spark, tmp_path):
    uri = str(tmp_path / "ds")
    frame(spark, 0, parts=2).write.format("lance").mode("append").save(uri)
    ds = lance.dataset(uri)
    assert ds.count_rows() == 0 and ds.schema.names == ["id", "v", "s"]


def test_sink_and_source_with_an_external_manifest_store(spark, tmp_path):
    uri = str(tmp_path / "ds")
    store = f"sqlite://{tmp_path}/manifests.db"
    for start in (0, 1_000):
        (frame(spark, 1_000, parts=2, start=start).write.format("lance").mode("append")
         .option("manifest_store", store).save(uri))
    ms = lancefmt.SqliteManifestStore(f"{tmp_path}/manifests.db")
    assert ms.get_latest_version(os.path.abspath(uri)).version == 2  # committed through it
    got = spark.read.format("lance").option("manifest_store", store).load(uri)
    assert got.count() == 2_000 and stats(uri) == (2_000, sum(range(2_000)))


@pytest.mark.parametrize("version,threads", [("2.0", None), ("2.1", 1), ("2.2", None), ("2.2", 1)])
def test_every_storage_version_and_encode_threads_read_equal_by_pylance(spark, tmp_path, version,
                                                                       threads):
    # strings sharing a prefix in pages over 32 KiB: FSST pages in 2.1 / 2.2
    uri = str(tmp_path / "ds")
    df = spark.range(0, 20_000, numPartitions=2).selectExpr(
        "id", "CAST(id % 1000 AS INT) AS k", "concat('name-', CAST(id % 5000 AS STRING)) AS s")
    writer = df.write.format("lance").mode("overwrite").option("data_storage_version", version)
    if threads is not None:
        writer = writer.option("encode_threads", threads)
    writer.save(uri)
    ds = lance.dataset(uri)
    assert ds.data_storage_version == version
    got = ds.to_table().sort_by("id")
    ids = np.arange(20_000)
    assert got.schema.names == ["id", "k", "s"]
    want = pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array(ids % 1000, pa.int32()),
                                 pa.array([f"name-{i % 5000}" for i in ids])], schema=got.schema)
    assert got.equals(want)


def test_tasks_encode_on_their_own_cores_unless_told(spark, monkeypatch):
    from lancefmt.spark.writer import task_encode_threads

    monkeypatch.delenv("LANCEFMT_WRITE_THREADS", raising=False)
    assert task_encode_threads() is None  # the driver: not a task, the process default
    cpus = int(spark.sparkContext.getConf().get("spark.task.cpus", "1"))

    def probe(_):
        from lancefmt.spark.writer import task_encode_threads as threads

        yield threads()

    assert spark.sparkContext.parallelize(range(2), 2).mapPartitions(probe).collect() == [cpus, cpus]
    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", "3")
    assert task_encode_threads() is None


def test_local_session_sends_sinks_large_arrow_batches(spark):
    """``local_session`` raises Spark's 10,000 rows per Arrow batch handed to Python (a sink's
    tasks pay per batch received): the batches a Python task receives, counted."""
    from lancefmt.spark.session import ARROW_BATCH_ROWS

    def sizes(batches):
        yield pa.record_batch({"rows": pa.array([b.num_rows for b in batches], pa.int64())})

    rows = ARROW_BATCH_ROWS + 1000
    got = spark.range(0, rows, numPartitions=1).mapInArrow(sizes, "rows long").collect()
    assert [r.rows for r in got] == [ARROW_BATCH_ROWS, 1000]
