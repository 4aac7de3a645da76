"""Counting Python function calls deterministically, for guards that must not time anything.

:class:`CallCounter` counts every Python frame entered (function calls and generator
resumptions) while it is active, in the thread that entered it and in every thread started
meanwhile (``threading.setprofile``): a scan's pool threads are counted when the pool is
created inside the counter. Calls into C (pyarrow, numpy kernels) are not counted.
"""
from __future__ import annotations

import collections
import os
import sys
import threading


class CallCounter:
    """``with CallCounter() as calls: ...`` then ``calls.total()``, ``calls.matching(...)``."""

    def __init__(self):
        self._by_thread: dict = {}
        self._active = False

    def _hook(self, frame, event, arg):
        if not self._active:  # a thread started inside the counter outlives it
            sys.setprofile(None)
            return
        if event == "call":
            code = frame.f_code
            counts = self._by_thread.get(threading.get_ident())
            if counts is None:  # each thread writes its own counter: no lost increments
                counts = self._by_thread[threading.get_ident()] = collections.Counter()
            counts[(os.path.basename(code.co_filename), code.co_qualname)] += 1

    def __enter__(self) -> "CallCounter":
        self._active = True
        threading.setprofile(self._hook)
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(None)
        threading.setprofile(None)
        self._active = False

    @property
    def counts(self) -> collections.Counter:
        """(file name, qualified name) -> calls, over every thread."""
        total: collections.Counter = collections.Counter()
        for counts in list(self._by_thread.values()):
            total.update(counts)
        return total

    def total(self) -> int:
        return sum(self.counts.values())

    def matching(self, file_name: str, qualname: str | None = None) -> int:
        """Calls into functions of ``file_name`` (only ``qualname`` if given)."""
        return sum(n for (f, q), n in self.counts.items()
                   if f == file_name and (qualname is None or q == qualname))
