"""The registry of uploads finishing in the background (lancefmt/io/uploads.py), without a
server: at most MAX_IN_FLIGHT pending (a start past that waits for one to finish), a failure
is reported by every barrier until its object is deleted, settle waits for one object only."""
import threading
from concurrent.futures import Future

import pytest

from lancefmt.errors import StorageError
from lancefmt.io import uploads, wait_durable


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
