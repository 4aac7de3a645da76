"""Row sets combine like the sets they stand for, complements included."""
import itertools

import numpy as np

from lancefmt.index.core.rowset import SearchResult, all_of, any_of, as_rowset

UNIVERSE = set(range(20))


def as_set(r: SearchResult) -> set:
    rows = set(r.rows.tolist())
    return UNIVERSE - rows if r.negated else rows


def results():
    for rows in ([], [1, 2, 3], [3, 4, 5, 10], list(range(0, 20, 2))):
        for negated in (False, True):
            yield SearchResult(as_rowset(rows), True, negated)


def test_and_or_of_every_pair_and_triple_match_python_sets():
    rs = list(results())
    for k in (2, 3):
        for combo in itertools.permutations(rs, k):
            sets = [as_set(r) for r in combo]
            assert as_set(all_of(combo)) == set.intersection(*sets)
            assert as_set(any_of(combo)) == set.union(*sets)


def test_exactness_is_kept_only_when_every_part_is_exact():
    exact = SearchResult(as_rowset([1]), True)
    at_most = SearchResult(as_rowset([1, 2]), False)
    assert all_of([exact, exact]).exact and not all_of([exact, at_most]).exact
    assert not any_of([exact, at_most]).exact
    assert all_of([exact]).kind == "Exact" and at_most.kind == "AtMost"


def test_as_rowset_sorts_and_dedups():
    assert as_rowset(np.array([5, 1, 5, 3], dtype=np.int64)).tolist() == [1, 3, 5]
    assert as_rowset([1, 2]).dtype == np.uint64
