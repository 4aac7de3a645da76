"""Local commits without hard links (some FUSE/SMB mounts refuse ``os.link`` with EPERM): the
manifest appears whole through ``renameat2(RENAME_NOREPLACE)`` or not at all, a writer killed
mid-commit leaves a dataset that lancefmt and pylance open and append to, and where renameat2
is missing too the commit is refused with a message naming ``manifest_store``."""
import errno
import multiprocessing as mp
import os
import random
import signal
import time

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import ConditionalPutUnsupportedError
from lancefmt.io import local_commit, open_store

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe")

lance = pytest.importorskip("lance")


def _no_links():
    def link(*a, **k):
        raise OSError(errno.EPERM, "Operation not permitted (simulated: no hard links)")
    os.link = link


@pytest.fixture
def no_hard_links(monkeypatch):
    def link(*a, **k):
        raise OSError(errno.EPERM, "Operation not permitted (simulated: no hard links)")
    monkeypatch.setattr(os, "link", link)


def test_put_if_absent_without_hard_links(tmp_path, no_hard_links):
    store = open_store(str(tmp_path))
    target = str(tmp_path / "v" / "1.manifest")
    assert store.put_if_absent(target, b"first")
    assert not store.put_if_absent(target, b"second")
    assert open(target, "rb").read() == b"first"
    assert os.listdir(tmp_path / "v") == ["1.manifest"]  # no temporary file left behind


def test_refused_without_hard_links_and_renameat2(tmp_path, no_hard_links, monkeypatch):
    monkeypatch.setattr(local_commit, "_load", lambda: None)
    uri = str(tmp_path / "ds")
    with pytest.raises(ConditionalPutUnsupportedError, match="manifest_store"):
        lancefmt.write_dataset(pa.table({"a": [1]}), uri)
    assert not [n for n in os.listdir(os.path.join(uri, "_versions")) if n.endswith(".manifest")]
    # the option the message names works on this file system
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    ds = lancefmt.write_dataset(pa.table({"a": [1]}), uri, manifest_store=ms)
    ds = lancefmt.write_dataset(pa.table({"a": [2]}), ds, mode="append")
    assert ds.version == 2 and lance.dataset(uri).to_table()["a"].to_pylist() == [1, 2]


def test_renameat2_unsupported_by_the_file_system(tmp_path):
    def einval(old, new):
        import ctypes
        ctypes.set_errno(errno.EINVAL)
        return -1
    loaded = local_commit._load
    try:
        local_commit._load = lambda: einval
        (tmp_path / "a").write_bytes(b"x")
        with pytest.raises(ConditionalPutUnsupportedError, match="renameat2"):
            local_commit.rename_noreplace(str(tmp_path / "a"), str(tmp_path / "b"))
    finally:
        local_commit._load = loaded


def _append_forever(uri, tag, kill_before_rename_at=None):
    _no_links()
    if kill_before_rename_at is not None:
        real = local_commit.rename_noreplace
        count = [0]

        def rename(src, dst):
            if dst.endswith(".manifest"):
                if count[0] == kill_before_rename_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                count[0] += 1
            return real(src, dst)
        import lancefmt.io.store as store_module
        store_module.rename_noreplace = rename
    for seq in range(200):
        lancefmt.write_dataset(pa.table({"w": [tag], "seq": pa.array([seq], pa.int64())}), uri,
                               mode="append")


def _check(uri):
    for name in os.listdir(os.path.join(uri, "_versions")):
        if name.endswith(".manifest"):
            assert os.path.getsize(os.path.join(uri, "_versions", name)) > 0, name
    ours = lancefmt.dataset(uri)
    theirs = lance.dataset(uri)
    assert theirs.version == ours.version and ours.count_rows() == ours.version
    key = [("w", "ascending"), ("seq", "ascending")]
    assert theirs.to_table().sort_by(key).equals(ours.to_table().sort_by(key))
    return ours.version


def test_writer_killed_mid_commit_without_hard_links(tmp_path, no_hard_links):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"w": ["init"], "seq": pa.array([0], pa.int64())}), uri)
    ctx = mp.get_context("fork")
    rng = random.Random(10)
    # once exactly between the whole temporary manifest and its rename, then at random times
    plans = [(1, None), (None, rng.uniform(0.2, 0.8)), (None, rng.uniform(0.2, 0.8))]
    for i, (at, delay) in enumerate(plans):
        p = ctx.Process(target=_append_forever, args=(uri, f"k{i}", at))
        p.start()
        if delay is not None:
            time.sleep(delay)
            os.kill(p.pid, signal.SIGKILL)
        p.join(timeout=60)
        assert p.exitcode == -signal.SIGKILL
        before = _check(uri)
        ds = lancefmt.write_dataset(pa.table({"w": [f"next{i}"], "seq": pa.array([0], pa.int64())}),
                                    uri, mode="append")
        assert ds.version == before + 1
        lance.write_dataset(pa.table({"w": [f"pl{i}"], "seq": pa.array([0], pa.int64())}), uri,
                            mode="append")
        _check(uri)
