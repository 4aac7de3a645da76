"""Threads that encode pages while the writer's thread writes finished ones.

Page encoding spends its time in Cython kernels and numpy/pyarrow calls that release the GIL,
so columns encode side by side. A :class:`PageQueue` keeps the pages of one file in the order
they were submitted (the file's bytes do not depend on thread timing) and bounds how many are
in flight (memory stays bounded per writer). ``LANCEFMT_WRITE_THREADS=1`` encodes inline;
:func:`encode_threads` sets the count for the writers one thread opens (the Spark sink's
``encode_threads`` option: Spark already runs a task per core).
"""
from __future__ import annotations

import collections
import contextlib
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import InvalidArgumentError
from ..io import carry_scope
from ..io.cores import cores

MAX_THREADS = 4
THREAD_PREFIX = "lancefmt-encode"


_local = threading.local()


@contextlib.contextmanager
def encode_threads(count: int | None):
    """Writers opened by this thread inside the block encode on ``count`` threads (1: inline;
    None: the default, ``LANCEFMT_WRITE_THREADS`` or up to MAX_THREADS cores)."""
    previous = getattr(_local, "count", None)
    _local.count = None if count is None else max(1, int(count))
    try:
        yield
    finally:
        _local.count = previous


def _thread_count() -> int:
    chosen = getattr(_local, "count", None)
    if chosen is not None:
        return chosen
    raw = os.environ.get("LANCEFMT_WRITE_THREADS", "").strip()
    if not raw:  # the cores this process may use (a Spark task's share: io/cores.py)
        return max(1, min(MAX_THREADS, cores()))
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:  # a typo must not quietly leave the writer on some other thread count
        raise InvalidArgumentError(f"LANCEFMT_WRITE_THREADS must be a whole number of threads "
                                   f"(1 or more), not {raw!r}")
    return count


_pool = None
_pool_size = 0
_pool_lock = threading.Lock()


def encode_pool() -> ThreadPoolExecutor | None:
    """The process-wide encoding pool, or None when pages are to be encoded inline."""
    global _pool, _pool_size
    n = _thread_count()
    if n <= 1 or threading.current_thread().name.startswith(THREAD_PREFIX):
        return None  # inline; a writer inside an encoding job never waits on its own pool
    if _pool is None or _pool_size != n:
        with _pool_lock:
            if _pool is None or _pool_size != n:
                _pool = ThreadPoolExecutor(n, thread_name_prefix=THREAD_PREFIX)
                _pool_size = n
    return _pool


def _forget_pool_after_fork():
    """A forked child (e.g. a PySpark worker) must not wait on its parent's threads."""
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size = None, 0
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _done(value) -> Future:
    fut = Future()
    fut.set_result(value)
    return fut


class PageQueue:
    """Pages of one file being encoded: ``submit`` a job, ``emit`` hands finished pages (in
    submission order) to ``write(column, page)``."""

    def __init__(self, write, max_in_flight: int | None = None):
        self.write = write
        self.pool = encode_pool()
        self.max_in_flight = max_in_flight or 2 * (self.pool._max_workers if self.pool else 1)
        self.queue = collections.deque()

    def submit(self, column: int, job) -> None:
        """Encode ``job()`` (returns a page) on the pool; write finished pages meanwhile."""
        if self.pool is None:
            self.emit(column, job())
            return
        self.queue.append((column, self.pool.submit(carry_scope(job))))
        self.drain(block=False)

    def emit(self, column: int, page) -> None:
        """A page encoded by the caller: written after every page submitted before it."""
        if self.queue:
            self.queue.append((column, _done(page)))
        else:
            self.write(column, page)

    def drain(self, block: bool = True) -> None:
        """Write finished pages in order; with ``block``, wait until none is in flight (else
        only until at most ``max_in_flight`` are)."""
        q = self.queue
        while q:
            column, fut = q[0]
            if not fut.done() and not block and len(q) <= self.max_in_flight:
                return
            page = fut.result()
            q.popleft()
            self.write(column, page)

    def cancel(self) -> None:
        """Forget every page not written yet (after a failure); waits for running jobs so no
        encoding outlives the writer."""
        q, self.queue = self.queue, collections.deque()
        for _, fut in q:
            fut.cancel()
        for _, fut in q:
            if not fut.cancelled():
                try:
                    fut.exception()
                except BaseException:  # noqa: BLE001 -- the failure is being discarded
                    pass
