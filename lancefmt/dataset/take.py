"""Random access: rows by offset among a fragment's (or a dataset's) live rows, and by row address.

Offsets count live rows only, as pylance's ``take`` does: they are mapped to physical offsets
through the deletion vector's kept indices, then each data file reads just the pages holding
those rows (``LanceFileReader.take``).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, RowOutOfRangeError
from .context import ScanContext
from .scan import FragmentScan, ScanSpec


def take_physical(ctx: ScanContext, pb, physical: np.ndarray, spec: ScanSpec) -> pa.Table:
    """Rows at physical offsets (any order, repeats allowed) with the spec's columns."""
    scan = FragmentScan(ctx, pb, spec)
    plan, nulls = scan._file_plan()
    columns = {}
    for reader, proj, _ in plan:
        t = reader.take(physical, proj)
        for n, col in zip(t.column_names, t.columns):
            columns[n] = col
    for n in nulls:
        columns[n] = pa.nulls(len(physical), ctx.schema.field(n).type)
    names = list(spec.columns)
    arrays = [columns[n] for n in names]
    if spec.with_row_id:
        names.append("_rowid")
        arrays.append(pa.array(scan.row_ids()[physical]))
    if spec.with_row_address:
        names.append("_rowaddr")
        arrays.append(pa.array((np.uint64(pb.id) << np.uint64(32)) | physical.astype(np.uint64)))
    if not arrays:
        return pa.table({"_": pa.nulls(len(physical))}).drop_columns(["_"])
    return pa.Table.from_arrays(arrays, names=names)


def live_to_physical(scan: FragmentScan, live: np.ndarray) -> np.ndarray:
    dv = scan.deletions
    n_live = scan.num_rows - (len(dv) if dv is not None else 0)
    if live.size and (live.min() < 0 or live.max() >= n_live):
        raise RowOutOfRangeError(f"row offset out of range for {n_live} live rows")
    if dv is None or not len(dv):
        return live
    return dv.kept_indices(scan.num_rows)[live].astype(np.int64)


def take_from_fragment(ctx: ScanContext, pb, live: np.ndarray, columns=None,
                       with_row_id=False, with_row_address=False) -> pa.Table:
    spec = ScanSpec.build(ctx.schema, columns, None, with_row_id, with_row_address)
    scan = FragmentScan(ctx, pb, spec)
    return take_physical(ctx, pb, live_to_physical(scan, live), spec)


def take_from_fragments(ctx: ScanContext, fragments, live_counts: np.ndarray, indices,
                        columns=None, with_row_id=False, with_row_address=False) -> pa.Table:
    """Rows by offset among the live rows of ``fragments`` (in order), result in input order."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    total = int(live_counts.sum())
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        raise RowOutOfRangeError(f"row offset out of range for {total} rows")
    spec = ScanSpec.build(ctx.schema, columns, None, with_row_id, with_row_address)
    starts = np.concatenate([[0], np.cumsum(live_counts)])
    which = np.searchsorted(starts, idx, side="right") - 1
    order = np.argsort(which, kind="stable")
    pieces = []
    for f in np.unique(which):
        sel = order[which[order] == f]
        local = idx[sel] - starts[f]
        scan = FragmentScan(ctx, fragments[f], spec)
        pieces.append(take_physical(ctx, fragments[f], live_to_physical(scan, local), spec))
    if not pieces:
        return spec.output_schema(ctx.schema).empty_table()
    table = pa.concat_tables(pieces)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return table.take(pa.array(inverse))
