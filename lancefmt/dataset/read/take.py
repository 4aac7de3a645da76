"""Random access: rows by offset among a fragment's (or a dataset's) live rows, and by row address.

Offsets count live rows only, as pylance's ``take`` does: they are mapped to physical offsets
through the deletion vector (a binary search over the deleted offsets, never a pass over the
fragment), then each data file reads just the bytes of those rows (``LanceFileReader.take``:
fixed-width 2.0 pages by row, 2.1/2.2 mini-block chunks or full-zip rows).

A dataset take groups the indices by fragment with one sort (no Python work per row), reads
the fragments on the scan thread pool (the decoders release the GIL), and puts the rows back
in the order asked; unsorted and repeated indices are allowed, as in pylance.

Fixed-width columns of local datasets skip all of that: :mod:`.direct_take` gathers them
straight from the mapped files with one Cython call per column (planned once per view).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import RowOutOfRangeError
from ..core.context import ScanContext
from .projection import needs_projection, projected
from .direct_take import direct_plan
from ...file.fetch_batch import FetchBatch
from ...file.fetch_batch import active as active_batch
from .scan import (ROW_ADDRESS, ROW_ID, FragmentScan, ScanSpec, default_threads, is_remote,
                   live_counts, scan_pool)

# Fewer wanted rows than this are read on the calling thread (pool hand-off costs more).
PARALLEL_MIN_ROWS = 4096


def take_physical(ctx: ScanContext, pb, physical: np.ndarray, spec: ScanSpec,
                  scan: FragmentScan | None = None) -> pa.Table:
    """Rows at physical offsets (any order, repeats allowed) with the spec's columns."""
    scan = scan or FragmentScan(ctx, pb, spec)
    plan, nulls = scan.file_plan()
    columns = {}
    batch = active_batch()
    if batch is not None and len(plan) > 1:  # the files' reads go out together
        tables = batch.fan_out([lambda r=r, p=p: r.take(physical, p) for r, p, _ in plan])
    else:
        tables = [reader.take(physical, proj) for reader, proj, _ in plan]
    for t in tables:
        for n, col in zip(t.column_names, t.columns):
            columns[n] = col
    for n in nulls:
        columns[n] = pa.nulls(len(physical), ctx.schema.field(n).type)
    names = list(spec.columns)
    arrays = [columns[n] for n in names]
    if spec.with_row_id:
        names.append("_rowid")
        arrays.append(pa.array(scan.row_ids_at(0, 0, physical)))
    if spec.with_row_address:
        names.append("_rowaddr")
        arrays.append(pa.array((np.uint64(pb.id) << np.uint64(32)) | physical.astype(np.uint64)))
    if not arrays:
        return pa.table({"_": pa.nulls(len(physical))}).drop_columns(["_"])
    return pa.Table.from_arrays(arrays, names=names)


def live_to_physical(scan: FragmentScan, live: np.ndarray) -> np.ndarray:
    """Physical offsets of live-row offsets: ``live + (deleted rows at or before it)``, by a
    binary search over the deleted offsets shifted by their rank."""
    dv = scan.deletions
    n_live = scan.num_rows - (len(dv) if dv is not None else 0)
    if live.size and (live.min() < 0 or live.max() >= n_live):
        raise RowOutOfRangeError(f"row offset out of range for {n_live} live rows")
    if dv is None or not len(dv):
        return live
    deleted = dv.offsets.astype(np.int64)
    # a live offset l lands after every deleted row d_j with d_j - j <= l
    return live + np.searchsorted(deleted - np.arange(deleted.size), live, side="right")


def take_from_fragment(ctx: ScanContext, pb, live: np.ndarray, columns=None,
                       with_row_id=False, with_row_address=False) -> pa.Table:
    spec = ScanSpec.build(ctx.schema, columns, None, with_row_id, with_row_address)
    scan = FragmentScan(ctx, pb, spec)
    return take_physical(ctx, pb, live_to_physical(scan, np.asarray(live, dtype=np.int64)),
                         spec, scan)


def as_indices(indices) -> np.ndarray:
    if isinstance(indices, (pa.Array, pa.ChunkedArray)):
        indices = indices.to_numpy(zero_copy_only=False)
    return np.asarray(indices, dtype=np.int64).reshape(-1)


