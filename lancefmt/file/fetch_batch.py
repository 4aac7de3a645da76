"""FetchBatch: the reads of many concurrent read units go out together, a round at a time.

At cloud latency a read costs a round trip (tens of milliseconds) whatever its size, so a
take must not wait for one request before sending the next. A take runs one *unit* per data
file and column on its own thread; each unit decodes as usual and asks its file for byte
ranges. While a batch is active (:func:`active`), those requests are held until every running
unit is waiting for bytes (or has finished); then all of them go out at once, coalesced per
file (:meth:`ByteSource.fetch <lancefmt.file.source.ByteSource.fetch>`) and concurrently
across files, and every unit resumes with its own buffers. A take therefore costs one round
of requests per dependency level (page metadata, then values), not one per column and file.

Units count as running from the moment they are submitted, so a round waits for units that
have not started yet; should one not get a thread soon (a saturated pool), a round that has
seen no new request for :data:`LINGER` seconds goes out anyway. Units may fan out into child
units (:meth:`FetchBatch.fan_out`); a parent does not count as running while it waits for its
children, so it never holds a round back.
"""
from __future__ import annotations

import contextvars
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("lancefmt_fetch_batch", default=None)

# Threads running units (they mostly wait for I/O) and threads issuing a round's requests.
UNIT_THREADS = 256
IO_THREADS = 64
# How long a waiting round lets units that have not started yet join it.
LINGER = 0.005

_pools: dict = {}
_pools_lock = threading.Lock()


def _pool(name: str, size: int) -> ThreadPoolExecutor:
    with _pools_lock:
        pool = _pools.get(name)
        if pool is None:
            pool = _pools[name] = ThreadPoolExecutor(size, thread_name_prefix=f"lancefmt-{name}")
        return pool


def _forget_pools_after_fork() -> None:  # a forked child has none of the parent's threads
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)


def active() -> "FetchBatch | None":
    """The batch the calling thread's reads belong to, if any."""
    return _CURRENT.get()


class _Request:
    __slots__ = ("source", "ranges", "result", "error", "done", "taken")

    def __init__(self, source, ranges):
        self.source, self.ranges = source, ranges
        self.result = self.error = None
        self.done = self.taken = False


class FetchBatch:
    """One batch of concurrent read units (see module docstring)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._running = 0     # units started and not finished (parents waiting excluded)
        self._blocked = 0     # of those, units waiting for bytes
        self._arrivals = 0    # requests made so far (a round lingers while this grows)
        self._pending: list[_Request] = []

    # -- units ------------------------------------------------------------------------------
    def run(self, units) -> list:
        """Run ``units`` (callables) as units of this batch; their results, in order. The first
        failure is raised after every unit has stopped."""
        units = list(units)
        if not units:
            return []
        pool = _pool("read-unit", UNIT_THREADS)
        with self._cond:
            self._running += len(units)
        futures = [pool.submit(self._unit, fn) for fn in units]
        results, error = [], None
        for f in futures:
            try:
                results.append(f.result())
            except BaseException as e:  # noqa: BLE001 -- re-raised below, after the others end
                error = error or e
        if error is not None:
            raise error
        return results

    def fan_out(self, units) -> list:
        """From inside a unit: run ``units`` as units of this batch and wait for them; the
        caller stops counting as running meanwhile."""
        self._leave()
        try:
            return self.run(units)
        finally:
            self._enter()

    def _unit(self, fn):
        token = _CURRENT.set(self)
        try:
            return fn()
        finally:
            _CURRENT.reset(token)
            self._leave()

    def _enter(self):
        with self._cond:
            self._running += 1

    def _leave(self):
        with self._cond:
            self._running -= 1
            batch = self._take_round_locked()
        if batch:
            self._execute(batch)

    # -- reads ------------------------------------------------------------------------------
    def fetch(self, source, ranges) -> list:
        """``source.fetch_now(ranges)``, sent with the other units' requests of this round."""
        req = _Request(source, list(ranges))
        with self._cond:
            self._pending.append(req)
            self._blocked += 1
            self._arrivals += 1
            batch = self._take_round_locked()
        if batch:
            self._execute(batch)
        self._cond.acquire()
        try:
            while not req.done:
                if req.taken:  # in a round under way: wait for its results
                    self._cond.wait()
                    continue
                seen = self._arrivals
                deadline = time.monotonic() + LINGER
                while not (req.done or req.taken or self._arrivals != seen):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    # woken early by another round's notify: not a quiet round, keep waiting
                    self._cond.wait(left)
                if req.done or req.taken or self._arrivals != seen:
                    continue
                # a quiet round whose other units have not started: send it now
                batch, self._pending = self._pending, []
                for r in batch:
                    r.taken = True
                self._cond.release()
                try:
                    self._execute(batch)
                finally:
                    self._cond.acquire()
        finally:
            self._cond.release()
        if req.error is not None:
            raise req.error
        return req.result

    def _take_round_locked(self) -> list:
        """The pending requests, when every running unit is waiting for bytes."""
        if self._pending and self._blocked >= self._running:
            batch, self._pending = self._pending, []
            for r in batch:
                r.taken = True
            return batch
        return []

    def _execute(self, batch: list[_Request]) -> None:
        """One round: the requests of each file merged into one coalesced fetch, the files
        fetched concurrently."""
        by_source: dict = {}
        for req in batch:
            by_source.setdefault(id(req.source), []).append(req)
        groups = list(by_source.values())

        def fetch_group(reqs):
            ranges = [r for req in reqs for r in req.ranges]
            try:
                bufs = reqs[0].source.fetch_now(ranges)
            except BaseException as e:  # noqa: BLE001 -- handed to every waiting unit
                for req in reqs:
                    req.error = e
            else:
                i = 0
                for req in reqs:
                    req.result = bufs[i:i + len(req.ranges)]
                    i += len(req.ranges)
            # a file's units decode as soon as its bytes are in, while other files still arrive
            with self._cond:
                for req in reqs:
                    req.done = True
                self._blocked -= len(reqs)  # their units run again from now on
                self._cond.notify_all()

        if len(groups) == 1:
            fetch_group(groups[0])
        else:
            list(_pool("read-io", IO_THREADS).map(fetch_group, groups))
