"""The planner picks indices by the queries their types serve and combines their answers."""
import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lancefmt._proto import table_pb2
from lancefmt.index.core.catalog import NamedIndex, Segment
from lancefmt.index.core.planner import plan
from lancefmt.index.core.registry import IndexType, LoadedIndex
from lancefmt.index.core.rowset import SearchResult, as_rowset
from lancefmt.sql import parse_filter
from lancefmt.sql.sargable import Equals, IsIn, Range, sargable

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("c", pa.int64())])
DATA = {"a": np.arange(100) % 10, "b": np.arange(100) % 7, "c": np.arange(100)}


class FakeIndex(LoadedIndex):
    """Answers from the in-memory column; row id = position."""

    def __init__(self, column, exact=True):
        self.values, self.exact, self.calls = DATA[column], exact, 0

    def search(self, q):
        self.calls += 1
        v = self.values
        if isinstance(q, Equals):
            m = v == q.value
        elif isinstance(q, IsIn):
            m = np.isin(v, q.values)
        else:
            m = np.ones(v.size, bool)
            if q.lower is not None:
                m &= (v >= q.lower) if q.lower_inclusive else (v > q.lower)
            if q.upper is not None:
                m &= (v <= q.upper) if q.upper_inclusive else (v < q.upper)
        rows = np.flatnonzero(m)
        if not self.exact:
            rows = np.union1d(rows, [99])
        return SearchResult(as_rowset(rows), self.exact)


class FakeType(IndexType):
    type_name = "Fake"
    queries = (Equals, Range, IsIn)

    def __init__(self, exact=True):
        self.exact = exact


def named(column, fragments=(0,), exact=True, stable=False):
    loaded = FakeIndex(column, exact)
    seg = Segment(table_pb2.IndexMetadata(), FakeType(exact), BitMap(fragments), None, stable)
    seg.load = lambda: loaded
    return NamedIndex(f"{column}_idx", column, FakeType(exact), [seg]), loaded


def expected(text):
    """Row ids (= column c) the filter keeps, by Arrow."""
    t = pa.table(DATA)
    return set(t.filter(parse_filter(text, t.schema)).column("c").to_pylist())


def answer(p):
    rows = set(p.result.rows.tolist())
    return set(range(100)) - rows if p.result.negated else rows


def test_exact_answers_equal_the_filter():
    a, _ = named("a")
    b, _ = named("b")
    catalog = {"a": [a], "b": [b]}
    for text in ["a = 3", "a = 3 AND b = 2", "a = 3 OR b = 2", "a IN (1, 2) AND NOT b = 0",
                 "a BETWEEN 2 AND 4", "NOT (a = 1 OR b > 3)"]:
        p = plan(sargable(text, SCHEMA), catalog)
        got = answer(p)
        if p.exact:
            assert got == expected(text), text
        else:
            assert got >= expected(text), text  # at most: a superset, re-checked


def test_unindexed_terms_make_and_inexact_and_or_unanswerable():
    a, _ = named("a")
    catalog = {"a": [a]}
    p = plan(sargable("a = 3 AND c > 50", SCHEMA), catalog)
    assert not p.exact and answer(p) >= expected("a = 3 AND c > 50")
    assert plan(sargable("a = 3 OR c > 50", SCHEMA), catalog) is None
    assert plan(sargable("c > 50", SCHEMA), catalog) is None


def test_coverage_is_the_intersection_and_texts_are_pylances():
    a, _ = named("a", fragments=(0, 1, 2))
    b, _ = named("b", fragments=(1, 2, 3))
    p = plan(sargable("a = 3 AND b = 2", SCHEMA), {"a": [a], "b": [b]})
    assert list(p.fragments) == [1, 2]
    assert p.text == "AND([a = 3]@a_idx(Fake),[b = 2]@b_idx(Fake))"
    assert plan(sargable("NOT a = 3", SCHEMA), {"a": [a]}).text == "NOT([a = 3]@a_idx(Fake))"


def test_not_of_an_inexact_answer_is_unanswerable():
    a, _ = named("a", exact=False)
    assert plan(sargable("NOT a = 3", SCHEMA), {"a": [a]}) is None
    p = plan(sargable("a = 3", SCHEMA), {"a": [a]})
    assert not p.exact and 99 in answer(p)


def test_row_ids_are_mapped_to_addresses_once_per_leaf():
    a, _ = named("a", stable=True)
    seen = []

    def to_addresses(ids):
        seen.append(ids.size)
        return ids + np.uint64(1000)

    p = plan(sargable("a = 3 OR a = 4", SCHEMA), {"a": [a]}, to_addresses)
    assert len(seen) == 2 and p.result.rows.min() >= 1000
