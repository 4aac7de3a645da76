"""Full-text search in a scan (``full_text_query=``): pylance's query forms, BM25 ranking over
indexed and unindexed rows, filters before or after ranking, and the rows' columns.

A query is a string (searched in every column with an INVERTED index, each row keeping its
best column), a dict ``{"query": ..., "columns": [...]}`` or a query object
(:mod:`lancefmt.query`). Per column the version's INVERTED segments answer the fragments they
cover; the scanned fragments they do not cover are read and scored on the fly (as pylance's
flat search). Deleted rows never come back: every candidate is checked against the version's
deletion vectors (or row-id index) before ranking. With ``prefilter=True`` the filter narrows
the candidates before ranking; otherwise it drops rows from the ranked (and limited) result,
as in pylance. The result has the projected columns, ``_score`` (float32, best first) and the
requested ``_rowid`` / ``_rowaddr``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidArgumentError
from ...index.fts.inverted import INVERTED
from ...index.fts.json_tokenizer import is_json_field
from ...index.fts.query import (DocumentGranularity, FullTextQuery, MatchQuery,
                                MultiMatchQuery, PhraseQuery)
from ...index.fts.search import (BestOf, ColumnSearch, ElementDocs, FlatRows, Hits, evaluate,
                                 values_of)
from ...table.rowids import MISSING_ADDRESS
from ..core.indices import index_catalog
from .index_training import column_field
from .direct_take import direct_plan
from .index_scan import index_selection, scan_maker
from .row_lookup import row_id_index, take_row_ids
from .row_offsets import RowOffsets
from .scan import ROW_ADDRESS, ROW_ID, ScanSpec, live_counts, load_deletions, scan_batches
from .take import take_from_fragments

SCORE = "_score"
DOC_INDEX = "_doc_index"


class FtsFieldError(InvalidArgumentError):
    """pylance raises a ValueError for a query on a column the schema lacks."""


def inverted_columns(snapshot) -> list:
    """Columns with a row-document INVERTED index (what a query string searches)."""
    cat = index_catalog(snapshot)
    return [c for c in cat if any(n.itype is INVERTED and not _element(n) for n in cat[c])]


def _element(named) -> bool:
    segs = [s for s in named.segments if len(s.fragments)]
    return bool(segs) and segs[0].load().element_docs


def resolve_query(snapshot, query) -> FullTextQuery:
    """A query object for any of pylance's ``full_text_query`` forms."""
    if isinstance(query, FullTextQuery):
        return query
    columns = None
    if isinstance(query, dict):
        columns = query.get("columns")
        query = query.get("query")
    if not isinstance(query, str):
        raise InvalidArgumentError(f"full_text_query must be a string, a dict or a query object, "
                                   f"not {type(query).__name__}")
    phrase = len(query) >= 2 and query.startswith('"') and query.endswith('"')
    if columns is None:
        columns = inverted_columns(snapshot)
        if not columns:
            raise InvalidArgumentError("Cannot perform full text search unless an INVERTED index "
                                       "has been created on at least one column")
    columns = [columns] if isinstance(columns, str) else list(columns)
    if phrase:  # a quoted string is a phrase, as in pylance
        queries = [PhraseQuery(query[1:-1], c) for c in columns]
        return queries[0] if len(queries) == 1 else BestOf(queries)
    if len(columns) == 1:
        return MatchQuery(query, columns[0])
    return MultiMatchQuery(query, columns)


