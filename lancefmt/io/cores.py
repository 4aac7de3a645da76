"""The cores lancefmt's CPU-bound thread pools may use in this process.

By default all of the machine's. A Spark task must keep to the cores Spark gave it
(``spark.task.cpus``): its executor runs other tasks, and other executors may share the host, on
the others. Each Spark task runs in a Python worker of its own, one task at a time, so the task's
share is set for the whole process (:func:`core_limit`), and every pool sized by :func:`cores`
(vector encoding and k-means, local scans, page encoding) keeps to it, whatever thread asks.
I/O pools (requests in flight, fsync) are not CPU-bound and are not sized by it.
"""
from __future__ import annotations

import contextlib
import os
import threading

_machine: list = []      # os.cpu_count(), asked once (it reads /sys each time)
_limit: list = []        # the innermost active core_limit, if any
_lock = threading.Lock()


def machine_cores() -> int:
    """The machine's cores (cached; at least 1)."""
    if not _machine:
        _machine.append(max(1, os.cpu_count() or 1))
    return _machine[0]


def cores() -> int:
    """The cores this process's CPU-bound pools may use now: the active limit, else the
    machine's."""
    return _limit[-1] if _limit else machine_cores()


def limited() -> bool:
    """Whether a :func:`core_limit` is active (a Spark task's share, say)."""
    return bool(_limit)


@contextlib.contextmanager
def core_limit(count: int | None):
    """CPU-bound pools use ``count`` cores (at least 1) while the block runs, in every thread of
    the process; None leaves things as they are."""
    if count is None:
        yield
        return
    count = max(1, int(count))
    with _lock:
        _limit.append(count)
    try:
        yield
    finally:
        with _lock:
            _limit.remove(count)


def _forget_after_fork() -> None:  # a forked child may run on other cores, under no limit
    global _lock
    _machine.clear()
    _limit.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
