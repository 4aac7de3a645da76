"""pylance's memory pool for index training sorts (``LANCE_MEM_POOL_SIZE``,
``LANCE_BYPASS_SPILLING``).

pylance sorts training data inside a bounded pool that can spill to disk; a pool too small for
one batch fails the build. lancefmt sorts in memory, so it honours the same settings the same
way: a pool set smaller than the data a build must hold at once refuses the build, and
``LANCE_BYPASS_SPILLING`` (any value) skips the check.
"""
from __future__ import annotations

import os

from ...errors import LanceError

POOL_VAR = "LANCE_MEM_POOL_SIZE"
BYPASS_VAR = "LANCE_BYPASS_SPILLING"


class MemoryPoolError(LanceError, RuntimeError):
    """The configured pool cannot hold what the build needs (pylance: a resources error)."""


def reserve_sort_memory(nbytes: int) -> None:
    """Refuse a sort of ``nbytes`` that the configured pool cannot hold."""
    if BYPASS_VAR in os.environ:
        return
    raw = os.environ.get(POOL_VAR)
    if not raw:
        return
    try:
        pool = int(raw)
    except ValueError:
        return
    if nbytes > pool:
        raise MemoryPoolError(f"Resources exhausted: the index build needs {nbytes} bytes to "
                              f"sort but {POOL_VAR} is {pool} (set {BYPASS_VAR} to sort in memory)")
