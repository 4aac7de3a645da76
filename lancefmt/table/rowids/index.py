"""``RowIdIndex``: stable row id -> row address, over the live rows of many fragments.

Built from each fragment's row-id sequence and deletions, it stores maximal *runs* (row ids
going up by one at consecutive live offsets: one entry per run, however long) in one sorted
table and the remaining single ids in another. A lookup is a binary search in each, in a
``nogil`` Cython loop. A fresh fragment (one Range segment, no deletions) costs a single run;
fragments written by updates (sorted or unsorted arrays) cost one entry per row.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ...errors import CorruptFileError
from .. import _rowids
from ..deletion import as_live_mask
from .address import MISSING_ADDRESS
from .segment import SegmentKind
from .sequence import RowIdSequence

_EMPTY = np.empty(0, dtype=np.uint64)
_ALL_LIVE = np.empty(0, dtype=np.uint8)


class RowIdIndex:
    """Maps row ids to row addresses ``(fragment_id << 32) | offset`` of live rows only.

    Build it with :meth:`build`; query it with :meth:`lookup` (absent or deleted ids map to
    :data:`~lancefmt.table.rowids.address.MISSING_ADDRESS`) or :meth:`contains`.
    """

    __slots__ = ("run_ids", "_run_spans", "single_ids", "single_addresses",
                 "_run_fences", "_single_fences")

    def __init__(self, run_ids, run_lengths, run_addresses, single_ids, single_addresses):
        """Sorted tables (see :meth:`build`): runs ``(first id, length, first address)`` with
        disjoint id ranges, and single ``(id, address)`` pairs."""
        self.run_ids = np.ascontiguousarray(run_ids, dtype=np.uint64)
        self._run_spans = np.ascontiguousarray(
            np.stack([np.asarray(run_lengths, dtype=np.uint64),
                      np.asarray(run_addresses, dtype=np.uint64)], axis=1).reshape(-1, 2))
        self.single_ids = np.ascontiguousarray(single_ids, dtype=np.uint64)
        self.single_addresses = np.ascontiguousarray(single_addresses, dtype=np.uint64)
        self._run_fences = _rowids.fences(self.run_ids)
        self._single_fences = _rowids.fences(self.single_ids)

    @classmethod
    def build(cls, fragments: Iterable, *, path=None) -> "RowIdIndex":
        """Index ``fragments``: tuples ``(fragment_id, row_ids)`` or
        ``(fragment_id, row_ids, deletions)``.

        ``row_ids`` is ``RowIdSequence`` bytes, a :class:`RowIdSequence`, or a decoded uint64
        array. ``deletions`` is None, a ``DeletionVector``, a pyroaring ``BitMap`` or array of
        deleted offsets, or a boolean live mask. Deleted rows are left out. A row id live in two
        places raises CorruptFileError (naming ``path``, e.g. the manifest).
        """
        ids_parts, len_parts, addr_parts = [], [], []
        for entry in fragments:
            fragment_id, row_ids = entry[0], entry[1]
            deletions = entry[2] if len(entry) > 2 else None
            for ids, lens, addrs in _fragment_runs(int(fragment_id), row_ids, deletions, path):
                ids_parts.append(ids)
                len_parts.append(lens)
                addr_parts.append(addrs)
        if not ids_parts:
            return cls(_EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY)
        ids = np.concatenate(ids_parts)
        lens = np.concatenate(len_parts)
        addrs = np.concatenate(addr_parts)
        single = lens == 1
        run_ids, run_lens, run_addrs = _sorted_by_first(ids[~single], lens[~single], addrs[~single])
        one_ids, one_addrs = _sorted_by_first(ids[single], addrs[single])
        _check_unique(run_ids, run_lens, one_ids, path)
        return cls(run_ids, run_lens, run_addrs, one_ids, one_addrs)

    def lookup(self, row_ids) -> np.ndarray:
        """uint64 addresses of ``row_ids``; ``MISSING_ADDRESS`` (2**64-1) where an id is not a
        live row (never written, or deleted)."""
        query = np.ascontiguousarray(row_ids, dtype=np.uint64).ravel()
        return _rowids.lookup(self.run_ids, self._run_spans, self._run_fences, self.single_ids,
                              self.single_addresses, self._single_fences, query, MISSING_ADDRESS)

    def contains(self, row_ids) -> np.ndarray:
        """bool mask: which ``row_ids`` are live rows."""
        return self.lookup(row_ids) != MISSING_ADDRESS

    @property
    def run_lengths(self) -> np.ndarray:
        return self._run_spans[:, 0]

    @property
    def run_addresses(self) -> np.ndarray:
        return self._run_spans[:, 1]

    def __len__(self) -> int:
        """Number of live row ids indexed."""
        return int(self.run_lengths.sum()) + int(self.single_ids.size)

    def __repr__(self) -> str:
        return (f"RowIdIndex({len(self)} ids in {self.run_ids.size} runs + "
                f"{self.single_ids.size} single ids)")


def _fragment_runs(fragment_id, row_ids, deletions, path):
    """(id_start, length, address_start) arrays for one fragment's live rows."""
    base = fragment_id << 32
    if isinstance(row_ids, np.ndarray):
        ids = np.ascontiguousarray(row_ids, dtype=np.uint64)
        live = as_live_mask(deletions, ids.size)
        starts, poss, lens = _rowids.id_runs(ids, _as_u8(live), 0)
        yield starts, lens, poss + np.uint64(base)
        return
    seq = row_ids if isinstance(row_ids, RowIdSequence) else RowIdSequence.from_bytes(row_ids, path)
    n = len(seq)
    live = as_live_mask(deletions, n)
    live_u8 = _as_u8(live)
    pos = 0
    for seg in seq.segments:
        count = len(seg)
        if count == 0:
            continue
        if seg.kind == SegmentKind.RANGE:
            if live is None:
                yield (np.array([seg.start], dtype=np.uint64), np.array([count], dtype=np.uint64),
                       np.array([base + pos], dtype=np.uint64))
            else:
                offs, lens = _rowids.mask_runs(live_u8, pos, count)
                yield offs + np.uint64(seg.start), lens, offs + np.uint64(base + pos)
        else:
            window = _ALL_LIVE if live is None else live_u8[pos:pos + count]
            starts, poss, lens = _rowids.id_runs(seg.to_numpy(), window, pos)
            yield starts, lens, poss + np.uint64(base)
        pos += count


