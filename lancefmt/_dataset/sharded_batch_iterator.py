"""pylance's (deprecated) ``ShardedBatchIterator``: shard ``rank`` of ``world_size`` of a
dataset's rows, for data-parallel training.

``granularity="fragment"``: fragments ``rank, rank + world_size, ...`` whole, in order;
``"batch"``: row ranges ``[rank * batch_size + k * world_size * batch_size, +batch_size)``
of the dataset's live rows (the last one may be short).
"""
from __future__ import annotations

import os
import warnings

from ..dataset import Dataset, dataset as open_dataset
from ..errors import InvalidArgumentError, NotSupportedError

__all__ = ["ShardedBatchIterator"]


class ShardedBatchIterator:
    def __init__(self, data, rank: int, world_size: int, *, columns=None,
                 batch_size: int = 1024 * 10, granularity: str = "fragment",
                 batch_readahead: int = 8, with_row_id: bool = False):
        warnings.warn("ShardedBatchIterator is deprecated, use :class:`Sampler` instead")
        if granularity not in ("fragment", "batch"):
            raise InvalidArgumentError(f"Unrecognized granularity: {granularity}")
        self._rank, self._world_size = int(rank), int(world_size)
        self._batch_size, self._granularity = int(batch_size), granularity
        self._columns, self._with_row_id = columns, with_row_id
        self._ds = data if isinstance(data, Dataset) else open_dataset(os.fspath(data))

    def _fragments(self):
        frags = self._ds.get_fragments()
        for frag in frags[self._rank::self._world_size]:
            yield from frag.to_batches(columns=self._columns, batch_size=self._batch_size,
                                       with_row_id=self._with_row_id)

    def _batches(self):
        if self._with_row_id:
            raise NotSupportedError("with_row_id is not supported for batch sharding")
        total = self._ds.count_rows()
        step = self._world_size * self._batch_size
        for start in range(self._rank * self._batch_size, total, step):
            stop = min(start + self._batch_size, total)
            table = self._ds.take(list(range(start, stop)), columns=self._columns)
            yield from table.to_batches()

    def __iter__(self):
        return self._fragments() if self._granularity == "fragment" else self._batches()
