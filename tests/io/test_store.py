import multiprocessing as mp
import os
import threading

import pytest

from lancefmt.io import open_store


@pytest.fixture(params=["local", "memory"])
def root(request, tmp_path, memory_uri):
    return str(tmp_path / "store") if request.param == "local" else memory_uri


def test_put_read_ranges_list_delete(root):
    store = open_store(root)
    uri = root + "/dir/a.bin"
    store.put(uri, b"0123456789")
    assert store.read(uri) == b"0123456789"
    assert store.read_range(uri, 2, 3) == b"234"
    assert store.read_ranges(uri, [(0, 2), (8, 2)]) == [b"01", b"89"]
    tail, size = store.read_tail(uri, 4)
    assert (tail, size) == (b"6789", 10)
    tail, size = store.read_tail(uri, 100)
    assert tail == b"0123456789" and size == 10
    assert store.size(uri) == 10
    assert store.exists(uri)
    listed = {i.name: i for i in store.list(root + "/dir")}
    assert set(listed) == {"a.bin"} and listed["a.bin"].size == 10
    store.copy(uri, root + "/dir/b.bin")
    assert store.read(root + "/dir/b.bin") == b"0123456789"
    assert sorted(i.name for i in store.walk(root)) == ["a.bin", "b.bin"]
    store.delete(uri)
    assert not store.exists(uri)
    store.delete(uri)  # missing is fine
    assert store.list(root + "/nope") == []


def test_put_if_absent_never_overwrites(root):
    store = open_store(root)
    uri = root + "/_versions/1.manifest"
    assert store.put_if_absent(uri, b"first") is True
    assert store.put_if_absent(uri, b"second") is False
    assert store.read(uri) == b"first"


def test_put_if_absent_one_winner_among_threads(root):
    store = open_store(root)
    uri = root + "/race"
    wins = []

    def attempt(i):
        if store.put_if_absent(uri, b"writer-%d" % i):
            wins.append(i)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert store.read(uri) == b"writer-%d" % wins[0]


def _race(path, i, q):
    from lancefmt.io import open_store as o
    q.put((i, o(path).put_if_absent(path, b"p%d" % i)))


def test_local_put_if_absent_one_winner_among_processes(tmp_path):
    path = str(tmp_path / "race.manifest")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_race, args=(path, i, q)) for i in range(6)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join()
    winners = [i for i, ok in results if ok]
    assert len(winners) == 1
    assert open_store(path).read(path) == b"p%d" % winners[0]
    # no temporary files are left behind
    assert os.listdir(tmp_path) == ["race.manifest"]


def test_local_output_appears_only_on_close(tmp_path):
    uri = str(tmp_path / "data" / "x.lance")
    store = open_store(uri)
    with store.open_output(uri) as f:
        f.write(b"abc")
        assert not os.path.exists(uri)
    assert store.read(uri) == b"abc"
    with pytest.raises(RuntimeError):
        with store.open_output(str(tmp_path / "data" / "y.lance")) as f:
            f.write(b"abc")
            raise RuntimeError("writer died")
    assert sorted(os.listdir(tmp_path / "data")) == ["x.lance"]


def test_store_pickles(root):
    import pickle

    store = open_store(root)
    assert pickle.loads(pickle.dumps(store)) is store


def test_local_listing_survives_entries_vanishing(tmp_path, monkeypatch):
    """A file deleted between readdir and stat (another writer's temp file) is skipped, not fatal."""
    d = tmp_path / "v"
    d.mkdir()
    (d / "keep").write_bytes(b"x")
    (d / "gone").write_bytes(b"y")
    real_scandir = os.scandir

    def scandir(path):
        it = real_scandir(path)
        os.unlink(d / "gone")
        return it

    monkeypatch.setattr(os, "scandir", scandir)
    names = [i.name for i in open_store(str(d)).list(str(d))]
    assert names == ["keep"]


def test_local_output_hands_written_ranges_to_writeback(tmp_path, monkeypatch):
    """Large local outputs start kernel writeback as they go (the closing fsync then has
    little left); the ranges cover the file once, in order, and the bytes are unchanged."""
    from lancefmt.io import local_commit, store

    calls = []
    real = local_commit.start_writeback

    def record(fd, offset, length):
        calls.append((offset, length))
        real(fd, offset, length)

    monkeypatch.setattr(store, "start_writeback", record)
    monkeypatch.setattr(store._LocalAtomicWriter, "WRITEBACK_BYTES", 1000)
    uri = str(tmp_path / "out.bin")
    pieces = [bytes([i]) * 700 for i in range(7)]
    with open_store(uri).open_output(uri) as out:
        for p in pieces:
            out.write(p)
    assert open(uri, "rb").read() == b"".join(pieces)
    assert calls == [(0, 1400), (1400, 1400), (2800, 1400)]
