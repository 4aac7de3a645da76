"""Nearest-neighbour search through a vector index, merged with exact search of the rest.

A segment's stored rows are checked once per version (:func:`live_mask`): a row is a
candidate while its fragment still exists, is one the segment covers and the search asked
for, and the row is not deleted (with stable row ids: while its id still maps to a row of
such a fragment; a row an update moved is found in its new, unindexed fragment instead). A
prefilter narrows that mask to the rows the filter keeps. Every segment answers ``k`` (times
``refine_factor``) rows; fragments no segment covers are searched exactly. As in pylance, the
index's approximate distances are replaced by exact ones when unindexed fragments were
searched too or ``refine_factor`` is set, then everything is ranked by (distance, row id).
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from ...index.core.catalog import NamedIndex
from ...index.vector.distance import column_distances
from ...index.vector.vector_type import is_vector
from ...table.rowids import MISSING_ADDRESS
from ..core.indices import index_catalog
from .row_lookup import row_id_index, take_addresses
from .scan import ScanSpec, load_deletions, scan_batches
from .vector_search import Candidates, in_range, vector_values

_LOW32 = np.uint64(0xFFFFFFFF)


def xtr_overfetch() -> int:
    """Candidates per query vector of a multivector search, in ``k``s (Lance's
    ``LANCE_XTR_OVERFETCH``, 10 by default)."""
    return int(os.environ.get("LANCE_XTR_OVERFETCH", "10"))


def vector_index_for(snapshot, vq, metric: str | None):
    """The vector index on the query's column a search may use (None: search exactly): the
    first by name whose metric is the query's (pylance searches exactly otherwise)."""
    if not vq.use_index:
        return None
    for named in sorted(index_catalog(snapshot).get(vq.column, ()), key=lambda n: n.name):
        if not is_vector(named.itype) or not named.segments or \
                not all(named.itype.supports(s.meta.index_details) for s in named.segments):
            continue  # an index kind lancefmt cannot read (IVF_RQ): searched exactly
        imetric = named.itype.metric_of(named.segments[0].meta.index_details)
        if metric is None or metric == imetric:
            return named
    return None


def column_index_metric(snapshot, vq) -> str | None:
    """The metric of the first vector index on the query's column (what an exact search of a
    multivector column uses by default, as pylance does)."""
    for named in sorted(index_catalog(snapshot).get(vq.column, ()), key=lambda n: n.name):
        if is_vector(named.itype) and named.segments:
            return index_metric(named)
    return None


def index_metric(named: NamedIndex) -> str:
    return named.itype.metric_of(named.segments[0].meta.index_details)


def addresses_of(snapshot, ids: np.ndarray) -> np.ndarray:
    """Row addresses of recorded row ids (MISSING_ADDRESS for rows gone)."""
    if not snapshot.has_stable_row_ids or not ids.size:
        return np.asarray(ids, np.uint64)
    return row_id_index(snapshot).lookup(np.asarray(ids, np.uint64))


def live_mask(snapshot, segment, loaded, wanted: frozenset | None):
    """(uint8 mask over the segment's stored rows or None when every row is a candidate,
    candidate addresses) for this version (see module docstring); cached per version."""
    key = ("vector live mask", segment.uuid, wanted)

    def make():
        addrs = addresses_of(snapshot, loaded.row_ids)
        frags = (addrs >> np.uint64(32)).astype(np.int64)
        live = {int(pb.id): pb for pb in snapshot.fragment_pbs()}
        ok_frags = [f for f in segment.fragments if f in live and (wanted is None or f in wanted)]
        alive = (addrs != MISSING_ADDRESS) & np.isin(frags, np.asarray(ok_frags, np.int64))
        offsets = (addrs & _LOW32).astype(np.int64)
        for f in ok_frags:  # an address past its fragment's rows is no row (a corrupt index)
            in_f = frags == f
            alive[in_f & (offsets >= int(live[f].physical_rows))] = False
        if not snapshot.has_stable_row_ids:  # stable ids of deleted rows map to nothing
            for f in ok_frags:
                dv = load_deletions(snapshot.ctx, live[f])
                if dv is None or not len(dv):
                    continue
                in_f = np.flatnonzero(frags == f)
                gone = np.isin((addrs[in_f] & _LOW32).astype(np.int64), dv.offsets.astype(np.int64))
                alive[in_f[gone]] = False
        mask = None if alive.all() else alive.astype(np.uint8)
        return mask, addrs

    return snapshot.memo(key, make)


