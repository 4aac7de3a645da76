"""pylance's full-text query objects (``lance.query``), as plain values.

The classes, their arguments and defaults are pylance 14's; ``lancefmt.query`` re-exports
them. A query names its column(s); :mod:`.search` evaluates it. ``a & b`` is a boolean query
with both as MUST clauses, ``a | b`` with both as SHOULD clauses, as in pylance.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from enum import Enum
from typing import Optional

from ...errors import InvalidArgumentError


class FullTextQueryType(Enum):
    MATCH = "match"
    MATCH_PHRASE = "match_phrase"
    BOOST = "boost"
    MULTI_MATCH = "multi_match"
    COMBINED_FIELDS = "combined_fields"
    BOOLEAN = "boolean"


class FullTextOperator(Enum):
    AND = "AND"
    OR = "OR"


class DocumentGranularity(str, Enum):
    """The unit treated as one full-text-search document."""

    ROW = "row"
    LIST_ELEMENT = "list_element"


class Occur(Enum):
    SHOULD = "SHOULD"
    MUST = "MUST"
    MUST_NOT = "MUST_NOT"


class FullTextQuery(abc.ABC):
    """A full-text query (see module docstring)."""

    @property
    def inner(self) -> "FullTextQuery":
        return self

    @abc.abstractmethod
    def query_type(self) -> FullTextQueryType:
        """The kind of query."""

    def columns(self) -> list:
        return []

    def __and__(self, other: "FullTextQuery") -> "FullTextQuery":
        return BooleanQuery([(Occur.MUST, self), (Occur.MUST, other)])

    def __or__(self, other: "FullTextQuery") -> "FullTextQuery":
        return BooleanQuery([(Occur.SHOULD, self), (Occur.SHOULD, other)])


def _operator(op) -> FullTextOperator:
    if isinstance(op, FullTextOperator):
        return op
    try:
        return FullTextOperator(str(getattr(op, "value", op)).upper())
    except ValueError:
        raise InvalidArgumentError(f"Invalid operator: {op}") from None


def _granularity(g):
    if g is None or isinstance(g, DocumentGranularity):
        return g
    return DocumentGranularity(getattr(g, "value", g))


class MatchQuery(FullTextQuery):
    def __init__(self, query: str, column: str, *, boost: float = 1.0, fuzziness: Optional[int] = 0,
                 max_expansions: int = 50, operator: FullTextOperator = FullTextOperator.OR,
                 prefix_length: int = 0, document_granularity: Optional[DocumentGranularity] = None):
        """Documents holding the query's tokens (any with OR, all with AND), scored by BM25
        and multiplied by ``boost``; ``fuzziness`` > 0 also matches index tokens within that
        edit distance (their first ``prefix_length`` characters unchanged, at most
        ``max_expansions`` per query token)."""
        self.query = str(query)
        self.column = column
        self.boost = float(boost)
        self.fuzziness = fuzziness
        self.max_expansions = int(max_expansions)
        self.operator = _operator(operator)
        self.prefix_length = int(prefix_length)
        self.document_granularity = _granularity(document_granularity)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH

    def columns(self) -> list:
        return [self.column]

    def __repr__(self):
        return f"MatchQuery({self.query!r}, {self.column!r}, operator={self.operator.value})"


class PhraseQuery(FullTextQuery):
    def __init__(self, query: str, column: str, *, slop: int = 0,
                 document_granularity: Optional[DocumentGranularity] = None):
        """Documents holding the query's tokens in order, each at most ``slop`` positions
        further than in the query (the index needs positions)."""
        self.query = str(query)
        self.column = column
        self.slop = int(slop)
        self.document_granularity = _granularity(document_granularity)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH_PHRASE

    def columns(self) -> list:
        return [self.column]


class BoostQuery(FullTextQuery):
    def __init__(self, positive: FullTextQuery, negative: FullTextQuery, *,
                 negative_boost: float = 0.5):
        """The positive query's documents; those the negative query also finds lose
        ``negative_boost`` times its score."""
        self.positive = positive
        self.negative = negative
        self.negative_boost = float(negative_boost)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOST

    def columns(self) -> list:
        return self.positive.columns() + self.negative.columns()


class MultiMatchQuery(FullTextQuery):
    def __init__(self, query: str, columns: list, *, boosts: Optional[list] = None,
                 operator: FullTextOperator = FullTextOperator.OR):
        """A match query per column; a document scores its best column's (boosted) score."""
        columns = list(columns)
        if not columns:
            raise InvalidArgumentError("Cannot create MultiMatchQuery with no columns")
        boosts = [1.0] * len(columns) if boosts is None else [float(b) for b in boosts]
        if len(boosts) != len(columns):
            raise InvalidArgumentError("The number of boosts must match the number of queries")
        self.query = str(query)
        self.match_queries = [MatchQuery(query, c, boost=b, operator=operator)
                              for c, b in zip(columns, boosts)]

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MULTI_MATCH

    def columns(self) -> list:
        return [q.column for q in self.match_queries]


class CombinedFieldsQuery(FullTextQuery):
    def __init__(self, query: str, columns: list, *, boosts: Optional[list] = None,
                 operator: FullTextOperator = FullTextOperator.OR):
        """BM25F over several columns as one virtual field: a term's frequency and a row's
        length are the columns' weighted sums, document counts and document frequencies
        their maximum (pylance's ``combined_fields``); each weight must be at least 1."""
        columns = list(columns)
        if not columns:
            raise InvalidArgumentError("CombinedFieldsQuery needs at least one column")
        boosts = [1.0] * len(columns) if boosts is None else [float(b) for b in boosts]
        if len(boosts) != len(columns):
            raise InvalidArgumentError("The number of boosts must match the number of columns")
        if any(not b >= 1.0 for b in boosts):
            raise InvalidArgumentError("combined_fields boosts must be >= 1")
        self.query = str(query)
        self.fields = columns
        self.boosts = boosts
        self.operator = _operator(operator)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.COMBINED_FIELDS

    def columns(self) -> list:
        return list(self.fields)


class BooleanQuery(FullTextQuery):
    def __init__(self, queries: list):
        """MUST clauses must all match and add their scores; SHOULD clauses add theirs (and,
        without MUST clauses, one must match); MUST_NOT clauses only exclude documents."""
        self.clauses = [(o if isinstance(o, Occur) else Occur(str(getattr(o, "value", o)).upper()), q)
                        for o, q in queries]

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOLEAN

    def columns(self) -> list:
        return [c for _, q in self.clauses for c in q.columns()]


@dataclass
class MinHashQuery:
    """A MinHash similarity search (pylance's; lancefmt has no MinHash LSH index)."""

    text: str
    column: str
