"""pylance's ``lance.sampler``: which rows each process of a data-parallel job reads, and
random samples of a dataset.

* ``ShardedFragmentSampler``: fragments ``rank::world_size`` (optionally shuffled per epoch);
* ``ShardedBatchSampler``: batch-sized row ranges ``rank, rank + world_size, ...``; with a
  filter, every ``world_size``-th matching row from ``rank`` on;
* ``ShardedFixedBatchSampler``: as a torch ``batch_sampler``, lists of row indices -- each rank
  a consecutive block of ``ceil(total / world_size)`` rows cut into batches;
* ``maybe_sample``: ``n`` random rows, read with a bounded number of takes.
"""
from __future__ import annotations

import math
import os
import random
from abc import ABC, abstractmethod

import numpy as np
import pyarrow as pa

__all__ = ["FragmentSampler", "FullScanSampler", "Sampler", "ShardedBatchSampler",
           "ShardedFixedBatchSampler", "ShardedFragmentSampler", "maybe_sample"]


def _open(dataset):
    if isinstance(dataset, (str, os.PathLike)):
        from .dataset import dataset as open_dataset

        return open_dataset(os.fspath(dataset))
    return dataset


def maybe_sample(dataset, n: int, columns, batch_size: int = 10240, max_takes: int = 2048,
                 filt: str | None = None):
    """RecordBatches holding ``n`` random rows (all rows when the dataset has no more). With
    more rows wanted than ``max_takes``, ``max_takes`` random runs of consecutive rows are
    read instead of single rows."""
    ds = _open(dataset)
    columns = [columns] if isinstance(columns, str) else columns
    total = ds.count_rows()
    if n >= total:
        yield from ds.to_batches(columns=columns, batch_size=batch_size, filter=filt)
        return
    if filt is not None:
        table = ds.to_table(columns=columns, filter=filt)
        pick = np.sort(np.random.choice(table.num_rows, min(n, table.num_rows), replace=False))
        yield from table.take(pick).combine_chunks().to_batches(max_chunksize=batch_size)
        return
    if n > max_takes:
        run = -(-n // max_takes)
        starts = np.sort(np.random.choice(total // run, max_takes, replace=False)) * run
        indices = (starts[:, None] + np.arange(run)).reshape(-1)[:n]
    else:
        indices = np.sort(np.random.choice(total, n, replace=False))
    for i in range(0, len(indices), batch_size):
        table = ds.take(indices[i:i + batch_size], columns=columns).combine_chunks()
        yield from table.to_batches()


class Sampler(ABC):
    """Called with a dataset, yields the RecordBatches this process should read."""

    @abstractmethod
    def __call__(self, dataset, *args, **kwargs):
        ...


class FragmentSampler(Sampler):
    """Reads the fragments ``iter_fragments`` yields, in that order."""

    def __call__(self, dataset, *args, batch_size: int = 128, columns=None, filter=None,
                 batch_readahead: int = 16, with_row_id: bool = False, **kwargs):
        fragments = list(self.iter_fragments(dataset, *args, **kwargs))
        scanner = dataset.scanner(batch_size=batch_size, columns=columns, filter=filter,
                                  with_row_id=with_row_id, fragments=fragments)
        yield from scanner.to_batches()

    @abstractmethod
    def iter_fragments(self, dataset, *args, **kwargs):
        ...


class FullScanSampler(FragmentSampler):
    """Every fragment, in order."""

    def iter_fragments(self, dataset, **kwargs):
        yield from dataset.get_fragments()


class _Sharded:
    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0):
        self._rank, self._world_size = int(rank), int(world_size)
        self._randomize, self._seed, self._epoch = randomize, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self._epoch = int(epoch)


class ShardedFragmentSampler(_Sharded, FragmentSampler):
    def iter_fragments(self, dataset, **kwargs):
        fragments = dataset.get_fragments()
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(fragments)
        yield from fragments[self._rank::self._world_size]


class ShardedBatchSampler(_Sharded, Sampler):
    def __call__(self, dataset, *args, batch_size: int = 128, columns=None, filter=None,
                 batch_readahead: int = 16, with_row_id=None, **kwargs):
        if filter is None:
            return self._ranges(dataset, batch_size, columns)
        return self._filtered(dataset, batch_size, columns, filter)

    def _ranges(self, dataset, batch_size: int, columns):
        total = dataset.count_rows()
        ranges = [(s, min(s + batch_size, total)) for s in
                  range(self._rank * batch_size, total, self._world_size * batch_size)]
        if self._randomize:
            random.Random(self._seed).shuffle(ranges)
        for start, stop in ranges:
            yield from dataset.take(np.arange(start, stop), columns=columns) \
                .combine_chunks().to_batches()

    def _filtered(self, dataset, batch_size: int, columns, filter: str):
        table = dataset.to_table(columns=columns, filter=filter)
        mine = table.take(np.arange(self._rank, table.num_rows, self._world_size))
        batches = mine.combine_chunks().to_batches(max_chunksize=batch_size) or \
            [pa.RecordBatch.from_pylist([], schema=mine.schema)]
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(batches)
        yield from batches


class ShardedFixedBatchSampler(ShardedBatchSampler):
    """A torch ``batch_sampler``: yields lists of row indices."""

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0,
                 batch_size: int = 0, total_num_rows: int = 0):
        super().__init__(rank, world_size, randomize, seed)
        self._batch_size, self._total = int(batch_size), int(total_num_rows)

    def __len__(self) -> int:
        if not self._batch_size:
            return 0
        return math.ceil(math.ceil(self._total / self._world_size) / self._batch_size)

    def __iter__(self):
        per_rank = math.ceil(self._total / self._world_size) if self._world_size else 0
        start = self._rank * per_rank
        end = min(start + per_rank, self._total)
        batches = [list(range(s, min(s + self._batch_size, end)))
                   for s in range(start, end, self._batch_size or 1)]
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(batches)
        yield from batches
