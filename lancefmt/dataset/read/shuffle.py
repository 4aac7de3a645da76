"""Shuffled batches for training loops: every live row once per epoch, in a seeded random order.

pylance's samplers (``lance.sampler.ShardedBatchSampler``) shuffle the order of contiguous
row ranges; here the rows themselves are permuted (a full shuffle), and each batch is a
``take`` of its slice of the permutation, so a batch reads only the bytes of its rows. The
next batches are read on the scan thread pool while the caller consumes the current one.
"""
from __future__ import annotations

from collections import deque
from typing import Iterator

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from .scan import default_threads, live_counts, scan_pool
from .take import take_from_fragments


def shuffled_batches(snapshot, batch_size: int = 1024, *, seed=None, columns=None,
                     with_row_id: bool = False, with_row_address: bool = False,
                     drop_last: bool = False, readahead: int = 2) -> Iterator[pa.RecordBatch]:
    """RecordBatches of ``batch_size`` rows over a random permutation of the live rows
    (``numpy.random.default_rng(seed)``: the same seed gives the same order)."""
    batch_size = int(batch_size)
    if batch_size <= 0:
        raise InvalidArgumentError("batch_size must be positive")
    if int(readahead) < 0:
        raise InvalidArgumentError("readahead must be >= 0")
    ctx = snapshot.ctx
    pbs = snapshot.fragment_pbs()
    counts = live_counts(ctx, pbs)
    total = int(counts.sum())
    order = np.random.default_rng(seed).permutation(total)
    stop = total - total % batch_size if drop_last else total
    starts = range(0, stop, batch_size)

    def read(start):
        t = take_from_fragments(ctx, pbs, counts, order[start:start + batch_size], columns,
                                with_row_id, with_row_address)
        batches = t.combine_chunks().to_batches()
        return batches[0] if batches else None

    if readahead == 0 or default_threads(ctx) <= 1:
        for s in starts:
            b = read(s)
            if b is not None:
                yield b
        return
    pool = scan_pool(default_threads(ctx))
    pending: deque = deque()
    it = iter(starts)
    try:
        for s in it:
            pending.append(pool.submit(read, s))
            if len(pending) > readahead:
                break
        while pending:
            b = pending.popleft().result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(pool.submit(read, nxt))
            if b is not None:
                yield b
    finally:
        for f in pending:
            f.cancel()
