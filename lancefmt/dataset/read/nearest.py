"""A scan with ``nearest=``: the rows found, as pylance returns them.

:func:`nearest_table` finds each query's rows (:mod:`.vector_search` for the search itself),
applies a filter given without ``prefilter`` to them, then reads the projected columns of
those rows only (a take by row address) and adds ``_distance`` (and ``query_index`` for a
batch of queries) where pylance puts them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .ann_search import AnnSearch, column_index_metric, prefilter_addresses, vector_index_for
from .index_scan import index_selection, scan_maker
from .projection import Projection
from .row_lookup import take_addresses
from .take import direct_take_plan
from .scan import ROW_ADDRESS, ROW_ID, ScanSpec, default_threads, scan_pool
from .vector_query import QUERY_INDEX, VectorQuery
from .vector_search import DISTANCE, Candidates, flat_search, search_metric


# A batch of at least this many queries is searched on the scan pool's threads.
PARALLEL_QUERIES = 8


@dataclass
class NearestRequest:
    """Everything a nearest scan needs besides the snapshot."""
    vq: VectorQuery
    projection: Projection
    distance_at: int | None       # position of ``_distance`` among the projected columns
    with_row_id: bool
    with_row_address: bool
    filter_spec: ScanSpec | None  # the filter (its expression and the columns it reads)
    filter_text: str | None
    prefilter: bool
    fragments: list               # fragment protobufs to search
    use_scalar_index: bool = True
    fast_search: bool = False
    threads: int | None = None


def output_schema(req: NearestRequest, schema: pa.Schema) -> pa.Schema:
    """The schema of a nearest scan's result (stored types)."""
    fields = list(req.projection.schema) if req.projection.computed else \
        [schema.field(c) for c in req.projection.read_columns]
    dist = pa.field(DISTANCE, pa.float32())
    if req.distance_at is None:
        fields.append(dist)
    else:
        fields.insert(min(req.distance_at, len(fields)), dist)
    if req.vq.batch:
        fields.insert(0, pa.field(QUERY_INDEX, pa.int32(), nullable=False))
    if req.with_row_id:
        fields.append(pa.field(ROW_ID, pa.uint64()))
    if req.with_row_address:
        fields.append(pa.field(ROW_ADDRESS, pa.uint64()))
    return pa.schema(fields, metadata=schema.metadata)


def find(snapshot, req: NearestRequest) -> list:
    """Candidates per query set, ranked and cut to ``k``, the filter applied."""
    vq = req.vq
    ctx = snapshot.ctx
    prefilter_spec = req.filter_spec if (req.filter_spec is not None and req.prefilter and
                                         req.filter_spec.filter is not None) else None
    make_scan = None
    if prefilter_spec is not None and req.use_scalar_index and req.filter_text is not None:
        sel = index_selection(snapshot, req.filter_text)
        make_scan = None if sel is None else scan_maker(sel)
    prefilter_expr = None if prefilter_spec is None else prefilter_spec.filter
    named = vector_index_for(snapshot, vq, vq.metric)
    if named is None:
        metric = search_metric(vq, column_index_metric(snapshot, vq) if vq.multivector else None)
        found = flat_search(ctx, req.fragments, vq, metric, vq.k,
                            filter=prefilter_expr, make_scan=make_scan, threads=req.threads)
    else:
        allowed = None if prefilter_spec is None else \
            prefilter_addresses(snapshot, req.fragments, prefilter_spec, make_scan)
        ann = AnnSearch(snapshot, vq, named, req.fragments, allowed)
        rest = [] if req.fast_search else ann.unindexed
        exact = flat_search(ctx, rest, vq, ann.metric, vq.k, filter=prefilter_expr,
                            make_scan=make_scan, threads=req.threads) if rest else None
        def one(i, qset):
            cands = ann.search(qset, vq.k)
            if rest or vq.refine_factor:
                cands = ann.refine(cands, qset)
            if exact is not None:
                cands = Candidates.concat([cands, exact[i]])
            return cands.top(vq.k)

        sets = vq.query_sets()
        if len(sets) >= PARALLEL_QUERIES:  # a batch: queries on the scan pool (kernels drop the GIL)
            pool = scan_pool(req.threads or default_threads(ctx))
            found = list(pool.map(one, range(len(sets)), sets))
        else:
            found = [one(i, qset) for i, qset in enumerate(sets)]
    if req.filter_spec is not None and req.filter_spec.filter is not None and not req.prefilter:
        found = [postfilter(snapshot, c, req.filter_spec) for c in found]
    return found


def postfilter(snapshot, cands: Candidates, spec: ScanSpec) -> Candidates:
    """The candidates whose rows pass ``spec``'s filter (order kept)."""
    if not cands.ids.size:
        return cands
    cols = [c for c in spec.read_columns]
    t = take_addresses(snapshot, cands.addrs, cols, spec.need_row_id, spec.need_row_address)
    t = t.append_column("__pos", pa.array(np.arange(t.num_rows, dtype=np.int64)))
    keep = t.filter(spec.filter).column("__pos").to_numpy()
    return cands.take(np.sort(keep))


