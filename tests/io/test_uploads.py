"""The registry of uploads finishing in the background (lancefmt/io/uploads.py): at most
MAX_IN_FLIGHT pending (a start past that waits for one to finish), a failure is reported until
its object is deleted, settle waits for one object only; and scopes: a failure is reported by
its writer's barrier (and unscoped ones), not a concurrent writer's, unless it was registered
outside any scope or its scope ended; a pool job carries its caller's scope. The last test
runs two writers against moto behind the fault proxy."""
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import DatasetNotFoundError, StorageError
from lancefmt.io import carry_scope, io_scope, open_store, uploads, wait_durable

from .conftest import writer_held_before_commit


@pytest.fixture(autouse=True)
def clean():
    """No failure of a test's made-up objects survives it (they fail every barrier)."""
    yield
    uploads.forget(uploads.failed_uris())


def test_start_waits_while_max_in_flight_are_pending():
    futures = [Future() for _ in range(uploads.MAX_IN_FLIGHT)]
    for i, f in enumerate(futures):
        uploads.start(f"s3://b/k{i}", f)
    assert uploads.pending_count() == uploads.MAX_IN_FLIGHT
    started = threading.Event()
    extra = Future()

    def one_more():
        uploads.start("s3://b/extra", extra)
        started.set()

    t = threading.Thread(target=one_more)
    t.start()
    assert not started.wait(0.2)  # blocked: the bound is reached
    futures[3].set_result(None)
    assert started.wait(5)
    t.join()
    for f in futures + [extra]:
        if not f.done():
            f.set_result(None)
    wait_durable()
    assert uploads.pending_count() == 0


def test_failure_reported_until_deleted_and_settle_is_per_object():
    bad, good = Future(), Future()
    uploads.start("s3://b/bad.lance", bad)
    uploads.start("s3://b/good.lance", good)
    good.set_result(None)
    uploads.settle(["s3://b/good.lance"])  # returns although bad is still pending
    bad.set_exception(OSError("connection reset"))
    for _ in range(2):
        with pytest.raises(StorageError) as err:
            wait_durable()
        assert "s3://b/bad.lance" in str(err.value)
    assert uploads.failed_uris() == ["s3://b/bad.lance"]
    uploads.forget(["s3://b/bad.lance"])
    wait_durable()


def test_finish_raises_the_objects_own_failure_once():
    f = Future()
    uploads.start("s3://b/x.lance", f)
    f.set_exception(StorageError("put", "s3://b/x.lance", "HTTP 500"))
    with pytest.raises(StorageError):
        uploads.finish("s3://b/x.lance")
    assert uploads.failed_uris() == []
    uploads.finish("s3://b/x.lance")


def _in_thread(fn):
    """``fn()`` on a new thread (which starts outside any scope): its exception, or None."""
    out = []

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out.append(e)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the barrier waited for work that is not its own"
    return out[0] if out else None


def _scoped_barrier():
    with io_scope():
        wait_durable()


def test_a_failure_fails_its_own_scope_not_a_concurrent_ones():
    bad = Future()
    with io_scope() as a:
        with io_scope() as inner:  # nested: the same scope
            assert inner is a
            uploads.start("s3://b/a.lance", bad)
        bad.set_exception(OSError("connection reset"))
        assert _in_thread(_scoped_barrier) is None  # writer B commits
        assert isinstance(_in_thread(wait_durable), StorageError)  # outside any scope: all
        with pytest.raises(StorageError, match="s3://b/a.lance"):
            wait_durable()  # writer A's own barrier
    # A's scope ended with its object not deleted: everyone's again
    err = _in_thread(_scoped_barrier)
    assert isinstance(err, StorageError) and "s3://b/a.lance" in str(err)
    uploads.forget(["s3://b/a.lance"])
    assert _in_thread(_scoped_barrier) is None


