"""Datasets under concurrent writers, killed writers and conflicts (the commit protocol end to end)."""
import multiprocessing as mp
import os
import random
import signal
import time

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import CommitConflictError, RetryableCommitConflictError

lance = pytest.importorskip("lance")


def rows(worker, i, n=3):
    base = worker * 100_000 + i * 100
    return pa.table({"w": pa.array([worker] * n, pa.int64()), "v": pa.array(range(base, base + n), pa.int64())})


def _lancefmt_appender(uri, worker, n, barrier):
    import lancefmt as lf

    barrier.wait()
    for i in range(n):
        lf.write_dataset(rows(worker, i), uri, mode="append")


def _pylance_appender(uri, worker, n, barrier):
    import lance as pl

    barrier.wait()
    for i in range(n):
        pl.write_dataset(rows(worker, i), uri, mode="append")


def _run(targets, uri):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(targets))
    procs = [ctx.Process(target=fn, args=(uri, w, 10, barrier)) for w, fn in enumerate(targets)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0] * len(procs)


def _check(uri, workers):
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.version == 1 + 10 * workers
    got = sorted(lancefmt.dataset(uri).to_table()["v"].to_pylist())
    want = sorted([-1] + [w * 100_000 + i * 100 + k for w in range(workers) for i in range(10) for k in range(3)])
    assert got == want
    assert sorted(ds.to_table()["v"].to_pylist()) == want


def test_four_lancefmt_processes_append_concurrently(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"w": pa.array([-1], pa.int64()), "v": pa.array([-1], pa.int64())}), uri)
    _run([_lancefmt_appender] * 4, uri)
    _check(uri, 4)


def test_lancefmt_and_pylance_append_concurrently(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"w": pa.array([-1], pa.int64()), "v": pa.array([-1], pa.int64())}), uri)
    _run([_lancefmt_appender, _pylance_appender, _lancefmt_appender, _pylance_appender], uri)
    _check(uri, 4)


def _endless_writer(uri):
    import lancefmt as lf

    i = 0
    while True:
        lf.write_dataset(rows(7, i, n=200), uri, mode="append", max_rows_per_file=50)
        if i % 3 == 0:
            lf.dataset(uri).delete(f"v = {7 * 100_000 + i * 100}")
        i += 1


def test_killed_writer_leaves_a_readable_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(rows(0, 0), uri)
    ctx = mp.get_context("spawn")
    rng = random.Random(1234)
    for _ in range(6):
        p = ctx.Process(target=_endless_writer, args=(uri,))
        p.start()
        time.sleep(1.0 + rng.random() * 1.5)
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        ours = lancefmt.dataset(uri)
        theirs = lance.dataset(uri)
        theirs.validate()
        assert ours.version == theirs.version
        assert ours.count_rows() == theirs.count_rows() == ours.to_table().num_rows
    before = lancefmt.dataset(uri)
    after = lancefmt.write_dataset(rows(9, 9), uri, mode="append")
    assert after.version == before.version + 1
    assert after.count_rows() == before.count_rows() + 3


def _files(uri):
    out = set()
    for d, _, names in os.walk(uri):
        out |= {os.path.join(d, n) for n in names if n != "latest_version_hint.json"}
    return out


def test_append_after_concurrent_overwrite_conflicts_and_leaves_nothing(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancefmt.write_dataset(rows(0, 0), uri)
    lance.write_dataset(rows(1, 0), uri, mode="overwrite")
    frags = lancefmt.write_fragments(rows(2, 0), uri)
    before = _files(uri)
    with pytest.raises(CommitConflictError):
        lancefmt.commit(uri, lancefmt.Operation.Append(frags), read_version=ds.version)
    assert _files(uri) == before  # no manifest, no transaction file
    assert lance.dataset(uri).version == 2


def test_delete_vs_delete_on_one_fragment(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancefmt.write_dataset(rows(0, 0, n=10), uri)
    from lancefmt.dataset.mutate.delete import plan_delete

    updated, removed, _ = plan_delete(ds.snapshot, "v = 1")
    ds.delete("v = 2")  # lands first (v2)
    with pytest.raises(RetryableCommitConflictError):
        lancefmt.commit(uri, lancefmt.Operation.Delete(updated, removed, "v = 1"), read_version=1)
    assert lancefmt.dataset(uri).version == 2
    # the high-level delete re-plans on the new version instead
    stale = lancefmt.dataset(uri, version=1)
    assert stale.delete("v = 1") == {"num_deleted_rows": 1}
    assert stale.version == 3
    assert sorted(lance.dataset(uri).to_table()["v"].to_pylist()) == [0, 3, 4, 5, 6, 7, 8, 9]


def _stream(n_batches, rows_per_batch):
    schema = pa.schema([("a", pa.int64()), ("b", pa.float64())])

    def gen():
        for i in range(n_batches):
            a = np.arange(i * rows_per_batch, (i + 1) * rows_per_batch, dtype=np.int64)
            yield pa.record_batch([a, a.astype(np.float64)], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, gen())


def _write_stream(uri, q):
    import pyarrow as pa_

    import lancefmt as lf

    from lancefmt.encoding.pool_memory import decode_pool

    pool = pa_.default_memory_pool()
    ds = lf.write_dataset(_stream(200, 100_000), uri, max_rows_per_file=5_000_000)
    q.put((ds.count_rows(), pool.max_memory() + decode_pool().max_memory()))


def test_streaming_write_has_bounded_memory(tmp_path):
    """320 MB of input through a RecordBatchReader never needs more than a fraction in memory."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_write_stream, args=(str(tmp_path / "ds"), q))
    p.start()
    count, peak = q.get(timeout=600)
    p.join()
    assert count == 20_000_000
    assert peak < 120 * 1024 * 1024, peak


def test_concurrent_create_or_append_keeps_every_acknowledged_row(tmp_path):
    """Writers appending to a dataset that does not exist yet all race to create version 1;
    the losers rebase as appends, so every row whose write returned is there."""
    import threading

    uri = str(tmp_path / "ds")
    n, per = 8, 5
    barrier = threading.Barrier(n)
    errors = []

    def writer(i):
        data = pa.table({"id": pa.array(range(i * per, (i + 1) * per), pa.int64())})
        barrier.wait()
        try:
            lancefmt.write_dataset(data, uri, mode="append")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ids = sorted(lancefmt.dataset(uri).to_table().column("id").to_pylist())
    assert ids == list(range(n * per))
    data_dir = os.path.join(uri, "data")
    assert len(os.listdir(data_dir)) == n


def test_lost_create_race_with_another_schema_conflicts_and_leaves_nothing(tmp_path, monkeypatch):
    """A loser whose data does not fit the dataset the winner created gets a conflict, and its
    data files are removed."""
    from lancefmt.dataset.core.snapshot import Snapshot

    uri = str(tmp_path / "ds")
    real_commit = Snapshot.commit_to.__func__

    rival = []

    def commit_after_rival(cls, *args, **kwargs):  # the rival creates the dataset just before us
        if not rival:
            rival.append(True)
            lancefmt.write_dataset(pa.table({"other": pa.array([1.5])}), uri)
        return real_commit(cls, *args, **kwargs)

    monkeypatch.setattr(Snapshot, "commit_to", classmethod(commit_after_rival))
    with pytest.raises(CommitConflictError):
        lancefmt.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64())}), uri, mode="append")
    assert lancefmt.dataset(uri).to_table().column_names == ["other"]
    assert len(os.listdir(os.path.join(uri, "data"))) == 1
