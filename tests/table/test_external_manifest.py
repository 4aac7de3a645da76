"""SqliteManifestStore: put-if-absent semantics, latest lookups, pickling, and several processes
claiming versions at once (each version is won exactly once)."""
import multiprocessing as mp
import os
import pickle
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import lancefmt
from lancefmt.errors import InvalidArgumentError, LanceError
from lancefmt.table.external_manifest import ManifestEntry
from lancefmt.table.manifest_stores import as_manifest_store
from lancefmt.errors import ForkedStoreError, SqliteStoreError
from lancefmt.table.sqlite_pool import _ForkGate

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe")


def test_put_if_not_exists_and_put_if_exists(tmp_path):
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    assert ms.get("s3://b/ds", 1) is None and ms.get_latest_version("s3://b/ds") is None
    assert ms.put_if_not_exists("s3://b/ds", 1, "p1-staged", 10)
    assert not ms.put_if_not_exists("s3://b/ds", 1, "other", 11)
    assert ms.get("s3://b/ds", 1) == ManifestEntry(1, "p1-staged", 10, None)
    assert ms.put_if_exists("s3://b/ds", 1, "p1", 10, "etag")
    assert not ms.put_if_exists("s3://b/ds", 2, "p2", 10)
    assert ms.get("s3://b/ds", 2) is None
    assert ms.put_if_not_exists("s3://b/ds", 3, "p3")
    assert ms.put_if_not_exists("s3://b/other", 9, "q9")
    assert ms.get_latest_version("s3://b/ds") == ManifestEntry(3, "p3", None, None)
    assert ms.get("s3://b/ds", 1) == ManifestEntry(1, "p1", 10, "etag")
    ms.delete("s3://b/ds")
    assert ms.get_latest_version("s3://b/ds") is None
    assert ms.get_latest_version("s3://b/other").version == 9


def test_pickles_by_path_and_sees_the_same_entries(tmp_path):
    ms = lancefmt.SqliteManifestStore(str(tmp_path / "m.db"))
    ms.put_if_not_exists("u", 1, "p")
    again = pickle.loads(pickle.dumps(ms))
    assert again.path == ms.path and again.get("u", 1).path == "p"
    assert again.put_if_not_exists("u", 2, "q")
    assert ms.get_latest_version("u").version == 2  # a second connection sees the commit


def test_wal_mode(tmp_path):
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    with ms._pool.connection() as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_as_manifest_store(tmp_path):
    assert as_manifest_store(None) is None
    ms = as_manifest_store(f"sqlite://{tmp_path}/x.db")
    assert isinstance(ms, lancefmt.SqliteManifestStore) and ms.path == f"{tmp_path}/x.db"
    assert as_manifest_store(ms) is ms
    ddb = as_manifest_store("dynamodb://tbl?region_name=us-east-1")
    assert isinstance(ddb, lancefmt.DynamoDBManifestStore) and ddb.table_name == "tbl"
    assert ddb.client_kwargs == {"region_name": "us-east-1"}
    for bad in ("etcd://t", "sqlite://", "dynamodb://", "dynamodb://t?x=1", 42):
        with pytest.raises(InvalidArgumentError):
            as_manifest_store(bad)


def _claim(path, worker, versions, out):
    ms = lancefmt.SqliteManifestStore(path)
    won = [v for v in range(1, versions + 1) if ms.put_if_not_exists("ds", v, f"w{worker}-{v}")]
    out.put((worker, won))


def test_processes_claim_each_version_once(tmp_path):
    path = str(tmp_path / "m.db")
    lancefmt.SqliteManifestStore(path)
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(path, w, 60, out)) for w in range(4)]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    claimed = sorted(v for won in results.values() for v in won)
    assert claimed == list(range(1, 61))  # every version exactly once
    ms = lancefmt.SqliteManifestStore(path)
    for w, won in results.items():
        for v in won:
            assert ms.get("ds", v).path == f"w{w}-{v}"


def _write_around_a_checkpoint(path, go, done, out):
    ms = lancefmt.SqliteManifestStore(path)
    first = ms.put_if_not_exists("ds", 1, "a")
    done.set()
    go.wait(30)  # meanwhile the parent closes its connections
    out.put((first, ms.put_if_not_exists("ds", 2, "b")))


def test_a_child_forked_while_the_parent_has_the_store_open_loses_no_commit(tmp_path):
    # SQLite state inherited through fork() made a child's connection skip its file lock; the
    # parent then checkpointed and deleted the WAL under the child, losing version 2.
    path = str(tmp_path / "m.db")
    ms = lancefmt.SqliteManifestStore(path)
    assert ms.get("ds", 1) is None  # the parent holds a connection
    ctx = mp.get_context("fork")
    go, done, out = ctx.Event(), ctx.Event(), ctx.Queue()
    child = ctx.Process(target=_write_around_a_checkpoint, args=(path, go, done, out))
    child.start()
    assert done.wait(30)
    ms.close()
    go.set()
    assert out.get(timeout=30) == (True, True)
    child.join(30)
    assert child.exitcode == 0
    again = lancefmt.SqliteManifestStore(path)
    assert again.get("ds", 1).path == "a" and again.get("ds", 2).path == "b"


