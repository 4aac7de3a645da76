"""Answer the index-answerable part of a filter: which fragments, which row ids, how exact.

The planner never knows index types. For each :class:`~lancefmt.sql.sargable.Term` it picks
an index on the term's column whose type serves the query (exact types first), then:

* the fragments answered (:attr:`IndexPlan.fragments`) are those every chosen index covers;
  the caller scans all other fragments with the whole filter;
* ``AND`` keeps what every answerable child allows (an unanswerable child makes the result
  *at most*), ``OR`` needs every child answerable, ``NOT`` needs an exact child and is itself
  *at most* (an index's complement includes the rows where the column is null, which SQL's
  NOT excludes);
* whatever is not exact is re-checked by the caller with the whole filter.

Every leaf's row ids are turned into row addresses first (``to_addresses``, given by the
caller: the identity unless the dataset has stable row ids), so results combine in one space
whether an index records row ids or, like zone maps, addresses.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyroaring import BitMap

from ...sql.sargable import All, Any, Negate, Term
from .rowset import SearchResult, all_of, any_of


@dataclass
class IndexPlan:
    fragments: BitMap          # fragments the result is complete for
    result: SearchResult       # row addresses (only those in ``fragments`` matter)
    text: str                  # pylance's words: [id = 5]@id_idx(BTree), AND(..), OR(..), NOT(..)
    indices: list              # the NamedIndex objects used

    @property
    def exact(self) -> bool:
        return self.result.exact and not self.result.negated


def _choose(term: Term, catalog: dict):
    candidates = [n for n in catalog.get(term.column, ()) if n.serves(term.query)]
    if not candidates:
        return None
    candidates.sort(key=lambda n: not n.exact)  # stable: the first built wins a tie, as pylance
    return candidates[0]


def _chosen(tree, catalog, out: dict) -> None:
    """Map every Term of ``tree`` to its index (or None)."""
    if isinstance(tree, Term):
        out[tree] = _choose(tree, catalog)
    elif isinstance(tree, (All, Any)):
        for c in tree.children:
            _chosen(c, catalog, out)
    elif isinstance(tree, Negate):
        _chosen(tree.child, catalog, out)


class _Run:
    def __init__(self, chosen: dict, to_addresses):
        self.chosen = chosen
        self.to_addresses = to_addresses
        self.used: dict = {}

    def search(self, segment, query) -> SearchResult:
        res = segment.search(query)
        if res.addresses or segment.records_addresses or self.to_addresses is None:
            return SearchResult(res.rows, res.exact, res.negated, True)
        return SearchResult(self.to_addresses(res.rows), res.exact, res.negated, True)

    def node(self, tree):
        """(SearchResult, text) or None when the index cannot answer ``tree``."""
        if isinstance(tree, Term):
            named = self.chosen.get(tree)
            if named is None:
                return None
            results = [self.search(seg, tree.query) for seg in named.segments]
            self.used[named.name] = named
            res = results[0] if len(results) == 1 else any_of(results)
            return res, f"[{tree.describe()}]@{named.describe()}"
        if isinstance(tree, All):
            parts = [self.node(c) for c in tree.children]
            got = [p for p in parts if p is not None]
            if not got:
                return None
            res = all_of([r for r, _ in got])
            if len(got) < len(parts):
                res = SearchResult(res.rows, False, res.negated)
            return res, _joined("AND", [t for _, t in got])
        if isinstance(tree, Any):
            parts = [self.node(c) for c in tree.children]
            if any(p is None for p in parts):
                return None
            return any_of([r for r, _ in parts]), _joined("OR", [t for _, t in parts])
        if isinstance(tree, Negate):
            inner = self.node(tree.child)
            if inner is None or not inner[0].exact:
                return None
            r, text = inner
            return SearchResult(r.rows, False, not r.negated), f"NOT({text})"
        return None


def _joined(op: str, texts: list) -> str:
    """``texts`` joined as pylance prints a chain of a binary operator: ``AND(AND(a,b),c)``."""
    out = texts[0]
    for t in texts[1:]:
        out = f"{op}({out},{t})"
    return out


def plan(tree, catalog: dict, to_addresses=None) -> IndexPlan | None:
    """The index answer for ``tree`` (a sargable tree) given ``catalog`` (see
    :func:`.catalog.build_catalog`), or None when no index helps. ``to_addresses(row_ids)``
    maps recorded row ids to row addresses (dropping ids no longer present); None = they are
    addresses already. The result's rows are row addresses."""
    if not catalog:
        return None
    chosen: dict = {}
    _chosen(tree, catalog, chosen)
    picked = [n for n in chosen.values() if n is not None]
    if not picked:
        return None
    run = _Run(chosen, to_addresses)
    out = run.node(tree)
    if out is None:
        return None
    result, text = out
    fragments = None
    for named in run.used.values():
        cov = named.coverage
        fragments = cov if fragments is None else (fragments & cov)
    if not fragments:
        return None
    return IndexPlan(fragments, result, text, list(run.used.values()))