def _sorted_by_first(keys, *others):
    """``keys`` and the parallel arrays reordered by ascending key (no work when sorted)."""
    if keys.size < 2 or bool(np.all(keys[1:] >= keys[:-1])):
        return (keys, *others)
    order = np.argsort(keys)
    return (keys[order], *(o[order] for o in others))


def _as_u8(live):
    if live is None:
        return _ALL_LIVE
    return np.ascontiguousarray(live).view(np.uint8)


def _check_unique(run_ids, run_lens, one_ids, path):
    if run_ids.size > 1:
        ends = run_ids[:-1] + run_lens[:-1]
        bad = np.flatnonzero(run_ids[1:] < ends)
        if bad.size:
            _duplicate(int(run_ids[bad[0] + 1]), path)
    if one_ids.size > 1:
        bad = np.flatnonzero(one_ids[1:] == one_ids[:-1])
        if bad.size:
            _duplicate(int(one_ids[bad[0]]), path)
    if one_ids.size and run_ids.size:
        j = np.searchsorted(run_ids, one_ids, side="right").astype(np.int64) - 1
        ok = j >= 0
        jj = np.where(ok, j, 0)
        inside = ok & (one_ids - run_ids[jj] < run_lens[jj])
        bad = np.flatnonzero(inside)
        if bad.size:
            _duplicate(int(one_ids[bad[0]]), path)


def _duplicate(row_id, path):
    raise CorruptFileError(f"row id {row_id} belongs to more than one live row", path)
