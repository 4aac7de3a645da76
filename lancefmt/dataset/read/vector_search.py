"""Nearest-neighbour search over a dataset version (``nearest=`` in a scan).

Each query (or each of a batch) is answered as pylance answers it:

* **exact** (no usable index, ``use_index=False``, or the fragments no index covers): the
  vector column is scanned on the scan thread pool; every window's distances come from the
  Cython kernels and only its ``k`` nearest (ties kept) leave the thread, so the merge sees a
  few rows per window, never the column;
* **index**: each segment of the column's vector index returns its candidates (deleted rows,
  and with ``prefilter=True`` rows the filter refuses, are masked before its top ``k``). When
  fragments are unindexed, or with ``refine_factor``, the candidates get exact distances;
* results are ranked by (distance, row id), the first ``k`` kept; ``distance_range`` keeps
  ``lower <= d < upper`` before ranking; a filter without ``prefilter`` is applied afterwards
  (fewer than ``k`` rows may remain, as in pylance).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...index.vector.distance import column_distances, default_metric, ranked, smallest
from .scan import ROW_ADDRESS, ROW_ID, FragmentScan, ScanSpec, scan_batches
from .vector_query import VectorQuery

DISTANCE = "_distance"
_SET = "__query_set"


@dataclass
class Candidates:
    """Rows found for one query: row ids (what ``_rowid`` shows), addresses, distances, in
    result order."""
    ids: np.ndarray
    addrs: np.ndarray
    dists: np.ndarray

    @classmethod
    def empty(cls) -> "Candidates":
        return cls(np.empty(0, np.uint64), np.empty(0, np.uint64), np.empty(0, np.float32))

    def take(self, positions) -> "Candidates":
        return Candidates(self.ids[positions], self.addrs[positions], self.dists[positions])

    def top(self, k: int) -> "Candidates":
        return self.take(ranked(self.dists, self.ids, k))

    @classmethod
    def concat(cls, parts) -> "Candidates":
        parts = [p for p in parts if p.ids.size]
        if not parts:
            return cls.empty()
        return cls(np.concatenate([p.ids for p in parts]), np.concatenate([p.addrs for p in parts]),
                   np.concatenate([p.dists for p in parts]))


def in_range(dists: np.ndarray, bounds) -> np.ndarray:
    """``dists`` with those outside ``[lower, upper)`` set to NaN (dropped by ranking)."""
    if bounds is None:
        return dists
    lo, hi = bounds
    out = dists.copy()
    if lo is not None:
        out[out < lo] = np.nan
    if hi is not None:
        out[out >= hi] = np.nan
    return out


def vector_values(table: pa.Table, path: list):
    """The vector column (``path`` into structs) of a scanned table."""
    col = table.column(path[0])
    for name in path[1:]:
        col = pc.struct_field(col, [col.type.get_field_index(name)])
    return col


class KnnScan:
    """Wraps a fragment scan so each window yields only its nearest rows per query set (see
    module docstring): a table of (query set, _rowid, _rowaddr, _distance)."""

    def __init__(self, inner: FragmentScan, vq: VectorQuery, metric: str, k: int, path: list):
        self.inner = inner
        self.spec = inner.spec
        self.vq = vq
        self.metric = metric
        self.k = k
        self.path = path

    def windows(self, start: int = 0, stop: int | None = None):
        for table in self.inner.windows(start, stop):
            if not table.num_rows:
                continue
            values = vector_values(table, self.path)
            ids = table.column(ROW_ID).to_numpy()
            addrs = table.column(ROW_ADDRESS).to_numpy()
            parts = []
            for i, qset in enumerate(self.vq.query_sets()):
                d = in_range(column_distances(qset, values, self.metric, self.vq.value_type),
                             self.vq.distance_range)
                keep = smallest(d, self.k)
                parts.append(pa.table({_SET: pa.array(np.full(keep.size, i, np.int32)),
                                       ROW_ID: ids[keep], ROW_ADDRESS: addrs[keep],
                                       DISTANCE: pa.array(d[keep], pa.float32())}))
            yield pa.concat_tables(parts)


def split_sets(batches, nsets: int) -> list:
    """Per query set, the Candidates in ``batches`` (KnnScan output)."""
    table = pa.Table.from_batches(list(batches)) if batches else None
    out = []
    for i in range(nsets):
        if table is None or not table.num_rows:
            out.append(Candidates.empty())
            continue
        sel = table.filter(pc.equal(table[_SET], i))
        out.append(Candidates(sel[ROW_ID].to_numpy(), sel[ROW_ADDRESS].to_numpy(),
                              sel[DISTANCE].to_numpy()))
    return out


def flat_search(ctx, fragments, vq: VectorQuery, metric: str, k: int, *, filter=None,
                make_scan=None, threads=None) -> list:
    """Exact nearest rows of ``fragments`` for every query set (``filter``: a pyarrow
    expression applied before the search, i.e. a prefilter; ``make_scan``: the scan maker of a
    scalar-index answer to it)."""
    nsets = len(vq.query_sets())
    if not fragments:
        return [Candidates.empty() for _ in range(nsets)]
    path = vq.column.split(".")
    spec = ScanSpec.build(ctx.schema, [path[0]], None, True, True)
    if filter is not None:
        spec = ScanSpec.build(ctx.schema, [path[0]], filter, True, True)
    base = make_scan or FragmentScan

    def make(c, frag, s):
        return KnnScan(base(c, frag, s), vq, metric, k, path)

    batches = list(scan_batches(ctx, fragments, spec, threads=threads, make_scan=make))
    return [c.top(k) for c in split_sets(batches, nsets)]


def search_metric(vq: VectorQuery, index_metric: str | None = None) -> str:
    """The distance type a search uses: the query's, else the index's, else the default."""
    if vq.metric is not None:
        return vq.metric
    return index_metric or default_metric(vq.value_type)
