"""Object-store uploads finishing in the background, before any manifest names them.

Closing a data file on S3 used to block on its last request (the PUT of a small file, the last
part and ``CompleteMultipartUpload`` of a big one), so a write rolling files over three buckets
sent one file after another and kept one bucket busy at a time. Now ``close()`` hands that
last step to the store's event loop and registers it here; the writer encodes the next file
meanwhile. At most :data:`MAX_IN_FLIGHT` closes are pending in the process (a close past that
waits for the oldest), which bounds the buffers held.

The barrier is :func:`wait_uploads`, called by :func:`~lancefmt.io.durable.wait_durable`, so
wherever local files must be durable (before a manifest is created, before a Spark task hands
its files to the driver) the uploads that may be named have finished too. A failed upload left
no object (the multipart upload is aborted) and is reported as a
:class:`~lancefmt.errors.StorageError` naming the object until that object is deleted (the
failing operation's clean-up does): no commit can name it.

Which barriers report it is set by the writer's :func:`io_scope`: a write operation (a
``write_dataset``, a mutation, a commit, ``write_fragments``, a Spark task) runs in one scope
(a pool job it starts carries it: :func:`carry_scope`), so its barrier waits for, and fails
on, its own uploads and not on those of a concurrent writer in the process. Work registered
outside any scope (a thread that did not carry the context), or left by a scope that ended
normally, is everyone's: every barrier waits for it and reports its failure, as does a barrier
outside any scope for all work. A manifest thus never names an object whose upload failed or
is still pending. A scope left by an exception takes its failures with it (:func:`_abandon`):
its caller got the error and can commit none of its files. :mod:`.durable` shares the scopes
for local syncs.

Reads, copies and deletes of an object whose upload is pending wait for it first
(:func:`settle`): a delete then cannot race the upload into leaving an orphan.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from concurrent.futures import Future, wait

from ..errors import LanceError

MAX_IN_FLIGHT = 8


class IoScope:
    """The background work of one write operation; once ended (``closed``), its leftovers
    are everyone's (a later commit, in any scope, may be handed its files)."""

    __slots__ = ("closed",)

    def __init__(self):
        self.closed = False


_scope: contextvars.ContextVar[IoScope | None] = contextvars.ContextVar("lancefmt_io_scope",
                                                                        default=None)


@contextlib.contextmanager
def io_scope():
    """Run a write operation in its own scope (see the module docstring); inside an active
    scope this is that scope (a commit inside a write inside a Spark task shares the task's)."""
    if _scope.get() is not None:
        yield _scope.get()
        return
    scope = IoScope()
    token = _scope.set(scope)
    try:
        yield scope
    except Exception:
        _abandon(scope)
        raise
    finally:
        scope.closed = True
        _scope.reset(token)


def _abandon(scope: IoScope) -> None:
    """The operation of ``scope`` failed: wait for its uploads and drop their failures.

    Its caller got the error and holds none of its files, so none of them can be committed
    by anyone, and a failed upload left no object. Kept, the failures would fail every later
    barrier in the process until their objects were deleted here: a Spark task's files are
    deleted by the driver, in another process, so a reused Python worker failed every task it
    ran after one failed upload."""
    with _lock:
        futures = [f for f, owner in _pending.values() if owner is scope]
    if futures:
        wait(futures)
    with _lock:
        for uri in [u for u, (_, owner) in _failed.items() if owner is scope]:
            del _failed[uri]


def current_scope() -> IoScope | None:
    """The active scope (None outside any): what work started now is registered under."""
    return _scope.get()


def carry_scope(fn):
    """``fn`` to run in another thread (a pool's job) under the caller's scope."""
    scope = _scope.get()
    if scope is None:
        return fn

    def run(*args, **kwargs):
        token = _scope.set(scope)
        try:
            return fn(*args, **kwargs)
        finally:
            _scope.reset(token)

    return run


def counts_for(owner: IoScope | None, barrier: IoScope | None) -> bool:
    """Whether work registered under ``owner`` is waited for (and its failure raised) by a
    barrier run under ``barrier``: its own, unscoped or ended scopes' work; all outside any."""
    return barrier is None or owner is None or owner is barrier or owner.closed


_lock = threading.Lock()
_pending: dict[str, tuple[Future, IoScope | None]] = {}
_failed: dict[str, tuple[BaseException, IoScope | None]] = {}


def start(uri: str, future: Future) -> None:
    """Track ``future`` (the last step of ``uri``'s upload) in the current scope; wait for the
    oldest pending upload while :data:`MAX_IN_FLIGHT` are running."""
    scope = _scope.get()
    while True:
        with _lock:
            running = [f for f, _ in _pending.values() if not f.done()]
            if len(running) < MAX_IN_FLIGHT:
                _pending[uri] = (future, scope)
                break
        wait(running, return_when="FIRST_COMPLETED")
    future.add_done_callback(lambda f, uri=uri: _finished(uri, f))


def _finished(uri: str, future: Future) -> None:
    with _lock:
        entry = _pending.get(uri)
        if entry is None or entry[0] is not future:
            return
        del _pending[uri]
        error = None if future.cancelled() else future.exception()
        if future.cancelled():
            error = _cancelled(uri)
        if error is not None:
            _failed[uri] = (error, entry[1])


def _cancelled(uri):
    from ..errors import StorageError

    return StorageError("close", uri, "the upload was cancelled")


def settle(uris) -> None:
    """Wait for the pending uploads of ``uris`` (their errors stay for the barrier)."""
    if not _pending:
        return
    with _lock:
        futures = [_pending[u][0] for u in uris if u in _pending]
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
        error = _failed.pop(uri, (None, None))[0]
    if error is not None:
        _raise(uri, error)


def _raise(uri: str, error: BaseException):
    if isinstance(error, LanceError):
        raise error
    from .retry import as_storage_error

    raise as_storage_error(error, "close", uri) from error


def wait_uploads() -> None:
    """Return once every upload this barrier answers for (:func:`counts_for`: in a scope, its
    own and everyone's; outside any, all in the process) has finished; raise the failure of
    one of them that failed (and whose object was not deleted since) as a StorageError naming
    it."""
    scope = _scope.get()
    with _lock:
        futures = [f for f, owner in _pending.values() if counts_for(owner, scope)]
    if futures:
        wait(futures)
    with _lock:
        if not _failed:
            return
        failed = next(((uri, error) for uri, (error, owner) in _failed.items()
                       if counts_for(owner, scope)), None)
    if failed is not None:
        _raise(*failed)


def pending_count() -> int:
    """Uploads started and not yet finished (for tests)."""
    with _lock:
        return sum(1 for f, _ in _pending.values() if not f.done())


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