class LiveRows:
    """Which row ids (addresses without stable row ids) are live rows of the scanned
    fragments, optionally also passing a prefilter."""

    def __init__(self, snapshot, fragments, prefilter_ids=None):
        self.snapshot = snapshot
        self.frag_ids = {int(f.id) for f in fragments}
        self.prefilter = prefilter_ids
        self._cache: dict = {}

    def __call__(self, ids: np.ndarray, key=None) -> np.ndarray:
        """The mask of ``ids`` (``key``: the same array is asked again; its live part is kept
        for this version)."""
        if key is not None:
            live = self._cache.get(key)
            if live is None:
                live = self._cache[key] = self._live(ids)
        else:
            live = self._live(ids)
        if self.prefilter is not None:
            live = live & np.isin(np.asarray(ids, dtype=np.uint64), self.prefilter)
        return live

    def _live(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.uint64)
        if not ids.size:
            return np.zeros(0, dtype=bool)
        snap = self.snapshot
        if snap.has_stable_row_ids:
            addrs = row_id_index(snap).lookup(ids)
            keep = addrs != MISSING_ADDRESS
        else:
            addrs = ids
            keep = np.ones(ids.size, dtype=bool)
        frags = (addrs >> np.uint64(32)).astype(np.int64)
        offs = (addrs & np.uint64(0xFFFFFFFF)).astype(np.int64)
        for fid in np.unique(frags[keep]).tolist():
            sel = keep & (frags == fid)
            pb = snap.fragment_pb(int(fid))
            if pb is None or fid not in self.frag_ids:
                keep[sel] = False
                continue
            keep[sel] &= offs[sel] < int(pb.physical_rows)
            dv = load_deletions(snap.ctx, pb)
            if dv:
                keep[sel] &= ~np.isin(offs[sel], dv.offsets)
        return keep


def live_rows(snapshot, fragments) -> LiveRows:
    """The version's :class:`LiveRows` of ``fragments`` (kept with the version, so a
    partition's live documents are worked out once)."""
    key = ("fts live rows", tuple(sorted(int(f.id) for f in fragments)))
    return snapshot.memo(key, lambda: LiveRows(snapshot, fragments))


def _choose_index(named: list, granularity):
    """The INVERTED index a query on the column uses (by document granularity)."""
    inv = [n for n in named if n.itype is INVERTED]
    if not inv:
        return None
    want = getattr(granularity, "value", granularity)

    element = _element
    if want is None:
        rows = [n for n in inv if not element(n)]
        return rows[0] if rows else inv[0]
    match = [n for n in inv if element(n) == (want == DocumentGranularity.LIST_ELEMENT.value)]
    return match[0] if match else None


def column_search(snapshot, column: str, fragments, allowed: LiveRows, granularity=None,
                  prefilter_text=None, elements=None, fast_search=False) -> ColumnSearch:
    try:
        field, path = column_field(snapshot.schema, column)
    except KeyError:
        raise FtsFieldError(f"FTS field path '{column}' does not exist in the dataset schema") from None
    name = ".".join(path)
    value = field.type.value_type if pa.types.is_list(field.type) or pa.types.is_large_list(field.type) \
        else field.type
    if not (pa.types.is_string(value) or pa.types.is_large_string(value) or is_json_field(field)
            or getattr(pa.types, "is_string_view", lambda t: False)(value)):
        raise FtsFieldError(f"Invalid user input: FTS field '{name}' must resolve to Utf8, "
                            f"LargeUtf8, Utf8View, or JSON, got {value}")
    named = _choose_index(index_catalog(snapshot).get(name, []), granularity)
    segments, covered = [], set()
    if named is not None:
        for seg in named.segments:
            if len(seg.fragments):
                segments.append(seg.load())
                covered |= set(seg.fragments)
    flat_frags = [] if fast_search and segments else \
        [f for f in fragments if int(f.id) not in covered]

    def read_flat():
        if not flat_frags:
            return np.empty(0, np.uint64), None
        spec = ScanSpec.build(snapshot.schema, [path[0]], prefilter_text, True, False)
        ids, vals = [], []
        for b in scan_batches(snapshot.ctx, flat_frags, spec):
            v = b.column(0)
            for part in path[1:]:
                v = pc.struct_field(v, [v.type.get_field_index(part)])
            ids.append(b.column(ROW_ID).to_numpy())
            vals.append(v)
        if not ids:
            return np.empty(0, np.uint64), None
        return np.concatenate(ids).astype(np.uint64), values_of(pa.chunked_array(vals, type=field.type))

    return ColumnSearch(name, segments, FlatRows(read_flat) if flat_frags else None, allowed,
                        elements)


