"""The streaming source on a real local SparkSession: versions appended by pylance arrive as
micro-batches; changes that are not appends are reported; a Lance -> Lance stream restarted after
a kill loses and duplicates nothing."""
import os

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
import lance  # noqa: E402

import lancefmt  # noqa: E402
from lancefmt.spark.history import version_numbers  # noqa: E402


def rows(start, n):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "x": pa.array([float(i) / 2 for i in range(start, start + n)])})


def pylance_append(uri, start, n):
    lance.write_dataset(rows(start, n), uri, mode="append")


def collected(spark, name):
    return sorted(r.id for r in spark.table(name).collect())


def test_picks_up_versions_appended_by_pylance(spark, tmp_path):
    uri = str(tmp_path / "src.lance")
    lance.write_dataset(rows(0, 100), uri, data_storage_version="2.0")
    query = (spark.readStream.format("lance").load(uri).writeStream.format("memory")
             .queryName("lance_stream_a").trigger(processingTime="200 milliseconds").start())
    try:
        query.processAllAvailable()
        assert collected(spark, "lance_stream_a") == list(range(100))   # the snapshot first
        pylance_append(uri, 100, 40)
        pylance_append(uri, 140, 10)
        query.processAllAvailable()
        assert collected(spark, "lance_stream_a") == list(range(150))   # then only appends
        assert query.lastProgress["sources"][0]["endOffset"] == '{"version": 3}' or \
            '"version": 3' in str(query.lastProgress["sources"][0]["endOffset"])
        # a delete cannot be read as appended rows: the query fails and says why
        lance.dataset(uri).delete("id < 10")
        pylance_append(uri, 150, 5)
        with pytest.raises(Exception, match="version 4 .* 'delete' transaction"):
            query.processAllAvailable()
    finally:
        query.stop()


def test_starting_version_available_now_and_skip_change_commits(spark, tmp_path):
    uri = str(tmp_path / "src.lance")
    lance.write_dataset(rows(0, 10), uri, data_storage_version="2.0")   # v1
    pylance_append(uri, 10, 10)                                         # v2
    lance.dataset(uri).delete("id = 0")                                 # v3
    pylance_append(uri, 20, 5)                                          # v4
    out = str(tmp_path / "out.lance")
    query = (spark.readStream.format("lance").option("startingVersion", 2)
             .option("skip_change_commits", "true").load(uri)
             .writeStream.format("lance").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start(out))
    query.awaitTermination()
    assert sorted(lancefmt.dataset(out).to_table()["id"].to_pylist()) == list(range(10, 25))
    with pytest.raises(lancefmt.LanceError, match="startingVersion"):
        from lancefmt.spark.stream_reader import _starting_version
        _starting_version({"startingVersion": "0"})


def test_killed_stream_restarts_without_loss_or_duplicates(spark, tmp_path):
    """Lance -> Lance: the query dies after the sink committed a batch but before its checkpoint
    recorded it (its commit log entry is removed), more versions arrive, it restarts."""
    src, out, ck = str(tmp_path / "src.lance"), str(tmp_path / "out.lance"), str(tmp_path / "ck")
    lance.write_dataset(rows(0, 1000), src, data_storage_version="2.0")

    def run():
        q = (spark.readStream.format("lance").load(src).writeStream.format("lance")
             .option("checkpointLocation", ck).trigger(availableNow=True).start(out))
        q.awaitTermination()

    run()
    pylance_append(src, 1000, 500)
    run()
    assert len(version_numbers(out)) == 2
    last = max(int(n) for n in os.listdir(os.path.join(ck, "commits")) if n.isdigit())
    for name in (str(last), f".{last}.crc"):
        os.remove(os.path.join(ck, "commits", name))
    pylance_append(src, 1500, 250)
    run()
    ids = lance.dataset(out).to_table()["id"].to_pylist()
    assert sorted(ids) == list(range(1750))
    assert len(version_numbers(out)) == 3   # the replayed batch added nothing


def _read_all(reader, start, end):
    import pickle

    out = []
    for part in reader.partitions({"version": start}, {"version": end}):
        copy = pickle.loads(pickle.dumps(reader))   # what an executor gets
        for batch in copy.read(pickle.loads(pickle.dumps(part))):
            out.extend(batch.column("id").to_pylist())
    return sorted(out)


def test_offsets_and_micro_batches_without_spark(tmp_path):
    from lancefmt.spark.source import LanceDataSource

    uri = str(tmp_path / "src.lance")
    lance.write_dataset(rows(0, 100), uri, data_storage_version="2.0")     # v1
    source = LanceDataSource({"path": uri})
    reader = source.streamReader(source.schema())
    start = reader.initialOffset()
    assert start == {"version": 0}
    end = reader.latestOffset(start, None)
    assert end == {"version": 1} and _read_all(reader, 0, 1) == list(range(100))
    pylance_append(uri, 100, 30)                                           # v2
    pylance_append(uri, 130, 20)                                           # v3
    reader.prepareForTriggerAvailableNow()
    pylance_append(uri, 150, 5)                                            # v4: after the target
    assert reader.latestOffset(end, None) == {"version": 3}
    assert _read_all(reader, 1, 3) == list(range(100, 150))
    assert reader.partitions({"version": 3}, {"version": 3}) == []
    ds = lance.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=1_000)              # v5, v6: rows kept
    compacted = lance.dataset(uri).version                                 # (reserve + rewrite)
    lance.dataset(uri).delete("id < 3")                                    # rows removed
    pylance_append(uri, 155, 5)
    last = lance.dataset(uri).version
    assert _read_all(reader, 3, compacted) == list(range(150, 155))        # compaction passed over
    with pytest.raises(lancefmt.LanceError, match=f"version {compacted + 1} .*'delete'"):
        reader.partitions({"version": compacted}, {"version": last})
    skipping = LanceDataSource({"path": uri, "skip_change_commits": "true",
                                "startingVersion": str(compacted + 1)})
    sreader = skipping.streamReader(skipping.schema())
    assert sreader.initialOffset() == {"version": compacted}
    assert _read_all(sreader, compacted, last) == list(range(155, 160))
    latest = LanceDataSource({"path": uri, "startingVersion": "latest"})
    assert latest.streamReader(latest.schema()).initialOffset() == {"version": last}
