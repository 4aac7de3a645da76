"""Process-wide counters of the bytes lancefmt reads from data files, and in how many
requests: pylance's ``iops_counter()`` / ``bytes_read_counter()`` and the ``bytes_read``,
``iops`` and ``requests`` of ``analyze_plan``. Counted where every data-file read passes
(:class:`lancefmt.file.source.ByteSource`); slices of a buffer already read are not reads."""
from __future__ import annotations

import threading

_lock = threading.Lock()
_totals = [0, 0]  # requests, bytes


def record(requests: int, nbytes: int) -> None:
    with _lock:
        _totals[0] += int(requests)
        _totals[1] += int(nbytes)


def totals() -> tuple[int, int]:
    """(requests, bytes) read so far by this process."""
    with _lock:
        return _totals[0], _totals[1]


def iops_counter() -> int:
    return totals()[0]


def bytes_read_counter() -> int:
    return totals()[1]