def nearest_table(snapshot, req: NearestRequest) -> pa.Table:
    """The result rows (see module docstring), stored types (JSON columns not yet decoded)."""
    found = find(snapshot, req)
    schema = output_schema(req, snapshot.schema)
    set_of = np.concatenate([np.full(c.ids.size, i, np.int32) for i, c in enumerate(found)]) \
        if found else np.empty(0, np.int32)
    allc = Candidates.concat(found)
    proj = req.projection
    read = list(proj.read_columns)
    plain = [c for c in read if c not in (ROW_ID, ROW_ADDRESS)]
    taken = take_by_address(snapshot, allc.addrs, plain)
    columns = {n: taken.column(n) for n in plain}
    columns[ROW_ID] = pa.array(allc.ids, pa.uint64())
    columns[ROW_ADDRESS] = pa.array(allc.addrs, pa.uint64())
    if proj.computed:
        batch = pa.RecordBatch.from_arrays([_array(columns[n]) for n in read], names=read)
        out = proj.apply(batch)
        for n, col in zip(out.schema.names, out.columns):
            columns[n] = col
    columns[DISTANCE] = pa.array(allc.dists, pa.float32())
    columns[QUERY_INDEX] = pa.array(set_of, pa.int32())
    arrays = [columns[f.name] for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _array(col):
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def plan_lines(snapshot, req: NearestRequest, indent: int = 2) -> list:
    """pylance's plan nodes for the search (its node names: KNNVectorDistance, ANNSubIndex,
    ANNIvfPartition, ScalarIndexQuery for a prefilter an index answers)."""
    vq = req.vq
    pad = lambda n: " " * (indent + 2 * n)  # noqa: E731
    lines = []
    depth = 0
    filt = req.filter_spec.filter if req.filter_spec is not None else None
    if filt is not None and not req.prefilter:
        lines.append(f"{pad(depth)}FilterExec: {req.filter_text or filt}")
        depth += 1
    lines.append(f"{pad(depth)}SortExec: TopK(fetch={vq.k}), expr=[_distance ASC NULLS LAST, "
                 f"_rowid ASC NULLS LAST]")
    depth += 1
    named = vector_index_for(snapshot, vq, vq.metric)
    prefilter = filt is not None and req.prefilter
    if named is None:
        lines.append(f"{pad(depth)}KNNVectorDistance: metric={search_metric(vq)}")
        lines.append(f"{pad(depth + 1)}LanceRead: uri={snapshot.uri}, projection=[{vq.column}], "
                     f"num_fragments={len(req.fragments)}, row_id=true, "
                     f"full_filter={(req.filter_text or filt) if prefilter else '--'}")
        return lines
    metric = named.itype.metric_of(named.segments[0].meta.index_details)
    covered = set()
    for s in named.segments:
        covered |= set(s.fragments)
    unindexed = [pb for pb in req.fragments if int(pb.id) not in covered]
    if (unindexed and not req.fast_search) or vq.refine_factor:
        lines.append(f"{pad(depth)}KNNVectorDistance: metric={metric}")
        depth += 1
    if unindexed and not req.fast_search:
        lines.append(f"{pad(depth)}UnionExec")
        depth += 1
        lines.append(f"{pad(depth)}KNNVectorDistance: metric={metric}")
        lines.append(f"{pad(depth + 1)}LanceScan: uri={snapshot.uri}, projection=[{vq.column}], "
                     f"num_fragments={len(unindexed)}, row_id=true")
    kk = vq.k * (vq.refine_factor or 1)
    deltas = len(named.segments)
    lines.append(f"{pad(depth)}ANNSubIndex: name={named.name}, k={kk}, deltas={deltas}, "
                 f"metric={metric.upper() if metric == 'l2' else metric.capitalize()}")
    hi = "None" if vq.maximum_nprobes is None else f"Some({vq.maximum_nprobes})"
    lines.append(f"{pad(depth + 1)}ANNIvfPartition: uuid={named.segments[0].uuid}, "
                 f"minimum_nprobes={vq.minimum_nprobes}, maximum_nprobes={hi}, deltas={deltas}")
    if prefilter:
        sel = index_selection(snapshot, req.filter_text) if req.use_scalar_index and req.filter_text else None
        if sel is not None:
            lines.append(f"{pad(depth + 1)}ScalarIndexQuery: query={sel.text()}")
        else:
            lines.append(f"{pad(depth + 1)}LanceRead: uri={snapshot.uri}, full_filter={req.filter_text or filt}")
    return lines


def take_by_address(snapshot, addrs: np.ndarray, columns: list) -> pa.Table:
    """Rows at ``addrs`` (in order): fixed-width columns of local datasets straight from the
    mapped files (the direct take), anything else through the fragments' readers."""
    plan = direct_take_plan(snapshot, columns) if columns and addrs.size else None
    if plan is not None:
        frags = (addrs >> np.uint64(32)).astype(np.int64)
        firsts = np.array([plan.fragment_first.get(int(f), -1) for f in np.unique(frags)], np.int64)
        uniq = np.unique(frags)
        first = firsts[np.searchsorted(uniq, frags)]
        if (first >= 0).all():
            return plan.take_physical(first + (addrs & np.uint64(0xFFFFFFFF)).astype(np.int64))
    return take_addresses(snapshot, addrs, columns)
