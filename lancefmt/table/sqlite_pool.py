"""SQLite connections that never cross a ``fork()``.

SQLite keeps per-process state about every open database file (which POSIX locks this process
holds, the shared-memory WAL index). A child forked while its parent has a connection open
inherits that state but not the locks, so a connection the child opens to the same file believes
it holds locks it does not. Another process may then checkpoint and delete the WAL under it, and
the child's commits are silently lost (https://www.sqlite.org/howtocorrupt.html, section 2.6).

So connections live in a per-file pool, are taken for one operation at a time, and before any
``fork()`` every pooled connection of every pool is closed, after waiting for operations in other
threads to finish. Forked children and the parent then reopen connections as needed.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref


class _ForkGate:
    """Counts operations in flight; a fork waits for them to end and holds off new ones."""

    def __init__(self):
        self.cond = threading.Condition()
        self.active = 0
        self.forking = False
        self.mine = threading.local()  # operations in flight on this thread
        self.pools: weakref.WeakSet[ConnectionPool] = weakref.WeakSet()

    def _own(self) -> int:
        return getattr(self.mine, "depth", 0)

    def enter(self) -> None:
        with self.cond:
            if not self._own():  # a thread already inside an operation is not held off
                self.cond.wait_for(lambda: not self.forking)
            self.active += 1
            self.mine.depth = self._own() + 1

    def leave(self) -> None:
        with self.cond:
            self.active -= 1
            self.mine.depth = self._own() - 1
            self.cond.notify_all()

    def before_fork(self) -> None:
        with self.cond:
            self.forking = True
            own = self._own()  # a fork from inside an operation does not wait for itself
            self.cond.wait_for(lambda: self.active == own)
            for pool in list(self.pools):
                pool.close()

    def after_fork_in_parent(self) -> None:
        with self.cond:
            self.forking = False
            self.cond.notify_all()

    def after_fork_in_child(self) -> None:
        # The child has only the forking thread: nothing is in flight and the pools are empty.
        self.cond = threading.Condition()
        self.active = self._own()
        self.forking = False
        for pool in list(self.pools):
            pool.lock = threading.Lock()


_GATE = _ForkGate()
os.register_at_fork(before=_GATE.before_fork, after_in_parent=_GATE.after_fork_in_parent,
                    after_in_child=_GATE.after_fork_in_child)


def _close_all(connections: list) -> None:
    while connections:
        connections.pop().close()


class ConnectionPool:
    """Idle connections to one SQLite file in WAL mode; :meth:`connection` lends one out.

    Connections are closed when the pool is closed, garbage-collected, or before a fork."""

    def __init__(self, path: str, timeout: float):
        self.path = path
        self.timeout = timeout
        self.lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._finalizer = weakref.finalize(self, _close_all, self._idle)
        _GATE.pools.add(self)

    def _open(self) -> sqlite3.Connection:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                              check_same_thread=False)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=FULL")
        except BaseException:
            con.close()
            raise
        return con

    @contextlib.contextmanager
    def connection(self):
        """A connection for one operation (autocommit mode); it goes back to the pool after."""
        _GATE.enter()
        try:
            with self.lock:
                con = self._idle.pop() if self._idle else None
            if con is None:
                con = self._open()
            try:
                yield con
            except BaseException:
                con.close()  # whatever state it is in, it is not reused
                raise
            with self.lock:
                self._idle.append(con)
        finally:
            _GATE.leave()

    def close(self) -> None:
        """Close the idle connections; the pool opens new ones when next asked."""
        with self.lock:
            _close_all(self._idle)
