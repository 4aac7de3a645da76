"""pylance's ``lance.query``: the full-text query objects (see :mod:`lancefmt.index.fts.query`)."""
from .index.fts.query import (BooleanQuery, BoostQuery, CombinedFieldsQuery,  # noqa: F401
                              DocumentGranularity, FullTextOperator, FullTextQuery,
                              FullTextQueryType, MatchQuery, MinHashQuery, MultiMatchQuery, Occur,
                              PhraseQuery)

__all__ = ["BooleanQuery", "BoostQuery", "CombinedFieldsQuery", "DocumentGranularity", "FullTextOperator",
           "FullTextQuery", "FullTextQueryType", "MatchQuery", "MinHashQuery",
           "MultiMatchQuery", "Occur", "PhraseQuery"]
