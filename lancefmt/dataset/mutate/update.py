"""Updating rows: rewrite the rows matching a predicate with new values.

As Lance 14 does it (``update_mode = REWRITE_ROWS``): the matching rows are read, given their
new values, written as new fragments, and deleted from their old fragments, in one Update
transaction. With stable row ids the rewritten rows keep their row ids and their created-at
versions; their last-updated version becomes the commit's version.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ...errors import InvalidArgumentError
from ...sql import parse_expression
from ...table.deletion import DeletionVector, write_deletion_file
from ...table.fragment import FragmentMetadata
from ...table.rowids import carry_row_ids, load_created_at_versions
from ...table.transaction import Update
from ..core.commit import CONFLICT_RETRIES, commit_retrying
from ..core.files import data_file_uris, discard_written
from ..read.scan import FragmentScan, ScanSpec
from ..write.fragments import write_fragments


def value_expressions(values: dict, schema: pa.Schema) -> dict:
    if not values:
        raise InvalidArgumentError("update needs at least one column to set")
    out = {}
    for name, value in values.items():
        if schema.get_field_index(name) < 0:
            raise InvalidArgumentError(f"no such column: {name!r}")
        if isinstance(value, pc.Expression):
            out[name] = value
        elif isinstance(value, str):
            out[name] = parse_expression(value, schema)
        else:
            out[name] = pc.scalar(pa.scalar(value, type=schema.field(name).type))
    return out


def new_values(matched: pa.Table, exprs: dict, schema: pa.Schema) -> pa.Table:
    computed = pads.dataset(matched).to_table(columns={n: e for n, e in exprs.items()})
    columns = []
    for f in schema:
        if f.name in exprs:
            col = computed.column(f.name)
            try:
                col = col.cast(f.type) if not col.type.equals(f.type) else col
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InvalidArgumentError(f"cannot set {f.name!r} ({f.type}) to {col.type}: {e}") from None
            if not f.nullable and col.null_count:
                raise InvalidArgumentError(f"column {f.name!r} is not nullable")
            columns.append(col)
        else:
            columns.append(matched.column(f.name))
    return pa.Table.from_arrays(columns, schema=schema)


def plan_update(snapshot, exprs: dict, where):
    """(new rows, updated fragments, removed ids, row ids, created-at versions), or None when
    nothing matches; on failure the deletion files it wrote are removed again."""
    updated = []
    try:
        return _plan_update(snapshot, exprs, where, updated)
    except BaseException:
        discard_written(snapshot.ctx.resolver, updated, [], snapshot.storage_options)
        raise


def _plan_update(snapshot, exprs: dict, where, updated: list):
    schema = snapshot.schema
    stable = snapshot.has_stable_row_ids
    spec = ScanSpec.build(schema, schema.names, where, with_row_id=stable, with_row_address=True)
    matched_parts, row_ids, created = [], [], []
    removed = []
    for pb in snapshot.fragment_pbs():
        scan = FragmentScan(snapshot.ctx, pb, spec)
        tables = [t for t in scan.windows() if t.num_rows]
        if not tables:
            continue
        table = pa.concat_tables(tables)
        offsets = (table.column("_rowaddr").to_numpy() & np.uint64(0xFFFFFFFF)).astype(np.int64)
        if stable:
            row_ids.append(table.column("_rowid").to_numpy())
            versions = load_created_at_versions(pb, snapshot.uri, snapshot.storage_options)
            created.append(versions[offsets] if versions is not None
                           else np.ones(len(offsets), dtype=np.uint64))
        matched_parts.append(table.select(schema.names))
        dv = (scan.deletions or DeletionVector.empty()).extend(offsets.astype(np.uint32))
        if dv.deletes_all(pb.physical_rows):
            removed.append(pb.id)
            continue
        deletion = write_deletion_file(snapshot.uri, pb.id, snapshot.version, dv,
                                       storage_options=snapshot.storage_options)
        meta = FragmentMetadata.from_bytes(pb.SerializeToString())
        meta.pb.deletion_file.CopyFrom(deletion)
        updated.append(meta)
    if not matched_parts:
        return None
    new_rows = new_values(pa.concat_tables(matched_parts), exprs, schema)
    return new_rows, updated, removed, (np.concatenate(row_ids) if stable else None), \
        (np.concatenate(created) if stable else None)


def update_rows(snapshot, values: dict, where=None, *, conflict_retries: int = CONFLICT_RETRIES):
    """Commit the update; returns (committed snapshot, rows updated)."""
    exprs = value_expressions(values, snapshot.schema)
    field_ids = [snapshot.ctx.root_ids[n][0] for n in exprs]

    def stage(snap):
        plan = plan_update(snap, exprs, where)
        if plan is None:
            return None, 0, None
        new_rows, updated, removed, row_ids, created = plan
        written = []
        try:
            fragments = write_fragments(new_rows, snap.uri, storage_options=snap.storage_options)
            written = data_file_uris(snap.ctx.resolver, fragments)
            if row_ids is not None:
                carry_row_ids(fragments, row_ids, created)
        except BaseException:
            discard_written(snap.ctx.resolver, updated, written, snap.storage_options)
            raise
        op = Update(removed_fragment_ids=removed, updated_fragments=updated,
                    new_fragments=fragments, fields_modified=[],
                    fields_for_preserving_frag_bitmap=field_ids)
        return (op, new_rows.num_rows,
                lambda: discard_written(snap.ctx.resolver, updated, written, snap.storage_options))

    return commit_retrying(snapshot, stage, conflict_retries)
