"""A cap on requests in flight that both the store's event loop and plain threads hold.

Why: a scan thread sends its own ranged GET on a blocking socket (:meth:`.s3.S3Store.read_many`,
no hand-off to the loop and back), while the loop sends everything else and every retry. Both
must count against the same ``io_parallelism`` and process limits, which an
``asyncio.Semaphore`` (loop only) cannot give. A thread only *tries* to take a permit (never
waits: without one it hands its read to the loop, which queues for one); the loop waits in
arrival order, and a permit released by a thread is handed to the first waiter on its loop.
"""
from __future__ import annotations

import asyncio
import threading
from collections import deque


class Permits:
    """``n`` permits: :meth:`try_acquire` from any thread, ``await`` :meth:`acquire` on an
    event loop, :meth:`release` from anywhere."""

    def __init__(self, n: int):
        self._n = n
        self._used = 0
        self._lock = threading.Lock()
        self._waiters: deque = deque()  # (loop, future) queued in :meth:`acquire`

    @property
    def in_use(self) -> int:
        return self._used

    def try_acquire(self) -> bool:
        """Take a permit if one is free and nobody on a loop is queued for one."""
        with self._lock:
            if self._used < self._n and not self._waiters:
                self._used += 1
                return True
            return False

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._used < self._n and not self._waiters:
                self._used += 1
                return
            fut = loop.create_future()
            waiter = (loop, fut)
            self._waiters.append(waiter)
        try:
            await fut
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._waiters.remove(waiter)
                    handed = False
                except ValueError:
                    handed = True  # release() had passed the permit to us already
            if handed:
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            if not self._waiters:
                self._used -= 1
                return
            loop, fut = self._waiters.popleft()  # the permit passes on; _used unchanged
        if loop.is_closed():
            self.release()
            return
        loop.call_soon_threadsafe(_grant, fut)


def _grant(fut) -> None:
    if not fut.done():  # a cancelled waiter gives the permit back itself (acquire)
        fut.set_result(None)
