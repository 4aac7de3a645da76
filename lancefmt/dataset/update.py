"""``Dataset.update(values, where)``: rewrite matching rows with new values.

As Lance 14 does it (``update_mode = REWRITE_ROWS``): the matching rows are read, given their
new values, written as new fragments, and deleted from their old fragments, in one Update
transaction. With stable row ids the rewritten rows keep their row ids and their created-at
versions; their last-updated version becomes the commit's version.
"""
from __future__ import annotations

import random
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ..errors import InvalidArgumentError, RetryableCommitConflictError
from ..sql import parse_expression
from ..table.deletion import DeletionVector, write_deletion_file
from ..table.fragment import FragmentMetadata
from ..table.rowids import encode_row_ids, encode_versions, load_created_at_versions
from ..table.transaction import Update
from ..table.versions import latest_manifest
from .scan import FragmentScan, ScanSpec
from .write import delete_files, write_fragments

CONFLICT_RETRIES = 10


def _value_expressions(values: dict, schema: pa.Schema) -> dict:
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


def _new_values(matched: pa.Table, exprs: dict, schema: pa.Schema) -> pa.Table:
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


def plan_update(ds, exprs: dict, where):
    """(new rows, updated fragments, removed ids, row ids, created-at versions), or None when
    nothing matches; on failure the deletion files it wrote are removed again."""
    updated = []
    try:
        return _plan_update(ds, exprs, where, updated)
    except BaseException:
        _cleanup(ds, updated, [])
        raise


def _plan_update(ds, exprs: dict, where, updated: list):
    schema = ds.schema
    stable = ds.has_stable_row_ids
    spec = ScanSpec.build(schema, schema.names, where, with_row_id=stable, with_row_address=True)
    matched_parts, row_ids, created = [], [], []
    removed = []
    for frag in ds.get_fragments():
        scan = FragmentScan(ds._ctx, frag._pb, spec)
        tables = [t for t in scan.windows() if t.num_rows]
        if not tables:
            continue
        table = pa.concat_tables(tables)
        offsets = (table.column("_rowaddr").to_numpy() & np.uint64(0xFFFFFFFF)).astype(np.int64)
        if stable:
            row_ids.append(table.column("_rowid").to_numpy())
            versions = load_created_at_versions(frag._pb, ds.uri, ds.storage_options)
            created.append(versions[offsets] if versions is not None
                           else np.ones(len(offsets), dtype=np.uint64))
        matched_parts.append(table.select(schema.names))
        dv = (scan.deletions or DeletionVector.empty()).extend(offsets.astype(np.uint32))
        if dv.deletes_all(frag.physical_rows):
            removed.append(frag.id)
            continue
        deletion = write_deletion_file(ds.uri, frag.id, ds.version, dv,
                                       storage_options=ds.storage_options)
        meta = FragmentMetadata.from_bytes(frag._pb.SerializeToString())
        meta.pb.deletion_file.CopyFrom(deletion)
        updated.append(meta)
    if not matched_parts:
        return None
    new_rows = _new_values(pa.concat_tables(matched_parts), exprs, schema)
    return new_rows, updated, removed, (np.concatenate(row_ids) if stable else None), \
        (np.concatenate(created) if stable else None)


def update_rows(ds, values: dict, where=None, *, conflict_retries: int = CONFLICT_RETRIES):
    """Commit the update on (a snapshot) ``ds``; returns (committed Dataset, rows updated)."""
    from .dataset import Dataset

    exprs = _value_expressions(values, ds.schema)
    field_ids = [ds._ctx.root_ids[n][0] for n in exprs]
    attempt = 0
    while True:
        plan = plan_update(ds, exprs, where)
        if plan is None:
            return ds, 0
        new_rows, updated, removed, row_ids, created = plan
        written = []
        try:
            fragments = write_fragments(new_rows, ds.uri, storage_options=ds.storage_options)
            written = _data_file_uris(ds, fragments)
            if row_ids is not None:
                start = 0
                for f in fragments:
                    n = f.physical_rows
                    f.pb.inline_row_ids = encode_row_ids(row_ids[start:start + n])
                    f.pb.inline_created_at_versions = encode_versions(created[start:start + n])
                    start += n
            op = Update(removed_fragment_ids=removed, updated_fragments=updated,
                        new_fragments=fragments, fields_modified=[],
                        fields_for_preserving_frag_bitmap=field_ids)
            return ds._commit(op), new_rows.num_rows
        except RetryableCommitConflictError:
            _cleanup(ds, updated, written)
            attempt += 1
            if attempt > conflict_retries:
                raise
            time.sleep(min(1.0, 0.01 * 2 ** attempt) * (0.5 + random.random()))
            ds = Dataset.open(ds.uri, None, storage_options=ds.storage_options,
                              manifest_store=ds.manifest_store)
        except BaseException:
            _cleanup(ds, updated, written)
            raise


def _data_file_uris(ds, fragments) -> list:
    return [ds._ctx.resolver.data_file_uri(df.path, df.base_id if df.HasField("base_id") else None)
            for f in fragments for df in f.pb.files]


def _cleanup(ds, updated, written) -> None:
    from .fragment import Fragment

    uris = list(written)
    for f in updated:
        uri = Fragment(ds._ctx, f.pb).deletion_file()
        if uri:
            uris.append(uri)
    delete_files(uris, ds.storage_options)
