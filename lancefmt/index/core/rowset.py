"""Row-id sets and search results: sorted, unique ``uint64`` numpy arrays, combined in numpy.

An index answers a query with the row ids it finds (:class:`SearchResult`): *exact* (every
row matches) or *at most* (a superset: the caller re-checks the filter on those rows). A set
may also be a *complement* (``negated``): every row of the searched fragments except these,
which keeps ``NOT x = 5`` small. The planner combines results with the four operations below;
whole-array numpy calls only, no per-row Python.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EMPTY = np.empty(0, dtype=np.uint64)


def as_rowset(values) -> np.ndarray:
    """Sorted unique uint64 array of ``values`` (any integer array-like). A sort and one pass
    for repeats (numpy's ``unique`` hashes integers, several times slower for row ids)."""
    a = np.asarray(values)
    if a.dtype != np.uint64:
        a = a.astype(np.uint64)
    if a.size > 1 and not (a[1:] > a[:-1]).all():
        a = np.sort(a)
        repeat = a[1:] == a[:-1]
        if repeat.any():
            a = a[np.concatenate(([True], ~repeat))]
    return a


def union(sets) -> np.ndarray:
    sets = [s for s in sets if s.size]
    if not sets:
        return EMPTY
    if len(sets) == 1:
        return sets[0]
    return as_rowset(np.concatenate(sets))


def intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not a.size or not b.size:
        return EMPTY
    return np.intersect1d(a, b, assume_unique=True)


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not a.size or not b.size:
        return a
    return a[~np.isin(a, b, assume_unique=True)]


@dataclass(frozen=True)
class SearchResult:
    """Row ids found by an index. ``exact``: all of them match (else re-check them);
    ``negated``: the set is every searched row *except* ``rows``; ``addresses``: the values
    are row addresses (fragment id << 32 | offset: what zone-based indices find), not the
    row ids the dataset's indices otherwise record (which are addresses too unless the
    dataset has stable row ids)."""
    rows: np.ndarray
    exact: bool = True
    negated: bool = False
    addresses: bool = False

    @property
    def kind(self) -> str:
        """Lance's word for it: ``Exact`` or ``AtMost``."""
        return "Exact" if self.exact else "AtMost"


def all_of(results) -> SearchResult:
    """AND of results (see module docstring for complements)."""
    pos = [r.rows for r in results if not r.negated]
    neg = [r.rows for r in results if r.negated]
    exact = all(r.exact for r in results)
    if pos:
        rows = pos[0]
        for p in pos[1:]:
            rows = intersect(rows, p)
        return SearchResult(difference(rows, union(neg)), exact, False)
    return SearchResult(union(neg), exact, True)


def any_of(results) -> SearchResult:
    """OR of results: a plain union, or a complement when any part is one."""
    pos = union([r.rows for r in results if not r.negated])
    neg = [r.rows for r in results if r.negated]
    exact = all(r.exact for r in results)
    if not neg:
        return SearchResult(pos, exact, False)
    rows = neg[0]
    for n in neg[1:]:
        rows = intersect(rows, n)
    return SearchResult(difference(rows, pos), exact, True)
