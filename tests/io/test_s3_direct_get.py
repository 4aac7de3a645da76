"""A one-range read sent by the calling thread itself (``S3Store._fetch_one``), against moto
behind the fault proxy: no hand-off to the event loop, no thread started, the store's and the
process's caps shared with the loop (``lancefmt/io/permits.py``), and after a first failure
exactly the retries, resumes, requests and errors of a read sent from the loop."""
import asyncio
import threading
import uuid

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import StorageError, StorageNotFoundError
from lancefmt.io import open_store
from lancefmt.io import s3 as s3mod
from lancefmt.io.permits import Permits

DATA = bytes(range(256)) * 400  # 100 KiB


@pytest.fixture
def env(proxied_s3):
    return proxied_s3


def _warm(e, bucket, **opts):
    """A store that has read the object once (its presigned URL cached), the proxy reset."""
    uri = f"s3://{bucket}/{uuid.uuid4().hex[:8]}/obj.bin"
    store = open_store("s3://x", e.pylance_options(**opts))
    store.put(uri, DATA)
    assert store.read_range(uri, 0, 10) == DATA[:10]
    e.proxy.reset()
    return store, uri


class _HandOffs:
    """Counts the store's calls onto the event loop, by coroutine."""

    def __init__(self, monkeypatch):
        self.calls = []
        run = s3mod.S3Store._run

        def counted(store, fn, *args):
            self.calls.append(fn.__name__)
            return run(store, fn, *args)

        monkeypatch.setattr(s3mod.S3Store, "_run", counted)


def test_a_warm_read_goes_out_on_the_calling_thread(env, monkeypatch):
    e, bucket = env
    store, uri = _warm(e, bucket)
    handoffs = _HandOffs(monkeypatch)
    started = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start",
                        lambda self: (started.append(self.name), start(self))[1])
    attempts = store.stats.counts["attempts"]
    for _ in range(5):
        assert store.read_range(uri, 1000, 50_000) == DATA[1000:51_000]
    assert handoffs.calls == []  # no hand-off to the loop and back
    assert not [n for n in started if n.startswith("lancefmt")]  # no thread of ours started
    assert e.proxy.counts() == {"GET": 5}
    assert store.stats.counts["attempts"] - attempts == 5
    assert store._permits(store.fs.loop).in_use == 0


def test_several_ranges_and_cold_objects_still_use_the_loop(env, monkeypatch):
    """Several requests at once go out together from the loop; an object with no presigned
    URL yet is presigned there."""
    e, bucket = env
    store, uri = _warm(e, bucket)
    handoffs = _HandOffs(monkeypatch)
    assert store.read_many([(uri, 0, 10), (uri, 90_000, 10)]) == [DATA[:10], DATA[90_000:90_010]]
    other = uri.replace("obj.bin", "cold.bin")
    store.put(other, DATA)
    assert store.read_range(other, 5, 5) == DATA[5:10]
    assert handoffs.calls == ["_fetch_all", "_put", "_get_range"]
    assert store.read_range(other, 5, 5) == DATA[5:10]  # now warm
    assert handoffs.calls == ["_fetch_all", "_put", "_get_range"]


# a reset or a lost answer on a reused keep-alive connection (no byte of an answer) is sent
# again once on a new connection by the socket layer itself (.socket_get), on either path
RESENT = {"reset", "lost_response"}


@pytest.mark.parametrize("fault", ["slowdown", "internal", "truncate", "short_range",
                                   "reset", "lost_response"])
def test_a_first_failure_is_retried_from_the_loop_as_before(env, monkeypatch, fault):
    e, bucket = env
    store, uri = _warm(e, bucket)
    handoffs = _HandOffs(monkeypatch)
    retries = store.stats.counts["retries"]
    e.proxy.inject(fault, method="GET")
    assert store.read_range(uri, 1000, 50_000) == DATA[1000:51_000]
    assert e.proxy.faults_served[fault] == 1
    assert e.proxy.counts() == {"GET": 2}
    if fault in RESENT:
        assert handoffs.calls == [] and store.stats.counts["retries"] == retries
    else:
        assert handoffs.calls == ["_get_range"]  # one hand-off, for the retry
        assert store.stats.counts["retries"] - retries == 1


@pytest.mark.parametrize("fault", ["truncate", "short_range"])
def test_budgets_count_the_first_attempt(env, fault):
    """The same requests and error as a read sent from the loop
    (``test_s3_remote.test_short_reads_are_never_returned``)."""
    e, bucket = env
    store, uri = _warm(e, bucket, download_retry_count="2", client_max_retries="1")
    e.proxy.inject(fault, times=100, method="GET")
    with pytest.raises(StorageError) as info:
        store.read_range(uri, 0, 60_000)
    assert info.value.path == uri and "bytes 0-59999" in str(info.value)
    assert "gave up after 6 attempts" in str(info.value)
    ranges = [s.headers["range"] for s in e.proxy.seen("GET")]
    assert ranges == ["bytes=0-59999", "bytes=30000-59999"] * 3


def test_retries_run_out_naming_the_object_and_range(env):
    e, bucket = env
    store, uri = _warm(e, bucket, client_max_retries="2")
    e.proxy.inject("internal", times=10, method="GET")
    with pytest.raises(StorageError) as info:
        store.read_range(uri, 7, 100)
    assert info.value.path == uri and "bytes 7-106" in str(info.value)
    assert "3 attempts" in str(info.value)
    assert e.proxy.counts() == {"GET": 3}