class _WithPrefilter:
    def __init__(self, live: LiveRows, ids: np.ndarray):
        self.live = live
        self.ids = ids

    def __call__(self, ids, key=None):
        return self.live(ids, key) & np.isin(np.asarray(ids, dtype=np.uint64), self.ids)


def prefilter_ids(snapshot, fragments, filter_text) -> np.ndarray:
    """Row ids of ``fragments`` passing the filter (answered by scalar indices where they can)."""
    spec = ScanSpec.build(snapshot.schema, [], filter_text, True, False)
    sel = index_selection(snapshot, filter_text)
    if sel is not None:
        fragments = [f for f in fragments if not sel.empty_for(int(f.id))]
    parts = [b.column(ROW_ID).to_numpy() for b in scan_batches(
        snapshot.ctx, fragments, spec, make_scan=scan_maker(sel) if sel is not None else None)]
    return np.sort(np.concatenate(parts).astype(np.uint64)) if parts else np.empty(0, np.uint64)


class FtsPlan:
    """One scanner's full-text search (see module docstring)."""

    def __init__(self, snapshot, query, fragments, *, columns=None, filter=None, prefilter=False,
                 limit=None, offset=None, with_row_id=False, with_row_address=False,
                 fast_search=False, score=True):
        self.snapshot = snapshot
        self.query = resolve_query(snapshot, query)
        self.fragments = list(fragments)
        self.columns = columns
        self.filter = filter
        self.prefilter = bool(prefilter)
        self.limit = limit
        self.offset = offset
        self.with_row_id = bool(with_row_id)
        self.with_row_address = bool(with_row_address)
        self.fast_search = bool(fast_search)   # indexed fragments only
        self.score = bool(score)               # a _score column (disable_scoring_autoprojection)
        self._hits = None
        self.comparisons = self.matched = 0   # of the search once run (analyze_plan)

    def hits(self) -> Hits:
        """The ranked rows (after limit and offset; a postfilter applied)."""
        if self._hits is None:
            pre = None
            if self.filter is not None and self.prefilter:
                pre = prefilter_ids(self.snapshot, self.fragments, self.filter)
            allowed = live_rows(self.snapshot, self.fragments)
            if pre is not None:
                allowed = _WithPrefilter(allowed, pre)
            searches: dict = {}
            self._elements = ElementDocs()

            def source(column):
                key = column
                if key not in searches:
                    searches[key] = column_search(self.snapshot, column, self.fragments, allowed,
                                                  _granularity_of(self.query, column),
                                                  self.filter if self.prefilter else None,
                                                  self._elements, self.fast_search)
                return searches[key]

            need = None if self.limit is None else int(self.limit) + int(self.offset or 0)
            hits = evaluate(self.query, source, need).top(self.limit, self.offset)
            self.comparisons = sum(int(s.comparisons[0]) for s in searches.values())
            self.matched = len(hits)
            if self.filter is not None and not self.prefilter and len(hits):
                ok = prefilter_ids(self.snapshot, self.fragments, self.filter)
                keep = np.isin(self._elements.resolve(hits.ids)[0], ok)
                hits = Hits(hits.ids[keep], hits.scores[keep])
            self._hits = hits
        return self._hits

    def rows(self) -> tuple:
        """(row ids, element index or -1) of the ranked hits."""
        return self._elements.resolve(self.hits().ids)

    def element_results(self) -> bool:
        """Whether the results name list elements (a ``_doc_index`` column)."""
        if getattr(self, "_has_elements", None) is None:
            self._has_elements = False
            for c in set(self.query.columns()):
                try:
                    named = _choose_index(index_catalog(self.snapshot).get(c, []),
                                          _granularity_of(self.query, c))
                except Exception:  # noqa: BLE001 -- errors surface when the search runs
                    named = None
                if named is not None and _element(named):
                    self._has_elements = True
        return self._has_elements

    def schema(self, projected: pa.Schema) -> pa.Schema:
        fields = list(projected)
        if self.element_results():
            fields.append(pa.field(DOC_INDEX, pa.list_(pa.field("item", pa.uint32(), nullable=False)),
                                   nullable=False))
        if self.score:
            fields.append(pa.field(SCORE, pa.float32()))
        if self.with_row_id:
            fields.append(pa.field(ROW_ID, pa.uint64()))
        if self.with_row_address:
            fields.append(pa.field(ROW_ADDRESS, pa.uint64()))
        return pa.schema(fields, metadata=projected.metadata)

    def table(self, projected: pa.Schema, columns: list) -> pa.Table:
        """The found rows' ``columns`` (stored names), ``_score`` and metadata columns."""
        hits = self.hits()
        ids, elems = self.rows()
        rows = _direct_rows(self.snapshot, ids, columns) if not self.with_row_address else None
        if rows is None:
            rows = take_row_ids(self.snapshot, ids, columns, self.with_row_id,
                                self.with_row_address)
        out = {c: rows.column(c) for c in columns}
        out[SCORE] = pa.array(hits.scores, pa.float32())
        if self.element_results():
            offsets = np.arange(elems.size + 1, dtype=np.int32)
            out[DOC_INDEX] = pa.ListArray.from_arrays(pa.array(offsets), pa.array(
                np.maximum(elems, 0).astype(np.uint32)), type=pa.list_(pa.field("item", pa.uint32(), nullable=False)))
        if self.with_row_id:
            out[ROW_ID] = pa.array(ids, pa.uint64())
        if self.with_row_address:
            out[ROW_ADDRESS] = rows.column(ROW_ADDRESS)
        schema = self.schema(projected)
        return pa.Table.from_arrays([out[f.name] if f.name in out else pa.nulls(len(hits), f.type)
                                     for f in schema], schema=schema)

    def explain(self, metrics: dict | None = None) -> list:
        """The search's plan lines, pylance's node names: a postfilter above the query, a
        prefilter (its index query, or the filtered read) under it; ``metrics`` (from
        analyze_plan) go on the query's line."""
        q = self.query
        name = type(q).__name__
        cols = ",".join(q.columns())
        text = getattr(q, "query", "")
        line = f"{name}: column={cols}, query=[{text}]"
        if metrics is not None:
            line += ", metrics=[" + ", ".join(f"{k}={v}" for k, v in metrics.items()) + "]"
        if self.filter is None:
            return [line]
        if not self.prefilter:
            return [f"FilterExec: {self.filter}", "  " + line]
        sel = index_selection(self.snapshot, self.filter)
        under = f"ScalarIndexQuery: query={sel.text()}" if sel is not None else \
            f"LanceRead: uri={self.snapshot.uri}, projection=[], full_filter={self.filter}"
        return [line, "  " + under]

    def metrics(self) -> dict:
        """Run the search; what analyze_plan reports of it (``index_comparisons``: documents
        scored, after the prefilter and any pruning)."""
        self.hits()
        return {"output_rows": self.matched, "index_comparisons": self.comparisons}


def _direct_rows(snapshot, ids: np.ndarray, columns: list):
    """The rows' ``columns`` through the direct take (fixed-width columns of local files:
    one gather over mapped files instead of a read per fragment), or None."""
    if not columns or not ids.size:
        return None
    pbs = snapshot.fragment_pbs()
    if direct_plan(snapshot.ctx, pbs, tuple(columns)) is None:
        return None
    addrs = row_id_index(snapshot).lookup(ids) if snapshot.has_stable_row_ids else ids
    if (np.asarray(addrs) == MISSING_ADDRESS).any():
        return None
    offsets, counts = snapshot.memo("fts row offsets", lambda: (RowOffsets(snapshot.ctx, pbs),
                                                                  live_counts(snapshot.ctx, pbs)))
    return take_from_fragments(snapshot.ctx, pbs, counts, offsets.of(addrs), columns)


def _granularity_of(query, column):
    g = getattr(query, "document_granularity", None)
    return g
