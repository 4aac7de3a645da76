"""Hand-over of a scan task's windows from a pool thread to the consumer, and offset/limit.

A scan moves whole windows (lists of RecordBatches), never single batches, between threads and
through its generators: the per-batch path has no Python frame at all (the consumer flattens
with ``itertools.chain``). The hand-over uses two ``queue.SimpleQueue`` (C, no Python locks or
conditions): windows one way, credits the other, so a task holds at most ``depth`` windows the
consumer has not taken, whatever the dataset's size.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue
from typing import Callable, Iterator

_END = object()


class _Failed:
    """A producer's exception, raised again in the consumer."""

    def __init__(self, error: BaseException):
        self.error = error


class WindowStream:
    """One task's windows, produced on a pool thread. A task no thread has started yet is read
    by the consumer itself: a scan started while another one's producers hold every pool thread
    still makes progress."""

    def __init__(self, produce: Callable[[], Iterator[list]], pool: ThreadPoolExecutor,
                 depth: int):
        self._produce_windows = produce
        self._windows: SimpleQueue = SimpleQueue()
        self._credits: SimpleQueue = SimpleQueue()
        self._closed = False
        for _ in range(depth):
            self._credits.put(True)
        self._future = pool.submit(self._produce)

    def _produce(self) -> None:
        try:
            windows = self._produce_windows()
            while self._credits.get() and not self._closed:
                window = next(windows, _END)
                self._windows.put(window)
                if window is _END:
                    return
        except BaseException as e:  # noqa: BLE001 -- raised in the consumer
            self._windows.put(_Failed(e))

    def __iter__(self) -> Iterator[list]:
        if self._future.cancel():  # not started: read it here rather than wait for a thread
            yield from self._produce_windows()
            return
        get, credit = self._windows.get, self._credits.put
        while True:
            window = get()
            if window is _END:
                return
            if window.__class__ is _Failed:
                raise window.error
            credit(True)
            yield window

    def close(self) -> None:
        """The consumer is gone: a producer waiting for room stops."""
        self._closed = True
        self._credits.put(False)
        self._future.cancel()


def trim_windows(windows: Iterator[list], skip: int, remaining: int | None) -> Iterator[list]:
    """Windows after the first ``skip`` rows, up to ``remaining`` rows (None: all); batches
    are sliced only at the two edges, empty ones dropped."""
    if not skip and remaining is None:
        yield from windows
        return
    for batches in windows:
        out = []
        for b in batches:
            n = b.num_rows
            if skip:
                if n <= skip:
                    skip -= n
                    continue
                b = b.slice(skip)
                n -= skip
                skip = 0
            if remaining is not None:
                if n >= remaining:
                    if remaining:
                        out.append(b.slice(0, remaining))
                    if out:
                        yield out
                    return
                remaining -= n
            if n:
                out.append(b)
        if out:
            yield out