def test_a_request_timeout_is_retried(env):
    e, bucket = env
    store, uri = _warm(e, bucket, timeout="300ms", client_max_retries="3")
    e.proxy.inject("delay:2", method="GET")
    assert store.read_range(uri, 10, 100) == DATA[10:110]
    assert e.proxy.counts() == {"GET": 2} and e.proxy.faults_served["delay:2"] == 1


def test_an_object_deleted_since_reads_as_missing(env):
    """A 404 on the thread is left to the full client on the loop: one GET each, the same
    StorageNotFoundError naming the object."""
    e, bucket = env
    store, uri = _warm(e, bucket)
    store.delete(uri)
    e.proxy.reset()
    with pytest.raises(StorageNotFoundError) as info:
        store.read_range(uri, 0, 10)
    assert info.value.path == uri
    assert e.proxy.counts() == {"GET": 2}  # the lean GET, then the client's


def test_the_store_cap_is_shared_with_the_loop(env, monkeypatch):
    """With every permit held, a read waits on the loop (queued, not sent) until one is
    released; nothing is sent beyond ``io_parallelism``."""
    e, bucket = env
    store, uri = _warm(e, bucket, io_parallelism="1")
    handoffs = _HandOffs(monkeypatch)
    permits = store._permits(store.fs.loop)
    assert permits.try_acquire()
    out = []
    reader = threading.Thread(target=lambda: out.append(store.read_range(uri, 0, 100)))
    reader.start()
    reader.join(0.5)
    assert reader.is_alive() and e.proxy.counts() == {}  # waiting for the permit
    permits.release()
    reader.join(10)
    assert out == [DATA[:100]] and handoffs.calls == ["_get_range"]
    assert permits.in_use == 0


def test_a_one_column_scan_hands_nothing_to_the_loop(env, monkeypatch):
    """Guard for the scan path: once open and scanned, a projected scan sends one GET per
    file, every one from the thread that reads it (no loop hand-off, no HTTP thread)."""
    e, bucket = env
    uri = f"s3://{bucket}/scan-{uuid.uuid4().hex[:6]}"
    t = pa.table({"a": pa.array(range(40_000), pa.int64()),
                  "b": pa.array(range(40_000), pa.float64())})
    lancefmt.write_dataset(t, uri, storage_options=e.pylance_options(), max_rows_per_file=10_000)
    ds = lancefmt.dataset(uri, storage_options=e.pylance_options())
    assert ds.to_table(columns=["b"]).equals(t.select(["b"]))
    handoffs = _HandOffs(monkeypatch)
    e.proxy.reset()
    started = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start",
                        lambda self: (started.append(self.name), start(self))[1])
    assert ds.to_table(columns=["b"]).equals(t.select(["b"]))
    assert e.proxy.counts() == {"GET": 4}
    assert handoffs.calls == []
    assert not [n for n in started if n.startswith("lancefmt-http")]


@pytest.mark.parametrize("columns", [["b"], None])
def test_a_scan_has_all_its_gets_in_flight_at_once(env, columns):
    """Guard for a scan's wall time on a store: every file's read is sent before any answer
    comes back (one round, not waves behind the readahead, the permits or one file after
    another), and a warm scan sends nothing but them. Counted by the proxy, which holds every
    answer for its latency, so requests sent in waves would never all be in flight at once."""
    e, bucket = env
    uri = f"s3://{bucket}/round-{uuid.uuid4().hex[:6]}"
    files = 6
    t = pa.table({"a": pa.array(range(120_000), pa.int64()),
                  "b": pa.array(range(120_000), pa.float64())})  # 160 KB a column and file
    lancefmt.write_dataset(t, uri, storage_options=e.pylance_options(), max_rows_per_file=20_000)
    ds = lancefmt.dataset(uri, storage_options=e.pylance_options())
    want = t if columns is None else t.select(columns)
    e.proxy.reset(latency=0.3)
    assert ds.to_table(columns=columns).equals(want)  # the first: each file's tail, then data
    assert e.proxy.counts() == {"GET": 2 * files}
    assert e.proxy.max_in_flight == files
    e.proxy.reset()
    assert ds.to_table(columns=columns).equals(want)
    assert e.proxy.counts() == {"GET": files}  # no metadata read again
    assert e.proxy.max_in_flight == files


# -- Permits alone ------------------------------------------------------------------------------
def test_permits_are_shared_between_threads_and_a_loop():
    p = Permits(2)
    assert p.try_acquire() and p.try_acquire() and not p.try_acquire()

    async def main():
        got = asyncio.ensure_future(p.acquire())
        await asyncio.sleep(0.01)
        assert not got.done()
        assert not p.try_acquire()  # a queued loop waiter goes first
        threading.Thread(target=p.release).start()  # released from another thread
        await asyncio.wait_for(got, 5)
        assert p.in_use == 2
        p.release()
        p.release()
        assert p.in_use == 0

    asyncio.run(main())


def test_a_cancelled_waiter_gives_its_permit_back():
    p = Permits(1)
    assert p.try_acquire()

    async def main():
        waiter = asyncio.ensure_future(p.acquire())
        await asyncio.sleep(0.01)
        p.release()  # handed to the waiter...
        waiter.cancel()  # ...cancelled before it ran
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await asyncio.sleep(0.01)
        assert p.in_use == 0 and p.try_acquire()

        p2 = Permits(1)
        assert p2.try_acquire()
        w2 = asyncio.ensure_future(p2.acquire())
        await asyncio.sleep(0.01)
        w2.cancel()  # cancelled while queued
        with pytest.raises(asyncio.CancelledError):
            await w2
        p2.release()
        assert p2.in_use == 0

    asyncio.run(main())
