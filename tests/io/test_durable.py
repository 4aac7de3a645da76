"""Data files are synced in the background, and every one is durable before a manifest is."""
import os
import threading

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import StorageError
from lancefmt.io import durable, open_store, wait_durable


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
