"""Object-store uploads finishing in the background, before any manifest names them.

Closing a data file on S3 used to block on its last request (the PUT of a small file, the last
part and ``CompleteMultipartUpload`` of a big one), so a write rolling files over three buckets
sent one file after another and kept one bucket busy at a time. Now ``close()`` hands that
last step to the store's event loop and registers it here; the writer encodes the next file
meanwhile. At most :data:`MAX_IN_FLIGHT` closes are pending in the process (a close past that
waits for the oldest), which bounds the buffers held.

The barrier is :func:`wait_uploads`, called by :func:`~lancefmt.io.durable.wait_durable`, so
wherever local files must be durable (before a manifest is created, before a Spark task hands
its files to the driver) every upload started so far has finished too. A failed upload left no
object (the multipart upload is aborted) and is reported, as a
:class:`~lancefmt.errors.StorageError` naming the object, by every barrier until that object is
deleted (the failing operation's clean-up does): no commit can name it.

Reads, copies and deletes of an object whose upload is pending wait for it first
(:func:`settle`): a delete then cannot race the upload into leaving an orphan.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, wait

from ..errors import LanceError

MAX_IN_FLIGHT = 8

_lock = threading.Lock()
_pending: dict[str, Future] = {}
_failed: dict[str, BaseException] = {}


def start(uri: str, future: Future) -> None:
    """Track ``future`` (the last step of ``uri``'s upload); wait for the oldest pending
    upload while :data:`MAX_IN_FLIGHT` are running."""
    while True:
        with _lock:
            running = [f for f in _pending.values() if not f.done()]
            if len(running) < MAX_IN_FLIGHT:
                _pending[uri] = future
                break
        wait(running, return_when="FIRST_COMPLETED")
    future.add_done_callback(lambda f, uri=uri: _finished(uri, f))


def _finished(uri: str, future: Future) -> None:
    with _lock:
        if _pending.get(uri) is not future:
            return
        del _pending[uri]
        error = None if future.cancelled() else future.exception()
        if future.cancelled():
            error = _cancelled(uri)
        if error is not None:
            _failed[uri] = error


def _cancelled(uri):
    from ..errors import StorageError

    return StorageError("close", uri, "the upload was cancelled")


def settle(uris) -> None:
    """Wait for the pending uploads of ``uris`` (their errors stay for the barrier)."""
    if not _pending:
        return
    with _lock:
        futures = [_pending[u] for u in uris if u in _pending]
    if futures:
        wait(futures)


def forget(uris) -> None:
    """``uris`` were deleted: a failed upload of theirs no longer fails the barrier."""
    if _failed:
        with _lock:
            for u in uris:
                _failed.pop(u, None)


def finish(uri: str) -> None:
    """Wait for ``uri``'s upload and raise its failure: for writers whose caller expects the
    object in place at ``close()`` (pylance's ``LanceFileWriter``)."""
    settle([uri])
    with _lock:
        error = _failed.pop(uri, None)
    if error is None:
        return
    if isinstance(error, LanceError):
        raise error
    from .retry import as_storage_error

    raise as_storage_error(error, "close", uri) from error


def wait_uploads() -> None:
    """Return once every upload started in this process has finished; raise the failure of one
    that failed (and whose object was not deleted since) as a StorageError naming it."""
    with _lock:
        futures = list(_pending.values())
    if futures:
        wait(futures)
    with _lock:
        if not _failed:
            return
        uri, error = next(iter(_failed.items()))
    if isinstance(error, LanceError):
        raise error
    from .retry import as_storage_error

    raise as_storage_error(error, "close", uri) from error


def pending_count() -> int:
    """Uploads started and not yet finished (for tests)."""
    with _lock:
        return sum(1 for f in _pending.values() if not f.done())


def failed_uris() -> list[str]:
    """Objects whose upload failed and which were not deleted since (for tests)."""
    with _lock:
        return list(_failed)


def _forget_after_fork():
    """A forked child (a PySpark worker) owns none of its parent's uploads."""
    global _lock
    _lock = threading.Lock()
    _pending.clear()
    _failed.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
