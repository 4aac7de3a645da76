"""Schema evolution one fragment at a time (pylance's ``Fragment.merge_columns`` and
``Fragment.update_columns``): each returns new fragment metadata and nothing is committed, so
distributed workers can evolve fragments in parallel and a driver commits them together with
``Operation.Merge`` (new columns) or ``Operation.Update`` (rewritten columns).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._proto import table_pb2
from ...errors import InvalidArgumentError
from ...file.schema import arrow_from_fields
from ...io import io_scope, wait_durable
from ...table.fragment import FragmentMetadata
from ..read.scan import FragmentScan, ScanSpec
from ..write.input import to_reader
from .column_files import (
    TOMBSTONE, FragmentFileWriter, check_new_names, copy_fields, descendants, with_new_files,
)
from .new_columns import add_columns, merge_columns


@io_scope()  # fails on its own files' syncs/uploads only (io/uploads.py)
def fragment_merge_columns(snapshot, pb, value_func, columns=None, batch_size=None, reader_schema=None):
    """``Fragment.merge_columns``: (new FragmentMetadata, new Lance field list) for one fragment,
    nothing committed; commit all fragments with ``Operation.Merge(fragments, fields)``."""
    if getattr(value_func, "checkpoint_file", None) is not None:
        raise InvalidArgumentError("A checkpoint file cannot be used when merging the columns "
                                   "of one fragment: merge_columns runs once per fragment")
    if isinstance(value_func, (pa.Table, pa.RecordBatchReader, pa.RecordBatch)) or \
            hasattr(value_func, "__arrow_c_stream__"):
        reader = to_reader(value_func, reader_schema)
        table = reader.read_all()
        schema = table.schema
        check_new_names(snapshot, schema.names)
        if table.num_rows != pb.physical_rows:
            raise InvalidArgumentError(f"fragment {pb.id} has {pb.physical_rows} rows, the data "
                                       f"{table.num_rows}")
        plan = with_new_files(snapshot, schema, lambda _pb: [table], [pb])
    else:
        plan = add_columns(snapshot, value_func, columns, reader_schema, batch_size, pbs=[pb])
    op = plan.operation
    wait_durable()  # the fragment may be committed by another process
    return op.fragments[0], op.fields


@io_scope()  # fails on its own files' syncs/uploads only (io/uploads.py)
def fragment_merge(snapshot, pb, data, left_on: str, right_on: str | None = None, schema=None):
    """``Fragment.merge``: new columns for one fragment from ``data`` joined on ``left_on``
    (a column, ``_rowid`` or ``_rowaddr``) == ``right_on``; (new FragmentMetadata, new Lance
    field list), nothing committed (commit with ``Operation.Merge``)."""
    plan = merge_columns(snapshot, data, left_on, right_on or left_on, schema, pbs=[pb])
    wait_durable()  # the fragment may be committed by another process
    return plan.operation.fragments[0], plan.operation.fields


@io_scope()  # fails on its own files' syncs/uploads only (io/uploads.py)
def fragment_update_columns(snapshot, pb, data, left_on: str = "_rowid", right_on: str | None = None,
                            schema=None):
    """``Fragment.update_columns``: rewrite some columns of one fragment from ``data`` joined
    on ``left_on == right_on`` (unmatched rows keep their values). Returns (new
    FragmentMetadata, modified field ids); commit with ``Operation.Update(updated_fragments=...,
    fields_modified=...)``. The old ids become tombstones (-2) in the old data files."""
    right_on = right_on or left_on
    right = to_reader(data, schema).read_all()
    if right_on not in right.column_names:
        raise InvalidArgumentError(f"no column {right_on!r} in the update data")
    names = [n for n in right.column_names if n != right_on]
    system = [n for n in names if n in ("_rowid", "_rowaddr", "_rowoffset")]
    if system:
        raise InvalidArgumentError(f"{system} is a metadata column and cannot be updated")
    missing = [n for n in names if n not in snapshot.schema.names]
    if missing or not names:
        raise InvalidArgumentError(f"update_columns: column(s) {missing or names} does not "
                                   "exist in the dataset (it updates existing columns)")
    fields = list(snapshot.lance_fields)
    top = {f.name: f for f in fields if f.parent_id == -1}
    ids = set()
    for n in names:
        ids |= descendants(fields, top[n].id)
    upd_fields = copy_fields([f for f in fields if f.id in ids])
    upd_schema = arrow_from_fields(upd_fields)
    right = right.select([right_on] + names).rename_columns(["__key"] + names)
    if pa.compute.count_distinct(right.column("__key")).as_py() != right.num_rows - right.column("__key").null_count:
        raise InvalidArgumentError(f"the update key {right_on!r} has duplicate values")
    writer = FragmentFileWriter(snapshot, upd_schema, upd_fields)

    def tables():
        read = names + ([left_on] if left_on not in ("_rowid", "_rowaddr") else [])
        bare = table_pb2.DataFragment()
        bare.CopyFrom(pb)
        bare.ClearField("deletion_file")
        spec = ScanSpec.build(snapshot.schema, read, with_row_id=left_on == "_rowid",
                              with_row_address=left_on == "_rowaddr")
        for t in FragmentScan(snapshot.ctx, bare, spec).windows():
            left = pa.table({"__key": t.column(left_on).cast(right.schema.field("__key").type),
                             "__pos": pa.array(np.arange(t.num_rows, dtype=np.int64))})
            joined = left.join(right, "__key", join_type="left outer").sort_by("__pos")
            cols = []
            for n in names:
                new = joined.column(n)
                cols.append(pa.compute.if_else(_matched_mask(joined, right), new.cast(t.column(n).type),
                                               t.column(n)))
            yield pa.Table.from_arrays(cols, schema=upd_schema)

    right = right.append_column("__hit", pa.array(np.ones(right.num_rows, dtype=bool)))
    df, rows = writer.write(tables())
    meta = FragmentMetadata.from_bytes(pb.SerializeToString())
    files = []
    for old in meta.pb.files:
        c = table_pb2.DataFile()
        c.CopyFrom(old)
        new_ids = [TOMBSTONE if i in ids else i for i in old.fields]
        del c.fields[:]
        c.fields.extend(new_ids)
        files.append(c)
    del meta.pb.files[:]
    meta.pb.files.extend(files)
    meta.pb.files.add().CopyFrom(df)
    wait_durable()  # the fragment may be committed by another process
    return meta, sorted(ids)


def _matched_mask(joined: pa.Table, right: pa.Table):
    return pa.compute.fill_null(joined.column("__hit"), False)
