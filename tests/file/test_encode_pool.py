"""Pages encoded on the writer's thread pool are written in submission order, whatever order
the jobs finish in; a failing job fails the write and leaves no file."""
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from lancefmt.file import encode_pool
from lancefmt.file.encode_pool import PageQueue
from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter


def test_pages_are_written_in_submission_order(monkeypatch):
    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", "3")
    written = []
    q = PageQueue(lambda col, page: written.append((col, page)), max_in_flight=4)
    assert q.pool is not None
    for i in range(12):
        # later jobs finish first
        q.submit(i % 3, lambda i=i: (time.sleep(0.002 * (12 - i)), i)[1])
        assert len(q.queue) <= 4  # a submit waits until at most max_in_flight are queued
        if i == 5:
            q.emit(9, "inline")   # (queued behind them, without waiting)
    q.drain()
    assert written == [(i % 3, i) for i in range(6)] + [(9, "inline")] + \
        [(i % 3, i) for i in range(6, 12)]


def test_a_failing_job_surfaces_and_cancel_waits(monkeypatch):
    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", "2")
    written = []
    q = PageQueue(lambda col, page: written.append(page))
    go = threading.Event()

    def boom():
        go.wait(5)
        raise ValueError("bad page")

    q.submit(0, boom)
    go.set()
    with pytest.raises(ValueError, match="bad page"):
        q.drain()
    with pytest.raises(ValueError, match="bad page"):  # stays failed; nothing after it written
        q.submit(0, lambda: 1)
    q.cancel()
    assert not q.queue
    assert written == []


def test_inline_mode_has_no_pool(monkeypatch):
    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", "1")
    written = []
    q = PageQueue(lambda col, page: written.append(page))
    assert q.pool is None
    q.submit(0, lambda: "a")
    assert written == ["a"]


def test_encode_threads_overrides_the_environment_for_this_thread_only(monkeypatch):
    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", "3")
    seen = {}

    def other_thread():
        seen["other"] = PageQueue(lambda col, page: None).pool

    with encode_pool.encode_threads(1):
        assert PageQueue(lambda col, page: None).pool is None
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        with encode_pool.encode_threads(2):
            assert PageQueue(lambda col, page: None).pool._max_workers == 2
        assert PageQueue(lambda col, page: None).pool is None
    assert seen["other"] is not None and seen["other"]._max_workers == 3
    assert PageQueue(lambda col, page: None).pool._max_workers == 3


def _table(n=150_000, seed=5):
    rng = np.random.default_rng(seed)
    return pa.table({"a": pa.array(rng.integers(0, 1 << 20, n)),
                     "b": pa.array(rng.standard_normal(n)),
                     "c": pa.array(rng.integers(0, 9, n, dtype=np.int32),
                                   mask=rng.random(n) < 0.1),
                     "s": pa.array([f"v{i % 50}" for i in range(n)])})


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_threaded_file_equals_inline_file(tmp_path, monkeypatch, version):
    t = _table()
    paths = {}
    for threads in ("1", "4"):
        monkeypatch.setenv("LANCEFMT_WRITE_THREADS", threads)
        p = str(tmp_path / f"t{threads}.lance")
        with LanceFileWriter(p, t.schema, version=version, page_buffer_bytes=64 * 1024) as w:
            for b in t.to_batches(max_chunksize=10_000):
                w.write_batch(b)
        paths[threads] = p
    data = {k: open(p, "rb").read() for k, p in paths.items()}
    assert data["1"] == data["4"]
    assert LanceFileReader(paths["4"]).read_all().equals(t)


def test_failed_encoding_leaves_no_file(tmp_path, monkeypatch):
    from lancefmt.encoding.v2_1 import field_writer

    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", "2")

    def broken(inp, version, options):
        raise RuntimeError("encoder broke")

    monkeypatch.setattr(field_writer, "encode_page", broken)
    p = str(tmp_path / "x.lance")
    t = _table(20_000)
    with pytest.raises(RuntimeError, match="encoder broke"):
        with LanceFileWriter(p, t.schema, version="2.2", page_buffer_bytes=16 * 1024) as w:
            for b in t.to_batches(max_chunksize=5_000):
                w.write_batch(b)
    assert os.listdir(tmp_path) == []


def test_pool_is_forgotten_in_a_forked_child(monkeypatch):
    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", "2")
    assert encode_pool.encode_pool() is not None
    encode_pool._forget_pool_after_fork()
    assert encode_pool._pool is None
    assert encode_pool.encode_pool() is not None


def test_a_writer_inside_an_encoding_job_encodes_inline(monkeypatch):
    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", "2")
    pool = encode_pool.encode_pool()
    assert pool.submit(lambda: PageQueue(lambda c, p: None).pool).result(5) is None


@pytest.mark.parametrize("raw", ["two", "0", "-3", "1.5"])
def test_a_bad_thread_count_is_a_clear_error(monkeypatch, tmp_path, raw):
    """A typo in LANCEFMT_WRITE_THREADS fails the write with an error naming the variable,
    instead of quietly encoding on some other number of threads."""
    import lancefmt
    from lancefmt.errors import InvalidArgumentError, LanceError

    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", raw)
    with pytest.raises(InvalidArgumentError, match="LANCEFMT_WRITE_THREADS") as info:
        lancefmt.write_dataset(pa.table({"a": [1, 2, 3]}), str(tmp_path / "d"))
    assert isinstance(info.value, (LanceError, ValueError))
    assert not [p for p in (tmp_path / "d").rglob("*") if p.is_file()]  # nothing left behind


def test_a_blank_thread_count_means_the_default(monkeypatch):
    monkeypatch.setenv("LANCEFMT_WRITE_THREADS", " ")
    assert encode_pool._thread_count() >= 1
