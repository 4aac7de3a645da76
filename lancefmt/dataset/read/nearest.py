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

from .projection import Projection
from .row_lookup import take_addresses
from .scan import ROW_ADDRESS, ROW_ID, ScanSpec
from .vector_query import QUERY_INDEX, VectorQuery
from .vector_search import DISTANCE, Candidates, flat_search, search_metric


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
    prefilter_expr = req.filter_spec.filter if (req.filter_spec is not None and req.prefilter) else None
    make_scan = None
    if prefilter_expr is not None and req.use_scalar_index and req.filter_text is not None:
        from .index_scan import index_selection, scan_maker
        sel = index_selection(snapshot, req.filter_text)
        make_scan = None if sel is None else scan_maker(sel)
    metric = search_metric(vq)
    found = flat_search(ctx, req.fragments, vq, metric, vq.k, filter=prefilter_expr,
                        make_scan=make_scan, threads=req.threads)
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
    taken = take_addresses(snapshot, allc.addrs, plain)
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
