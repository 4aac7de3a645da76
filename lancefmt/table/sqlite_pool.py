"""SQLite connections that never cross a ``fork()``.

SQLite keeps per-process state about every open database file (which POSIX locks this process
holds, the shared-memory WAL index). A child forked while its parent has a connection open
inherits that state but not the locks, so a connection the child opens to the same file believes
it holds locks it does not. Another process may then checkpoint and delete the WAL under it, and
the child's commits are silently lost (https://www.sqlite.org/howtocorrupt.html, section 2.6).

So connections live in a per-file pool and are lent for one operation at a time. Before any
``fork()`` run through Python (``os.fork``, ``multiprocessing``, PySpark's daemon) the gate waits
for operations in other threads to finish, holds off new ones, and closes every idle connection.

A fork from inside an operation (a signal handler or ``__del__`` that forks) cannot close the
connection in use. The parent goes on with it; in the child that connection is abandoned (never
used, closed or reused: closing it there could drop the child's locks on the file) and the file
is off limits: every later operation on it in the child raises :class:`ForkedStoreError`.
Forks made in C without Python's fork hooks, and connections opened outside a pool, are not
covered.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import warnings
import weakref

from ..errors import ForkedStoreError, SqliteStoreError

FORK_WAIT_SECONDS = 120.0  # longest a fork waits for operations in flight (then it warns)


class _ForkGate:
    """Operations in flight per thread; a fork waits for the other threads' to end and holds off
    new ones until it is done."""

    def __init__(self):
        self.cond = threading.Condition()
        self.depth: dict[int, int] = {}  # thread ident -> operations it has in flight
        self.forks = 0  # forks between their before and after hooks (threads may fork at once)
        self.pools: weakref.WeakSet[ConnectionPool] = weakref.WeakSet()
        self.off_limits: set[str] = set()  # files a fork left mid-operation, in this process

    def _busy_elsewhere(self) -> bool:
        me, alive = threading.get_ident(), {t.ident for t in threading.enumerate()}
        return any(n > 0 and ident != me and ident in alive for ident, n in self.depth.items())

    def enter(self) -> None:
        me = threading.get_ident()
        with self.cond:
            if not self.depth.get(me):  # a thread already inside an operation is not held off
                self.cond.wait_for(lambda: not self.forks)
            self.depth[me] = self.depth.get(me, 0) + 1  # one store: no half-done update

    def leave(self) -> None:
        me = threading.get_ident()
        with self.cond:
            left = self.depth.get(me, 1) - 1
            if left:
                self.depth[me] = left
            else:
                self.depth.pop(me, None)
            self.cond.notify_all()

    def register(self, pool: ConnectionPool) -> None:
        with self.cond:
            self.pools.add(pool)

    def before_fork(self) -> None:
        with self.cond:
            self.forks += 1
            if not self.cond.wait_for(lambda: not self._busy_elsewhere(), FORK_WAIT_SECONDS):
                warnings.warn(f"fork: SQLite operations still in flight after "
                              f"{FORK_WAIT_SECONDS:.0f} s; forking with them open", RuntimeWarning)
            pools = list(self.pools)
        for pool in pools:
            try:
                pool.close()
            except Exception:  # noqa: BLE001 - one bad connection must not keep the others open
                continue

    def after_fork_in_parent(self) -> None:
        with self.cond:
            self.forks = max(0, self.forks - 1)
            self.cond.notify_all()

    def after_fork_in_child(self) -> None:
        # Only the forking thread lives on; whatever it had lent out stays lent.
        me = threading.get_ident()
        self.cond = threading.Condition()
        self.depth = {me: self.depth[me]} if self.depth.get(me) else {}
        self.forks = 0
        for pool in list(self.pools):
            pool.after_fork_in_child()


_GATE = _ForkGate()
os.register_at_fork(before=_GATE.before_fork, after_in_parent=_GATE.after_fork_in_parent,
                    after_in_child=_GATE.after_fork_in_child)
_ABANDONED: list = []  # connections a fork left mid-operation: kept, never closed, in the child


def _close_all(connections: list) -> None:
    while connections:
        con = connections.pop()
        try:
            con.close()
        except sqlite3.Error:
            continue  # a broken connection is gone either way


class _Lent:
    """``with pool.connection() as con``: one operation's connection, back to the pool after
    (closed instead if the operation failed; abandoned if the process forked meanwhile)."""

    __slots__ = ("pool", "con", "pid")

    def __init__(self, pool: ConnectionPool):
        self.pool, self.con, self.pid = pool, None, None

    def __enter__(self) -> sqlite3.Connection:
        pool = self.pool
        _GATE.enter()
        try:
            pool.check_usable()
            with pool.lock:
                con = pool.idle.pop() if pool.idle else None
            if con is None:
                con = pool.open()
            self.con, self.pid = con, os.getpid()
            with pool.lock:
                pool.lent.add(con)
            return con
        except sqlite3.Error as exc:
            _GATE.leave()
            raise pool.failure("open", exc) from exc
        except BaseException:
            _GATE.leave()
            raise

    def __exit__(self, exc_type, exc, tb) -> None:
        pool, con = self.pool, self.con
        try:
            if self.pid != os.getpid():
                raise ForkedStoreError(f"{pool.path}: this process was forked during an "
                                       "operation on the store; open it in the parent only")
            with pool.lock:
                pool.lent.discard(con)
                if exc_type is None:
                    pool.idle.append(con)
            if exc_type is None:
                return
            con.close()  # whatever state it is in, it is not reused
            if isinstance(exc, sqlite3.Error) and not isinstance(exc, SqliteStoreError):
                raise pool.failure("use", exc) from exc
        finally:
            _GATE.leave()


class ConnectionPool:
    """Idle connections to one SQLite file in WAL mode; :meth:`connection` lends one out.

    Connections are closed when the pool is closed, garbage-collected, or before a fork."""

    def __init__(self, path: str, timeout: float):
        self.path = path
        self.key = os.path.realpath(path)
        self.timeout = timeout
        self.lock = threading.Lock()
        self.idle: list[sqlite3.Connection] = []
        self.lent: set[sqlite3.Connection] = set()
        self._finalizer = weakref.finalize(self, _close_all, self.idle)
        _GATE.register(self)

    def open(self) -> sqlite3.Connection:
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

    def failure(self, operation: str, exc: sqlite3.Error) -> SqliteStoreError:
        return SqliteStoreError(f"{operation} SQLite store", self.path, str(exc))

    def check_usable(self) -> None:
        if self.key in _GATE.off_limits:
            raise ForkedStoreError(f"{self.path}: this process was forked during an operation on "
                                   "the store and must not use it; open it in the parent only")

    def connection(self) -> _Lent:
        """A connection for one operation (autocommit mode), as a context manager."""
        return _Lent(self)

    def after_fork_in_child(self) -> None:
        self.lock = threading.Lock()
        if self.lent:
            _ABANDONED.extend(self.lent)
            self.lent = set()
            _GATE.off_limits.add(self.key)

    def close(self) -> None:
        """Close the idle connections; the pool opens new ones when next asked."""
        with self.lock:
            _close_all(self.idle)
