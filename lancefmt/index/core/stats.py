"""Counters of index work during one read, for ``scan_stats_callback`` (pylance's
``ScanStatistics``: segments loaded, index parts loaded, comparisons, cache hits).

A read opens a :func:`counting` scope; the framework and the index types call :func:`count`
where the work happens. Outside a scope counting costs one context-variable lookup.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field

NAMES = ("indices_loaded", "parts_loaded", "index_comparisons", "index_cache_hits")


@dataclass
class IndexCounters:
    counts: dict = field(default_factory=lambda: dict.fromkeys(NAMES, 0))


_CURRENT: contextvars.ContextVar = contextvars.ContextVar("lancefmt_index_counters", default=None)


def count(name: str, n: int = 1) -> None:
    c = _CURRENT.get()
    if c is not None:
        c.counts[name] = c.counts.get(name, 0) + n


@contextlib.contextmanager
def counting():
    """Count the index work done in this context (and nested ones) into a fresh counter."""
    counters = IndexCounters()
    token = _CURRENT.set(counters)
    try:
        yield counters
    finally:
        _CURRENT.reset(token)