def test_threads_share_a_store_and_connections_are_reused(tmp_path):
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda v: ms.put_if_not_exists("ds", v % 50, str(v)), range(200)))
    assert sum(won) == 50 and ms.get_latest_version("ds").version == 49
    assert 1 <= len(ms._pool.idle) <= 8
    ms.close()
    assert ms._pool.idle == [] and ms.get("ds", 3) is not None  # reopens after close


def test_a_failed_transaction_rolls_back_and_its_connection_is_dropped(tmp_path):
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    with pytest.raises(RuntimeError):
        with ms._tx() as con:
            con.execute("INSERT INTO manifests (base_uri, version, path) VALUES ('ds', 1, 'p')")
            raise RuntimeError("boom")
    assert ms.get("ds", 1) is None
    assert ms.put_if_not_exists("ds", 1, "q") and ms.get("ds", 1).path == "q"


def test_a_fork_waits_for_operations_in_other_threads_and_closes_idle_connections(tmp_path):
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    inside, released = threading.Event(), []

    def busy():
        with ms._pool.connection():
            inside.set()
            time.sleep(0.3)
            released.append(time.monotonic())  # the connection goes back right after this

    t = threading.Thread(target=busy)
    t.start()
    assert inside.wait(10)
    child = mp.get_context("fork").Process(target=time.sleep, args=(0,))
    child.start()  # the fork waits until busy() gives its connection back
    forked = time.monotonic()
    t.join()
    child.join(30)
    assert child.exitcode == 0 and released and forked >= released[0]
    assert ms._pool.idle == []  # busy()'s connection came back and was closed before the fork
    ms.put_if_not_exists("ds", 1, "p")  # the parent carries on
    assert ms.get("ds", 1).path == "p"


def _fork_inside_a_transaction(ms):
    with ms._tx() as con:
        con.execute("INSERT INTO manifests (base_uri, version, path) VALUES ('ds', 1, 'p')")
        return os.fork()


def test_a_fork_inside_an_operation_leaves_the_child_off_the_file(tmp_path):
    # A fork from inside a transaction (say, from a signal handler): the parent commits it; the
    # child neither commits it nor uses the file again, through this store or a new one.
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    parent, (r, w) = os.getpid(), os.pipe()
    try:
        pid = _fork_inside_a_transaction(ms)
    except BaseException as exc:  # noqa: BLE001 - in the child, nothing may reach pytest
        if os.getpid() == parent:
            raise
        seen = [type(exc).__name__]
        for attempt in (lambda: ms.put_if_not_exists("ds", 2, "child"),
                        lambda: lancefmt.SqliteManifestStore(ms.path)):
            try:
                attempt()
                seen.append("allowed")
            except ForkedStoreError:
                seen.append("refused")
            except BaseException:  # noqa: BLE001
                seen.append("other")
        os.write(w, ",".join(seen).encode())
        os._exit(0)
    os.close(w)
    assert os.read(r, 200) == b"ForkedStoreError,refused,refused"
    os.waitpid(pid, 0)
    assert ms.get("ds", 1).path == "p" and ms.get("ds", 2) is None
    assert ms.put_if_not_exists("ds", 2, "parent")  # the parent carries on


def test_two_forks_at_once_hold_operations_off_until_both_are_done():
    gate, started = _ForkGate(), threading.Event()
    gate.before_fork()
    gate.before_fork()  # a second thread forking at the same time
    gate.after_fork_in_parent()  # the first fork is done, the second is not

    def operation():
        gate.enter()
        started.set()
        gate.leave()

    t = threading.Thread(target=operation)
    t.start()
    assert not started.wait(0.3)  # still held off by the second fork
    gate.after_fork_in_parent()
    assert started.wait(10)
    t.join()
    assert gate.depth == {} and gate.forks == 0


def test_unpickled_store_keeps_its_timeout_and_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ms = lancefmt.SqliteManifestStore("rel.db", timeout=0.5)
    again = pickle.loads(pickle.dumps(ms))
    assert again.timeout == 0.5 and again.path == str(tmp_path / "rel.db")
    holder = sqlite3.connect(str(tmp_path / "rel.db"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        started = time.monotonic()
        with pytest.raises(SqliteStoreError, match="locked") as err:
            again.put_if_not_exists("ds", 1, "p")
        assert time.monotonic() - started < 30  # its own 0.5 s, not the default 60 s
        assert all(isinstance(err.value, k) for k in (LanceError, OSError, sqlite3.OperationalError))
        assert "rel.db" in str(err.value) and isinstance(err.value.__cause__, sqlite3.Error)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert again.put_if_not_exists("ds", 1, "p")
