"""A Spark task keeps to the cores Spark gave it.

Spark schedules a task per ``spark.task.cpus`` cores of an executor; the task's Python worker
must not spread lancefmt's CPU-bound work (vector encoding, scans, page encoding) over every core
of the host, which the executor's other tasks, other executors and the JVM feeding the worker
are using. :func:`task_cores` limits the worker's pools to the task's share
(:func:`lancefmt.io.cores.core_limit`) while the task runs; the driver is not limited (it may
use the driver's cores, e.g. to train a vector index's model).
"""
from __future__ import annotations

import contextlib

from ..io.cores import core_limit


def task_cpus() -> int | None:
    """The cores of the running Spark task (``TaskContext.cpus()``); None outside a task."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return None
    ctx = TaskContext.get()
    if ctx is None:
        return None
    try:
        return max(1, int(ctx.cpus()))
    except (AttributeError, TypeError, ValueError):
        return None


@contextlib.contextmanager
def task_cores():
    """Inside a Spark task, lancefmt's CPU-bound pools use the task's cores while the block
    runs; elsewhere nothing changes."""
    with core_limit(task_cpus()):
        yield
