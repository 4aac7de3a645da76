"""Evaluating full-text queries: BM25 scores per row, as pylance 14 computes them.

A :class:`ColumnSearch` is what one column offers a query: its INVERTED segments (each scored
with its own statistics: documents, average length, documents per token) and the rows no
segment covers (*flat* rows, tokenised on the fly and scored with the first segment's
statistics plus their own, as pylance's flat search does; a column without an index is all flat
rows, tokenised by the plain ``simple`` tokenizer). ``allowed`` drops rows (deleted ones, and a
prefilter's misses) before anything is ranked.

Scores follow Lance: a match query sums, over its tokens (repeats included), ``idf * (k1 + 1)
* f / (f + k1 * (1 - b + b * len / avgdl))`` in float32, times its boost; AND needs every
token; a phrase needs its tokens in order (the query's own gaps, left by removed stop words,
included), each within ``slop`` positions; a multi-match keeps each row's best column; a
boolean query sums its MUST and SHOULD clauses; a boost query subtracts ``negative_boost``
times the negative query's score. A :class:`Hits` is rows and scores, ordered by row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from ._fuzzy import code_points, within_distance
from ._postings import bm25_idf, bm25_weights
from ._score import phrase_filter, score_lists, sorted_member, top_k_pruned
from ..core.registry import ROW_ADDRESS, ROW_ID, VALUE, TrainingData
from .build import LIST_ELEMENT, ROW, build_partition, is_list, string_values
from .query import (BooleanQuery, BoostQuery, CombinedFieldsQuery, FullTextOperator, MatchQuery,
                    MultiMatchQuery, Occur, PhraseQuery)
from .tokenizer import Tokenizer, normalize_params

#: the tokenizer of a column without an index, and of fuzzy query text (Lance's plain
#: ``simple`` tokenizer: no filters at all)
PLAIN = {"base_tokenizer": "simple", "lower_case": False, "stem": False,
         "remove_stop_words": False, "ascii_folding": False, "max_token_length": None}


class ElementDocs:
    """Ids for list-element documents, which share their row's id: ``ELEMENT | source << 40 |
    document`` (a partition or the flat rows is a source), resolved back to (row id, element)
    at the end. Scoped to one search, so every clause names a document alike."""

    ELEMENT = np.uint64(1) << np.uint64(63)

    def __init__(self):
        self._sources: dict = {}
        self._tables: list = []

    def ids(self, source, rows: np.ndarray, doc_index: np.ndarray, docs: np.ndarray) -> np.ndarray:
        n = self._sources.get(id(source))
        if n is None:
            n = self._sources[id(source)] = len(self._tables)
            self._tables.append((source, rows, doc_index))
        return self.ELEMENT | (np.uint64(n) << np.uint64(40)) | np.asarray(docs, dtype=np.uint64)

    def resolve(self, ids: np.ndarray) -> tuple:
        """(row ids, element index or -1 for row documents) of result ``ids``."""
        ids = np.asarray(ids, dtype=np.uint64)
        rows = ids.copy()
        elems = np.full(ids.size, -1, dtype=np.int64)
        mark = (ids & self.ELEMENT) != 0
        if mark.any():
            src = ((ids[mark] & ~self.ELEMENT) >> np.uint64(40)).astype(np.int64)
            doc = (ids[mark] & np.uint64((1 << 40) - 1)).astype(np.int64)
            r, e = np.empty(src.size, np.uint64), np.empty(src.size, np.int64)
            for n in np.unique(src).tolist():
                sel = src == n
                _, trow, telem = self._tables[n]
                r[sel] = trow[doc[sel]]
                e[sel] = telem[doc[sel]]
            rows[mark], elems[mark] = r, e
        return rows, elems


class BestOf:
    """Several queries, each row keeping its best score (a quoted query string searched in
    several columns)."""

    def __init__(self, queries: list):
        self.queries = list(queries)

    def columns(self) -> list:
        return [c for q in self.queries for c in q.columns()]


@dataclass
class Hits:
    ids: np.ndarray      # uint64, ascending, unique
    scores: np.ndarray   # float32

    @classmethod
    def empty(cls) -> "Hits":
        return cls(np.empty(0, np.uint64), np.empty(0, np.float32))

    @classmethod
    def of(cls, ids, scores) -> "Hits":
        ids = np.asarray(ids, dtype=np.uint64)
        scores = np.asarray(scores, dtype=np.float32)
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():
            order = np.argsort(ids, kind="stable")
            ids, scores = ids[order], scores[order]
            keep = np.ones(ids.size, dtype=bool)
            keep[1:] = ids[1:] != ids[:-1]
            ids, scores = ids[keep], scores[keep]
        return cls(ids, scores)

    def __len__(self) -> int:
        return int(self.ids.size)

    def top(self, limit=None, offset=None) -> "Hits":
        """By score, best first (ties by row id), after ``offset``, at most ``limit``."""
        start = int(offset or 0)
        n = self.ids.size
        idx = np.arange(n)
        if limit is not None and start + int(limit) < n:
            k = start + int(limit)
            neg = -self.scores
            idx = np.argpartition(neg, k - 1)[:k]
            # rows tied with the k-th score outside the cut compete by row id
            kth = neg[idx].max()
            idx = np.union1d(idx, np.flatnonzero(neg == kth))
        order = idx[np.lexsort((self.ids[idx], -self.scores[idx].astype(np.float64)))]
        stop = None if limit is None else start + int(limit)
        order = order[start:stop]
        return Hits(self.ids[order], self.scores[order])


class FlatRows:
    """Rows no segment covers: their ids and values, read when first needed."""

    def __init__(self, read: Callable[[], tuple]):
        self._read = read
        self._data = None

    def data(self) -> tuple:
        if self._data is None:
            self._data = self._read()
        return self._data


class ColumnSearch:
    """What a query may read for one column (see module docstring)."""

    def __init__(self, column: str, segments: list, flat: FlatRows | None = None,
                 allowed: Callable | None = None, elements: "ElementDocs | None" = None):
        self.column = column
        self.segments = segments
        self.flat = flat
        self.allowed = allowed
        self.elements = elements if elements is not None else ElementDocs()
        self._flat_tokens: dict = {}   # the flat rows' partition, once built
        self.comparisons = np.zeros(1, np.int64)   # documents scored (analyze_plan's metric)

    def hit_ids(self, source, rows: np.ndarray, doc_index, docs: np.ndarray) -> np.ndarray:
        """The ids of documents ``docs`` of a partition: its rows' ids, or for list-element
        documents their element ids (:class:`ElementDocs`)."""
        if doc_index is None:
            return rows[docs]
        return self.elements.ids(source, rows, doc_index, docs)

    @property
    def tokenizer(self) -> Tokenizer:
        if self.segments:
            return self.segments[0].tokenizer
        return plain_tokenizer()

    def keep(self, ids: np.ndarray, key=None) -> np.ndarray:
        """Which of the row ``ids`` may be returned (``key``: cache the answer under it, for
        arrays that never change, such as a partition's row ids)."""
        if self.allowed is None:
            return np.ones(ids.size, dtype=bool)
        return self.allowed(ids, key)

    # -- flat rows -------------------------------------------------------------------------
    def flat_partition(self):
        """The flat rows as an in-memory partition, tokenised as the index does (positions
        kept, for phrases), built once: (row ids by document, :class:`Partition`), or None."""
        if "part" not in self._flat_tokens:
            ids, values = self.flat.data() if self.flat is not None else (np.empty(0, np.uint64), None)
            part = None
            if values is not None and len(values):
                ids = np.asarray(ids, dtype=np.uint64)
                table = pa.table({VALUE: values, ROW_ID: pa.array(ids, pa.uint64()),
                                  ROW_ADDRESS: pa.array(ids, pa.uint64())})
                data = TrainingData(pa.field(self.column, values.type), [(0, len(values))],
                                    lambda fid: iter(table.to_batches()))
                tok = Tokenizer({**self.tokenizer.params, "with_position": True})
                part = build_partition(data, tok, self.granularity)
            self._flat_tokens["part"] = part
        return self._flat_tokens["part"]

    @property
    def granularity(self) -> str:
        if self.segments and self.segments[0].element_docs:
            return LIST_ELEMENT
        return ROW


_PLAIN = None


def plain_tokenizer() -> Tokenizer:
    global _PLAIN
    if _PLAIN is None:
        _PLAIN = Tokenizer(normalize_params(PLAIN))
    return _PLAIN


# -- statistics ----------------------------------------------------------------------------
class Stats:
    """BM25 statistics: documents, total tokens, documents per token."""

    def __init__(self, num_docs: int, total_tokens: int, token_docs: Callable[[str], int]):
        self.num_docs = int(num_docs)
        self.total_tokens = int(total_tokens)
        self.token_docs = token_docs

    @property
    def avgdl(self) -> float:
        if not self.num_docs:
            return 0.0
        return float(np.float32(self.total_tokens) / np.float32(self.num_docs))

    def idf(self, tokens: list) -> np.ndarray:
        counts = [self.token_docs(t) for t in tokens]
        out = bm25_idf(np.asarray(counts, np.uint32), self.num_docs) if tokens else np.empty(0, np.float32)
        return np.where(np.asarray(counts) > 0, out, np.float32(0)).astype(np.float32)


def index_stats(segments: list):
    """The statistics of all of an index's segments together (pylance scores a document of
    any segment against them all), or None without segments."""
    if not segments:
        return None
    if len(segments) == 1:
        seg = segments[0]
        return Stats(seg.num_docs, seg.total_tokens, seg.token_docs)
    return Stats(sum(s.num_docs for s in segments), sum(s.total_tokens for s in segments),
                 lambda t: sum(s.token_docs(t) for s in segments))


# -- match and phrase ------------------------------------------------------------------------
def query_tokens(src: ColumnSearch, q) -> list:
    """``(token, position)`` of the query text (fuzzy queries: the plain tokenizer)."""
    if isinstance(q, MatchQuery) and is_fuzzy(q):
        return plain_tokenizer().tokens(q.query)
    return src.tokenizer.tokens(q.query)


def is_fuzzy(q: MatchQuery) -> bool:
    """Lance expands terms only for a fuzziness given and not 0 (None, "automatic" in the
    docs, matches exactly in pylance 14)."""
    return q.fuzziness is not None and int(q.fuzziness) != 0


def expand_fuzzy(src: ColumnSearch, q: MatchQuery, tokens: list) -> list:
    """Each query token replaced by the index tokens within its edit distance (key order, at
    most ``max_expansions`` each)."""
    if len(src.segments) == 1:
        vocab, (codes, offsets) = src.segments[0].vocabulary(), src.segments[0].vocabulary_codes()
    else:
        vocab = sorted({t for seg in src.segments for t in seg.vocabulary()})
        codes, offsets = code_points(vocab)
    out = []
    for t in tokens:
        k = int(q.fuzziness)
        prefix = t[:q.prefix_length] if q.prefix_length else ""
        for i in within_distance(t, codes, offsets, int(k), prefix, q.max_expansions):
            out.append(vocab[i])
    return out


def match(src: ColumnSearch, q, phrase: bool = False, limit=None, within=None) -> Hits:
    """A match or phrase query on one column (``limit``: only the best ``limit`` rows are
    needed, as for a query at the root of a ranked search; ``within``: only these rows, sorted
    row ids, matter)."""
    pairs = query_tokens(src, q)
    tokens = [t for t, _ in pairs]
    if not phrase and isinstance(q, MatchQuery) and is_fuzzy(q):
        tokens = expand_fuzzy(src, q, tokens)
        pairs = [(t, 0) for t in tokens]
    if not tokens:
        return Hits.empty()
    require_all = phrase or (isinstance(q, MatchQuery) and q.operator == FullTextOperator.AND)
    boost = np.float32(getattr(q, "boost", 1.0))
    parts = []
    stats = index_stats(src.segments)
    for seg in src.segments:
        parts.append(_segment_match(src, seg, stats, pairs, require_all, phrase,
                                    getattr(q, "slop", 0), limit, boost, within))
    flat = _flat_match(src, stats, pairs, require_all, phrase, getattr(q, "slop", 0))
    if within is not None:
        flat = Hits(flat.ids[member(flat.ids, within)[0]], flat.scores[member(flat.ids, within)[0]])
    if boost != 1.0:
        flat = Hits(flat.ids, (flat.scores * boost).astype(np.float32))
    parts.append(flat)
    hits = union_max(parts)
    return hits.top(limit) if limit is not None else hits


def _segment_match(src, seg, stats: Stats, pairs, require_all, phrase, slop, limit, boost,
                   within=None) -> Hits:
    tokens = [t for t, _ in pairs]
    distinct = list(dict.fromkeys(tokens))
    if require_all and any(stats.token_docs(t) == 0 for t in distinct):
        return Hits.empty()
    mult = {t: tokens.count(t) for t in distinct}
    by_part: dict = {}
    for t in distinct:
        for part, docs, w in seg.weighted(t, (stats.num_docs, stats.total_tokens, stats.token_docs(t))):
            by_part.setdefault(part.pid, (part, []))[1].append((t, docs, w))
    out_ids, out_scores = [], []
    for part, lists in by_part.values():
        if require_all and len(lists) < len(distinct):
            continue
        rows, _, doc_index = part.docs()
        live = src.keep(rows, key=("rows", seg.store.dir_uri, part.pid))
        need = len(distinct) if require_all else 1
        scored = [(d, w, mult[t]) for t, d, w in lists]
        if within is not None and not phrase and doc_index is None and within.size * 8 < rows.size:
            # few rows matter: probe the lists for them instead of walking the lists
            inside, pos = member(np.asarray(within, dtype=np.uint64), rows)
            docs_hit, found = _probe(pos[inside], scored, live, need, boost)
            src.comparisons[0] += docs_hit.size
            out_ids.append(src.hit_ids(part, rows, doc_index, docs_hit))
            out_scores.append(found)
            continue
        live = live.view(np.uint8)
        if phrase:
            plists = {t: next((d, s, p) for pp, d, s, p in seg.positions(t) if pp is part)
                      for t in distinct}
            docs_hit, found = _phrase_top(rows.size, scored, live, need, float(boost), pairs,
                                          plists, slop, limit, src.comparisons)
        else:
            if limit is None:
                docs_hit, found = score_lists(rows.size, scored, live, need, -1, float(boost),
                                              src.comparisons)
            elif boost > 0 and (need == 1 or need == len(scored)):
                docs_hit, found = top_k_pruned(rows.size, scored, live, need, int(limit), float(boost),
                                               src.comparisons)
            else:
                docs_hit, found = score_lists(rows.size, scored, live, need, int(limit), float(boost),
                                              src.comparisons)
        out_ids.append(src.hit_ids(part, rows, doc_index, docs_hit))
        out_scores.append(found)
    if not out_ids:
        return Hits.empty()
    return Hits.of(np.concatenate(out_ids), np.concatenate(out_scores))


def _probe(docs: np.ndarray, scored, live, need, boost) -> tuple:
    """Scores of the given documents (ascending) from the lists, by binary search."""
    score = np.zeros(docs.size, dtype=np.float32)
    count = np.zeros(docs.size, dtype=np.int32)
    keys = {}
    for d, w, m in scored:
        if not d.size:
            continue
        # the documents in the list's own type (positions of the partition's rows, which its
        # doc ids also number): searching int64 keys in a uint32 list copied the list each time
        k = keys.get(d.dtype)
        if k is None:
            k = keys[d.dtype] = docs.astype(d.dtype, copy=False)
        p = np.searchsorted(d, k)
        ok = p < d.size
        ok[ok] = d[p[ok]] == k[ok]
        for _ in range(int(m)):
            score[ok] += w[p[ok]]
        count[ok] += 1
    hit = (count >= need) & (count > 0) & live[docs]
    found = score[hit]
    if boost != 1.0:
        found = (found * np.float32(boost)).astype(np.float32)
    return docs[hit], found


def _phrase_top(n, scored, live, need, boost, pairs, plists, slop, limit, counter=None) -> tuple:
    """The phrase's documents with their scores: every one, or (with ``limit``) the best
    ``limit``, checking candidates best first and asking for more only when too few match."""
    k = -1 if limit is None else max(4 * int(limit), 64)
    while True:
        docs, scores = score_lists(n, scored, live, need, k, boost, counter)
        keep = _phrase_filter(docs, pairs, plists, slop, limit)   # best first when k >= 0
        if k < 0 or docs.size < k or int(keep.sum()) >= int(limit):
            return docs[keep], scores[keep]
        k *= 8


def _phrase_filter(docs_hit: np.ndarray, pairs, plists: dict, slop: int, limit=None) -> np.ndarray:
    """Which candidates (in the order given) hold the phrase; with ``limit``, the check stops
    once ``limit`` have been found (the rest are left out)."""
    order = sorted(range(len(pairs)), key=lambda i: pairs[i][1])
    tokens = [plists[pairs[i][0]] for i in order]
    qpos = [pairs[i][1] for i in order]
    return phrase_filter(np.asarray(docs_hit, dtype=np.int64), tokens,
                         np.asarray(qpos, dtype=np.int64), int(slop), -1 if limit is None else int(limit))


def phrase_matches(lists, slop: int) -> bool:
    """Lance's check: iterators over each query token's document positions, ordered by the
    token's query position, advanced together until the relative positions (document
    position - query position) are non-decreasing and each within ``slop`` of the one before."""
    its = sorted(([np.asarray(p, dtype=np.int64), int(q), 0] for p, q in lists), key=lambda x: x[1])

    def advance(it, least_rel):
        it[2] = int(np.searchsorted(it[0], least_rel + it[1], side="left"))

    for it in its:
        advance(it, 0)
    while True:
        max_rel = None
        all_same = True
        for a, b in zip(its, its[1:]):
            if a[2] >= a[0].size or b[2] >= b[0].size:
                return False
            last = int(a[0][a[2]]) - a[1]
            nxt = int(b[0][b[2]]) - b[1]
            move_to = last if last > nxt else max(last + 1, nxt - slop)
            max_rel = move_to if max_rel is None else max(max_rel, move_to)
            if not (last <= nxt <= last + slop):
                all_same = False
                break
        if len(its) == 1:
            return its[0][2] < its[0][0].size
        if all_same:
            return True
        for it in its:
            advance(it, max_rel)


def _flat_match(src, stats: Stats | None, pairs, require_all, phrase, slop) -> Hits:
    """The flat rows' matches, scored against the index's statistics plus their own (as
    pylance's flat search scores unindexed rows)."""
    part = src.flat_partition() if src.flat is not None else None
    if part is None or not part.num_docs:
        return Hits.empty()
    tokens = [t for t, _ in pairs]
    distinct = list(dict.fromkeys(tokens))
    where = {t: i for i, t in enumerate(part.tokens)}
    lengths = np.diff(part.entry_off)
    base = stats or Stats(0, 0, lambda t: 0)
    counts = {t: base.token_docs(t) + (int(lengths[where[t]]) if t in where else 0) for t in distinct}
    st = Stats(base.num_docs + part.num_docs, base.total_tokens + part.total_tokens, counts.get)
    if require_all and any(t not in where for t in distinct):
        return Hits.empty()
    idf = dict(zip(distinct, st.idf(distinct)))
    avgdl = float(np.float32(st.avgdl))
    mult = {t: tokens.count(t) for t in distinct}
    scored, plists = [], {}
    starts_all = None
    for t in distinct:
        if t not in where:
            continue
        k = where[t]
        a, b = int(part.entry_off[k]), int(part.entry_off[k + 1])
        docs, freqs = part.docs[a:b], part.freqs[a:b]
        scored.append((docs, bm25_weights(freqs, part.num_tokens[docs], avgdl, float(idf[t])), mult[t]))
        if phrase:
            if starts_all is None:
                starts_all = np.concatenate(([0], np.cumsum(part.freqs, dtype=np.int64)))
            plists[t] = (docs, starts_all[a:b + 1] - starts_all[a],
                         part.positions[starts_all[a]:starts_all[b]])
    if not scored:
        return Hits.empty()
    live = src.keep(part.row_ids, key=None).view(np.uint8)
    need = len(distinct) if require_all else 1
    docs_hit, found = score_lists(part.num_docs, scored, live, need, -1, 1.0, src.comparisons)
    if phrase and docs_hit.size:
        keep = _phrase_filter(docs_hit, pairs, plists, slop, None)
        docs_hit, found = docs_hit[keep], found[keep]
    return Hits.of(src.hit_ids(part, part.row_ids, part.doc_index, docs_hit), found)


# -- combining -------------------------------------------------------------------------------
def union_max(parts: list) -> Hits:
    parts = [p for p in parts if len(p)]
    if not parts:
        return Hits.empty()
    if len(parts) == 1:
        return parts[0]
    ids = np.concatenate([p.ids for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    order = np.lexsort((-scores.astype(np.float64), ids))
    ids, scores = ids[order], scores[order]
    first = np.ones(ids.size, dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    return Hits(ids[first], scores[first])


def member(a: np.ndarray, b: np.ndarray) -> tuple:
    """For ascending unique ``a`` and ``b``: (mask of ``a`` in ``b``, their places in ``b``)."""
    if not b.size or not a.size:
        return np.zeros(a.size, dtype=bool), np.zeros(a.size, dtype=np.int64)
    return sorted_member(np.ascontiguousarray(a, dtype=np.uint64), np.ascontiguousarray(b, dtype=np.uint64))


def _sum(a: Hits, b: Hits, keep_a_only: bool) -> Hits:
    """``a`` plus ``b``'s scores where both hold a row; rows of ``b`` alone are added unless
    ``keep_a_only``."""
    if keep_a_only:
        inside, pos = member(a.ids, b.ids)
        out = a.scores.copy()
        out[inside] += b.scores[pos[inside]]
        return Hits(a.ids, out)
    if not len(a):
        return b
    if not len(b):
        return a
    ids = np.union1d(a.ids, b.ids)
    out = np.zeros(ids.size, dtype=np.float32)
    out[np.searchsorted(ids, a.ids)] += a.scores
    out[np.searchsorted(ids, b.ids)] += b.scores
    return Hits(ids, out)


def evaluate(q, sources: Callable[[str], ColumnSearch], limit=None, within=None) -> Hits:
    """The rows ``q`` finds with their scores (``sources(column)`` gives a column's search);
    with ``limit``, at least the best ``limit`` rows (for a ranked search's root); with
    ``within`` (sorted row ids), only those rows."""
    if isinstance(q, MatchQuery):
        return match(sources(q.column), q, limit=limit, within=within)
    if isinstance(q, PhraseQuery):
        return match(sources(q.column), q, phrase=True, limit=limit, within=within)
    if isinstance(q, MultiMatchQuery):
        return union_max([evaluate(m, sources, limit, within) for m in q.match_queries])
    if isinstance(q, CombinedFieldsQuery):
        return combined_fields(q, sources, within)
    if isinstance(q, BestOf):
        return union_max([evaluate(m, sources, limit, within) for m in q.queries])
    if isinstance(q, BoostQuery):
        pos = evaluate(q.positive, sources, within=within)
        neg = evaluate(q.negative, sources, within=pos.ids)
        neg = Hits(neg.ids, (neg.scores * np.float32(q.negative_boost)).astype(np.float32))
        return _sum(pos, Hits(neg.ids, -neg.scores), keep_a_only=True)
    if isinstance(q, BooleanQuery):
        kinds = [o for o, _ in q.clauses]
        if Occur.MUST not in kinds and Occur.SHOULD not in kinds:
            raise InvalidArgumentError(
                "Invalid user input: boolean query must have at least one should/must query")
        musts = [c for o, c in q.clauses if o == Occur.MUST]
        if musts:
            res = evaluate(musts[0], sources, within=within)
            for m in musts[1:]:
                other = evaluate(m, sources, within=res.ids)
                inside, _ = member(res.ids, other.ids)
                res = _sum(Hits(res.ids[inside], res.scores[inside]), other, keep_a_only=True)
            for o, c in q.clauses:
                if o == Occur.SHOULD:
                    res = _sum(res, evaluate(c, sources, within=res.ids), keep_a_only=True)
        else:
            res = Hits.empty()
            for o, c in q.clauses:
                if o == Occur.SHOULD:
                    res = _sum(res, evaluate(c, sources, within=within), keep_a_only=False)
        for o, c in q.clauses:
            if o == Occur.MUST_NOT and len(res):
                gone = evaluate(c, sources, within=res.ids)
                keep = ~member(res.ids, gone.ids)[0]
                res = Hits(res.ids[keep], res.scores[keep])
        return res
    raise InvalidArgumentError(f"unknown full-text query {q!r}")


def _column_sources(src: ColumnSearch) -> list:
    """(row ids, token counts, postings of a token -> (docs, freqs)) of every partition of a
    column's index and of its flat rows."""
    out = []
    for seg in src.segments:
        for part in seg.partitions:
            rows, lens, _ = part.docs()

            def postings(t, seg=seg, part=part):
                got = [(d, f) for pp, d, f, _ in seg.postings(t) if pp is part]
                return got[0] if got else None
            out.append((rows, lens, postings))
    flat = src.flat_partition() if src.flat is not None else None
    if flat is not None and flat.num_docs:
        where = {t: i for i, t in enumerate(flat.tokens)}

        def flat_postings(t):
            k = where.get(t)
            if k is None:
                return None
            a, b = int(flat.entry_off[k]), int(flat.entry_off[k + 1])
            return flat.docs[a:b], flat.freqs[a:b]
        out.append((flat.row_ids, flat.num_tokens, flat_postings))
    return out


def combined_fields(q: CombinedFieldsQuery, sources: Callable, within=None) -> Hits:
    """BM25F (see :class:`CombinedFieldsQuery`): per term ``tf' = sum w_c tf_c``, per row
    ``dl' = sum w_c dl_c``; ``docCount'`` and ``docFreq'`` the columns' maxima, ``avgdl =
    sum w_c tokens_c / docCount'``."""
    srcs = [sources(c) for c in q.fields]
    terms = list(dict.fromkeys(t for t, _ in srcs[0].tokenizer.tokens(q.query)))
    if not terms:
        return Hits.empty()
    parts = [_column_sources(s) for s in srcs]
    doc_count, total, df = 0, 0.0, dict.fromkeys(terms, 0)
    for w, col in zip(q.boosts, parts):
        n = sum(int(rows.size) for rows, _, _ in col)
        tokens = sum(int(lens.sum(dtype=np.uint64)) for _, lens, _ in col)
        doc_count = max(doc_count, n)
        total += w * tokens
        for t in terms:
            df[t] = max(df[t], sum(int(p[0].size) for _, _, post in col if (p := post(t)) is not None))
    if not doc_count:
        return Hits.empty()
    avgdl = np.float32(total / doc_count)
    idf = dict(zip(terms, bm25_idf([df[t] for t in terms], doc_count)))
    # candidate rows: any term in any column
    found = []
    for col in parts:
        for rows, _, post in col:
            for t in terms:
                p = post(t)
                if p is not None:
                    found.append(rows[p[0]])
    if not found:
        return Hits.empty()
    cand = np.unique(np.concatenate(found).astype(np.uint64))
    if within is not None:
        cand = cand[member(cand, np.asarray(within, dtype=np.uint64))[0]]
    dl = np.zeros(cand.size, dtype=np.float32)
    tf = {t: np.zeros(cand.size, dtype=np.float32) for t in terms}
    for w, col in zip(q.boosts, parts):
        w = np.float32(w)
        for rows, lens, post in col:
            order = np.argsort(rows, kind="stable")
            srows = rows[order]
            pos = np.searchsorted(srows, cand)
            ok = pos < srows.size
            ok[ok] = srows[pos[ok]] == cand[ok]
            dl[ok] += w * lens[order][pos[ok]].astype(np.float32)
            for t in terms:
                p = post(t)
                if p is None:
                    continue
                trows = rows[p[0]]
                tord = np.argsort(trows, kind="stable")
                tpos = np.searchsorted(trows[tord], cand)
                hit = tpos < trows.size
                hit[hit] = trows[tord][tpos[hit]] == cand[hit]
                tf[t][hit] += w * p[1][tord][tpos[hit]].astype(np.float32)
    score = np.zeros(cand.size, dtype=np.float32)
    present = np.zeros(cand.size, dtype=np.int32)
    k1, b = np.float32(1.2), np.float32(0.75)
    for t in terms:
        f = tf[t]
        norm = k1 * ((np.float32(1) - b) + b * dl / avgdl)
        weight = np.where(f > 0, (k1 + np.float32(1)) * f / (f + norm), np.float32(0))
        score += np.float32(idf[t] if idf[t] > 0 else 0) * weight.astype(np.float32)
        present += (f > 0)
    need = len(terms) if q.operator == FullTextOperator.AND else 1
    keep = (present >= need) & srcs[0].keep(cand, key=None)
    srcs[0].comparisons[0] += int(keep.sum())
    return Hits.of(cand[keep], score[keep])


def values_of(arr) -> pa.Array:
    """A column's values as the flat search reads them."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if is_list(arr.type) or pa.types.is_large_binary(arr.type) or pa.types.is_binary(arr.type):
        return arr   # lists, and JSON documents (JSONB bytes)
    return string_values(arr)