def prefilter_addresses(snapshot, fragments, spec: ScanSpec, make_scan=None) -> np.ndarray:
    """Sorted addresses of the rows of ``fragments`` that pass ``spec``'s filter."""
    fspec = ScanSpec.build(snapshot.schema, [], spec.filter, False, True)
    parts = [b.column("_rowaddr").to_numpy() for b in
             scan_batches(snapshot.ctx, fragments, fspec, make_scan=make_scan)]
    return np.sort(np.concatenate(parts)) if parts else np.empty(0, np.uint64)


def exact_distances(snapshot, vq, metric: str, qset: list, addrs: np.ndarray) -> np.ndarray:
    """Exact distances of the rows at ``addrs`` to ``qset``."""
    if not addrs.size:
        return np.empty(0, np.float32)
    path = vq.column.split(".")
    t = take_addresses(snapshot, addrs, [path[0]])
    return column_distances(qset, vector_values(t, path), metric, vq.value_type)


class AnnSearch:
    """One indexed search plan (the index, its metric, masks) reused for every query set."""

    def __init__(self, snapshot, vq, named: NamedIndex, fragments, allowed: np.ndarray | None):
        self.snapshot = snapshot
        self.vq = vq
        self.named = named
        self.metric = index_metric(named)
        wanted = frozenset(int(pb.id) for pb in fragments)
        self.segments = []
        covered = set()
        for seg in named.segments:
            if not (set(seg.fragments) & wanted):
                continue
            loaded = seg.load()
            mask, addrs = live_mask(snapshot, seg, loaded, wanted)
            if allowed is not None:
                keep = np.isin(addrs, allowed)
                mask = keep.astype(np.uint8) if mask is None else (mask & keep.astype(np.uint8))
            total = None if allowed is None else int(mask.sum()) if mask is not None else loaded.num_rows
            self.segments.append((seg, loaded, mask, total))
            covered |= set(seg.fragments)
        self.unindexed = [pb for pb in fragments if int(pb.id) not in covered]

    def search(self, qset: list, k: int) -> Candidates:
        """The index's ranked candidates for one query set (``k`` times the refine factor
        from every segment)."""
        if self.vq.multivector:
            return self.search_multivector(qset, k)
        kk = k * (self.vq.refine_factor or 1)
        return self.search_one(qset[0], kk)

    def search_one(self, query, kk: int) -> Candidates:
        vq = self.vq
        parts = []
        for seg, loaded, mask, total in self.segments:
            hits = loaded.search_vectors(query, kk, minimum_nprobes=vq.minimum_nprobes,
                                         maximum_nprobes=vq.maximum_nprobes, mask=mask,
                                         distance_range=vq.distance_range, allowed_total=total,
                                         ef=vq.ef)
            addrs = addresses_of(self.snapshot, hits.ids)
            parts.append(Candidates(hits.ids, addrs, hits.dists))
        return Candidates.concat(parts).top(kk)

    def search_multivector(self, qset: list, k: int) -> Candidates:
        """Lance's multivector search (XTR): each query vector finds ``k * overfetch`` indexed
        vectors; a row scores the sum over the query vectors of its best similarity
        (``1 - distance``), or, for a query vector that did not find it, of the worst
        similarity that one found; the distance is the number of query vectors minus that."""
        over = xtr_overfetch()
        sims: dict = {}
        addr_of: dict = {}
        missed = np.float32(0)
        one = np.float32(1)
        for query in qset:
            cands = self.search_one(query, k * over)
            worst = one - np.float32(cands.dists[-1]) if cands.ids.size else np.float32(0)
            found = {}
            for rid, addr, d in zip(cands.ids.tolist(), cands.addrs.tolist(), cands.dists.tolist()):
                if rid not in found:            # ranked: a row's first hit is its best
                    found[rid] = one - np.float32(d)
                    addr_of[rid] = addr
            for rid in sims:
                sims[rid] = np.float32(sims[rid] + found.pop(rid, worst))
            for rid, sim in found.items():
                sims[rid] = np.float32(sim + missed)
            missed = np.float32(missed + worst)
        if not sims:
            return Candidates.empty()
        ids = np.fromiter(sims.keys(), np.uint64, len(sims))
        dists = np.float32(len(qset)) - np.fromiter(sims.values(), np.float32, len(sims))
        addrs = np.fromiter((addr_of[i] for i in sims), np.uint64, len(sims))
        return Candidates(ids, addrs, dists.astype(np.float32)).top(k * (self.vq.refine_factor or 1))

    def refine(self, cands: Candidates, qset: list) -> Candidates:
        """The same rows with exact distances (``distance_range`` applied again)."""
        d = exact_distances(self.snapshot, self.vq, self.metric, qset, cands.addrs)
        return Candidates(cands.ids, cands.addrs, in_range(d, self.vq.distance_range))