def test_an_upload_registered_outside_any_scope_fails_every_barrier():
    f = Future()
    with io_scope():  # its context is not carried to a plain thread: no scope there
        assert _in_thread(lambda: uploads.start("s3://b/unscoped.lance", f)) is None
    f.set_exception(OSError("connection reset"))
    for barrier in (_scoped_barrier, wait_durable):
        err = _in_thread(barrier)
        assert isinstance(err, StorageError) and "s3://b/unscoped.lance" in str(err)
    with io_scope(), pytest.raises(StorageError, match="unscoped"):
        wait_durable()
    uploads.forget(["s3://b/unscoped.lance"])


def test_an_upload_started_by_a_pool_job_counts_for_the_callers_scope():
    slow, bad = Future(), Future()
    try:
        with ThreadPoolExecutor(2) as pool, io_scope():
            pool.submit(carry_scope(uploads.start), "s3://b/slow.lance", slow).result()
            pool.submit(carry_scope(uploads.start), "s3://b/bad.lance", bad).result()
            bad.set_exception(OSError("connection reset"))
            assert _in_thread(_scoped_barrier) is None  # another writer: neither is its own
            threading.Timer(0.2, slow.set_result, [None]).start()
            with pytest.raises(StorageError, match="s3://b/bad.lance"):
                wait_durable()
            assert slow.done()  # the barrier waited for the pool job's pending upload
    finally:
        if not slow.done():
            slow.set_result(None)
    uploads.forget(["s3://b/bad.lance"])


def test_a_failed_upload_fails_only_the_writer_that_made_it(proxied_s3, monkeypatch):
    """Writer A's data file upload fails (injected) while writer B writes another dataset in
    another thread: B commits, A gets a StorageError naming its object, nothing of A's stays."""
    env, bucket = proxied_s3
    a_uri, b_uri = f"s3://{bucket}/writer_a", f"s3://{bucket}/writer_b"
    env.proxy.inject("internal", times=100, method="PUT", path_contains="writer_a/data/")

    def writer_a():
        lancefmt.write_dataset(pa.table({"id": range(100)}), a_uri,
                               storage_options=env.pylance_options(client_max_retries="0"))

    with writer_held_before_commit(monkeypatch, "writer_a", writer_a,
                                   uploads.failed_uris) as (a_file, a_error):
        assert "writer_a/data/" in a_file
        b = lancefmt.write_dataset(pa.table({"id": range(10)}), b_uri,
                                   storage_options=env.pylance_options())
        assert b.count_rows() == 10 and b.version == 1
    (err,) = a_error
    assert a_file in str(err)
    env.proxy.reset()
    with pytest.raises(DatasetNotFoundError):
        lancefmt.dataset(a_uri, storage_options=env.pylance_options())
    store = open_store("s3://x", env.pylance_options())
    assert list(store.walk(f"{a_uri}/data")) == []
    assert uploads.failed_uris() == [] and uploads.pending_count() == 0
    assert lancefmt.dataset(b_uri, storage_options=env.pylance_options()).count_rows() == 10


def test_a_scope_left_by_an_exception_takes_its_failures_with_it():
    """A failed operation's caller got the error and holds none of its files: its failed
    uploads must not fail later barriers (a reused Spark worker failed every later task)."""
    late, early = Future(), Future()
    with pytest.raises(StorageError, match="early.lance"):
        with io_scope():
            uploads.start("s3://b/early.lance", early)
            uploads.start("s3://b/late.lance", late)
            early.set_exception(OSError("connection reset"))
            threading.Timer(0.2, late.set_exception, [OSError("reset")]).start()
            wait_durable()  # raises early's failure; late is still pending
    # the scope waited for late before dropping the failures
    assert late.done() and uploads.failed_uris() == []
    assert _in_thread(_scoped_barrier) is None and _in_thread(wait_durable) is None


def test_a_scope_left_normally_keeps_its_failures_for_everyone():
    bad = Future()
    with io_scope():
        uploads.start("s3://b/kept.lance", bad)
        bad.set_exception(OSError("connection reset"))
    assert uploads.failed_uris() == ["s3://b/kept.lance"]
    err = _in_thread(_scoped_barrier)
    assert isinstance(err, StorageError) and "kept.lance" in str(err)