def take_from_fragments(ctx: ScanContext, fragments, live_counts: np.ndarray, indices,
                        columns=None, with_row_id=False, with_row_address=False) -> pa.Table:
    """Rows by offset among the live rows of ``fragments`` (in order), result in input order."""
    idx = as_indices(indices)
    total = int(live_counts.sum())
    spec = ScanSpec.build(ctx.schema, columns, None, with_row_id, with_row_address)
    if idx.size and spec.columns and not (spec.with_row_id or spec.with_row_address):
        plan = direct_plan(ctx, fragments, spec.columns)
        if plan is not None and plan.live_rows == total:
            return plan.take(idx)  # checks the offsets as it reads them
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        raise RowOutOfRangeError(f"row offset out of range for {total} rows")
    if idx.size == 0:
        return spec.output_schema(ctx.schema).empty_table()
    starts = np.concatenate([[0], np.cumsum(live_counts)])
    in_order = bool(np.all(idx[1:] >= idx[:-1]))
    order = None if in_order else np.argsort(idx, kind="stable")
    sorted_idx = idx if in_order else idx[order]
    # fragment f holds sorted_idx[bounds[f]:bounds[f + 1]]
    bounds = np.searchsorted(sorted_idx, starts, side="left")
    work = [(f, int(bounds[f]), int(bounds[f + 1])) for f in range(len(fragments))
            if bounds[f + 1] > bounds[f]]

    def read(item):
        f, lo, hi = item
        scan = FragmentScan(ctx, fragments[f], spec)
        local = sorted_idx[lo:hi] - starts[f]
        return take_physical(ctx, fragments[f], live_to_physical(scan, local), spec, scan)

    threads = default_threads(ctx)
    if is_remote(ctx):  # every read of every fragment goes out in rounds, together
        pieces = FetchBatch().run([lambda w=w: read(w) for w in work])
    elif len(work) > 1 and threads > 1 and idx.size >= PARALLEL_MIN_ROWS:
        pieces = list(scan_pool(threads).map(read, work))
    else:
        pieces = [read(w) for w in work]
    table = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
    if in_order:
        return table
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return table.take(pa.array(inverse))


# Column sets whose direct-take plan a snapshot remembers (a training loop asks for one or
# two; each plan holds its files' maps).
DIRECT_PLANS_KEPT = 8


def direct_take_plan(snapshot, columns):
    """The snapshot's direct-take plan (:mod:`.direct_take`) for ``columns`` (None or names),
    or None when they take the general path; looked up once per column set, so a take of a
    few rows costs no per-call planning."""
    if columns is None:
        key = None
    elif isinstance(columns, (list, tuple)) and all(isinstance(c, str) for c in columns):
        key = tuple(columns)
    else:
        return None
    plans = snapshot.memo("direct take plans", dict)
    if key in plans:
        return plans[key]
    plan = None
    if not needs_projection(snapshot.schema, columns):
        spec = ScanSpec.build(snapshot.schema, columns)
        if spec.columns:
            pbs = snapshot.fragment_pbs()
            found = direct_plan(snapshot.ctx, pbs, spec.columns)
            if found is not None and found.live_rows == int(live_counts(snapshot.ctx, pbs).sum()):
                plan = found
    if len(plans) >= DIRECT_PLANS_KEPT:
        plans.clear()
    plans[key] = plan
    return plan


def _named_metadata(schema: pa.Schema, columns) -> bool:
    """Whether a list of names asks for ``_rowid``/``_rowaddr`` or names a column twice."""
    if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
        return False
    return len(set(columns)) != len(columns) or any(
        c in (ROW_ID, ROW_ADDRESS) and schema.get_field_index(c) < 0 for c in columns)


def _take_named(snapshot, indices, columns: list, with_row_id, with_row_address) -> pa.Table:
    """pylance's take of named columns: each data column once (where first named), each
    ``_rowid``/``_rowaddr`` wherever (and as often as) it is named, flags' columns last."""
    schema = snapshot.schema
    meta = {c for c in columns if c in (ROW_ID, ROW_ADDRESS) and schema.get_field_index(c) < 0}
    plain = list(dict.fromkeys(c for c in columns if c not in meta))
    t = take_rows(snapshot, indices, plain, with_row_id or ROW_ID in meta,
                  with_row_address or ROW_ADDRESS in meta)
    order = [c for i, c in enumerate(columns) if c in meta or c not in columns[:i]]
    order += [c for c, flag in ((ROW_ID, with_row_id), (ROW_ADDRESS, with_row_address))
              if flag and c not in meta]
    return pa.Table.from_arrays([t.column(c) for c in order],
                                schema=pa.schema([t.schema.field(c) for c in order],
                                                 metadata=t.schema.metadata))


def take_rows(snapshot, indices, columns=None, with_row_id=False,
              with_row_address=False) -> pa.Table:
    """Rows by offset among the snapshot's live rows, in the order given; ``columns`` as in
    ``scanner()`` (names, nested paths, or a dict of SQL expressions)."""
    if _named_metadata(snapshot.schema, columns):
        return _take_named(snapshot, indices, list(columns), with_row_id, with_row_address)
    if not (with_row_id or with_row_address):
        plan = direct_take_plan(snapshot, columns)
        if plan is not None:
            idx = as_indices(indices)
            if idx.size:
                return plan.take(idx)
        if needs_projection(snapshot.schema, columns):
            return projected(snapshot.schema, columns,
                             lambda plain: take_rows(snapshot, indices, plain))
    pbs = snapshot.fragment_pbs()
    return take_from_fragments(snapshot.ctx, pbs, live_counts(snapshot.ctx, pbs), indices,
                               columns, with_row_id, with_row_address)
