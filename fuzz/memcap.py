"""The address-space cap the fuzz runner and the replay run under.

``RLIMIT_AS`` counts reserved address space, not memory used: glibc reserves 64 MiB per thread
arena, so a process with a dozen threads (pyarrow's pools, lancefmt's readers) reserves ~1 GiB
it never touches. The runner therefore re-executes itself with ``MALLOC_ARENA_MAX=2`` (read by
glibc at start-up) before capping, so the cap measures what inputs make lancefmt allocate.
"""
from __future__ import annotations

import os
import resource
import sys


def cap_address_space(default_mb: int, module: str) -> int:
    """Cap this process at ``FUZZ_MEM_MB`` (else ``default_mb``) MiB of address space, first
    re-running ``python -m module`` with the same arguments under ``MALLOC_ARENA_MAX=2`` if
    that is not set yet. Returns the cap in bytes."""
    if "MALLOC_ARENA_MAX" not in os.environ:
        env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
        os.execve(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]], env)
    mem = int(os.environ.get("FUZZ_MEM_MB", str(default_mb))) << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    return mem
