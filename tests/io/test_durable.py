"""Data files are synced in the background, and every one is durable before a manifest is; a
failed sync fails the writer that made the file (and barriers outside any scope), not a
concurrent writer."""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import DatasetNotFoundError, StorageError
from lancefmt.io import carry_scope, durable, io_scope, open_store, wait_durable

from .conftest import writer_held_before_commit


@pytest.fixture
def sync_log(monkeypatch):
    """Every fsync of a regular file and every manifest link, in order: ("sync", path) /
    ("publish", name)."""
    log = []
    lock = threading.Lock()
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd):
        real_fsync(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        if os.path.isfile(path):
            with lock:
                log.append(("sync", path))

    def link(src, dst, *a, **k):
        real_link(src, dst, *a, **k)
        with lock:
            log.append(("publish", os.path.basename(dst)))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    return log


def test_data_files_are_durable_before_the_manifest_names_them(tmp_path, sync_log):
    uri = str(tmp_path / "ds")
    t = pa.table({"id": range(10_000)})
    lancefmt.write_dataset(t, uri, max_rows_per_file=1000, data_storage_version="2.0")
    data = {os.path.join(uri, "data", f.path) for frag in lancefmt.dataset(uri).get_fragments()
            for f in frag.data_files()}
    assert len(data) == 10
    first_publish = next(i for i, e in enumerate(sync_log) if e[0] == "publish"
                         and e[1].endswith(".manifest"))
    synced_before = {p for kind, p in sync_log[:first_publish] if kind == "sync"}
    assert data <= synced_before
    assert durable.pending_count() == 0


def test_close_returns_before_the_sync_and_the_barrier_waits(tmp_path, monkeypatch):
    """The writer's close does not wait for its fsync; wait_durable does."""
    gate = threading.Event()
    real_fsync = os.fsync
    synced = []

    def slow_fsync(fd):
        gate.wait(5)
        real_fsync(fd)
        synced.append(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    uri = str(tmp_path / "f.bin")
    with open_store(uri).open_output(uri) as out:
        out.write(b"x" * 100)
    assert open(uri, "rb").read() == b"x" * 100 and not synced  # in place, sync pending
    assert durable.pending_count() == 1
    threading.Timer(0.2, gate.set).start()
    wait_durable()
    assert synced and durable.pending_count() == 0


def test_a_failed_sync_fails_the_commit_until_its_file_is_removed(tmp_path, monkeypatch):
    real_fsync = os.fsync

    def failing(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".lance"):
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing)
    uri = str(tmp_path / "ds")
    with pytest.raises(StorageError, match="fsync"):
        lancefmt.write_dataset(pa.table({"id": range(10)}), uri)
    monkeypatch.setattr(os, "fsync", real_fsync)
    # the failed write removed its data file: nothing is left to report, and no version exists
    assert not os.listdir(os.path.join(uri, "data"))
    wait_durable()
    lancefmt.write_dataset(pa.table({"id": range(10)}), uri)
    assert lancefmt.dataset(uri).count_rows() == 10


def test_sync_can_be_turned_off_as_pylance_writes(tmp_path, monkeypatch, sync_log):
    monkeypatch.setenv("LANCEFMT_FSYNC", "0")
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"id": range(100)}), uri)
    assert not [p for kind, p in sync_log if kind == "sync" and p.endswith(".lance")]
    assert lancefmt.dataset(uri).count_rows() == 100


def test_a_failed_sync_fails_only_the_writer_that_made_it(tmp_path, monkeypatch):
    """Writer A's data file fails its fsync while writer B writes another dataset in another
    thread: B commits, A gets a StorageError naming its file, nothing of A's stays."""
    real_fsync = os.fsync

    def failing(fd):
        if "/ds_a/" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing)
    a_uri, b_uri = str(tmp_path / "ds_a"), str(tmp_path / "ds_b")
    with writer_held_before_commit(
            monkeypatch, "ds_a", lambda: lancefmt.write_dataset(pa.table({"id": range(100)}), a_uri),
            durable.failed_paths) as (a_file, a_error):
        assert a_file.startswith(os.path.join(a_uri, "data"))
        b = lancefmt.write_dataset(pa.table({"id": range(10)}), b_uri)
        assert b.count_rows() == 10 and b.version == 1
        b.update({"id": "id + 100"}, where="id < 3")  # B's mutations commit too
        b.merge_insert("id").when_not_matched_insert_all().execute(pa.table({"id": [50, 51]}))
        assert b.version == 3 and b.count_rows() == 12
        with pytest.raises(StorageError, match="fsync"):
            wait_durable()  # outside any scope: every writer's failure
    (err,) = a_error
    assert "fsync" in str(err) and a_file in str(err)
    assert not os.listdir(os.path.join(a_uri, "data"))
    with pytest.raises(DatasetNotFoundError):
        lancefmt.dataset(a_uri)
    assert durable.failed_paths() == []
    wait_durable()
    assert sorted(lancefmt.dataset(b_uri).to_table()["id"].to_pylist()) == \
        list(range(3, 10)) + [50, 51, 100, 101, 102]


def test_a_sync_outside_any_scope_fails_every_barrier(tmp_path, monkeypatch):
    def failing(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    path = str(tmp_path / "f.bin")
    with io_scope():  # a plain thread does not carry the scope: the sync is unscoped
        t = threading.Thread(target=_write_and_close, args=(path,))
        t.start()
        t.join(10)
    with io_scope(), pytest.raises(StorageError, match="f.bin"):
        wait_durable()
    with pytest.raises(StorageError, match="f.bin"):
        wait_durable()
    os.remove(path)
    wait_durable()


def _write_and_close(path):
    with open_store(path).open_output(path) as out:
        out.write(b"x" * 10)


def test_a_sync_started_by_a_pool_job_counts_for_the_callers_scope(tmp_path, monkeypatch):
    gate = threading.Event()
    real_fsync = os.fsync
    synced = []

    def slow_fsync(fd):
        if os.path.isfile(os.readlink(f"/proc/self/fd/{fd}")):  # data files, not directories
            gate.wait(10)
            synced.append(fd)
        real_fsync(fd)

    def other_writers_barrier():
        with io_scope():
            wait_durable()

    monkeypatch.setattr(os, "fsync", slow_fsync)
    try:
        with ThreadPoolExecutor(1) as pool, io_scope():
            pool.submit(carry_scope(_write_and_close), str(tmp_path / "g.bin")).result()
            assert durable.pending_count() == 1 and not synced
            other = threading.Thread(target=other_writers_barrier)
            other.start()
            other.join(10)
            assert not other.is_alive() and not synced  # another writer did not wait for it
            threading.Timer(0.2, gate.set).start()
            wait_durable()
            assert synced and durable.pending_count() == 0
    finally:
        gate.set()
