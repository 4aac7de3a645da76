"""Adding columns with data (pylance's ``add_columns`` and ``merge``).

* SQL expressions, a :class:`~.udf.BatchUDF`, or row-aligned data each give every fragment
  one new data file (see :mod:`.column_files`); row-aligned data (a table or reader) is
  aligned with the dataset's *live* rows in fragment order, deleted rows get nulls;
* all-null columns (a ``pa.Schema``/``pa.Field``) are a Merge with the schema only: no data is
  written and fragments without the column's data file read it as nulls;
* ``merge`` left-joins data on a key column as new columns.

Functions here return a :class:`~lancefmt.dataset.core.plan.CommitPlan`.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from ..._proto import table_pb2
from ...errors import InvalidArgumentError, InvalidInputError
from ...file.schema import fields_from_arrow
from ...sql import parse_expression, referenced_columns
from ...table.fragment import FragmentMetadata
from ...table.transaction import Merge
from ..core.files import delete_files
from ..core.plan import CommitPlan
from ..read.scan import FragmentScan, ScanSpec, scan_table
from ..write.input import to_reader
from .column_files import check_new_names, max_field_id, physical_batches, with_new_files
from .udf import BatchUDF
from .udf_checkpoint import UdfCheckpoint


def _first_row(snapshot, columns) -> pa.Table:
    return scan_table(snapshot.ctx, snapshot.fragment_pbs(),
                      ScanSpec.build(snapshot.schema, list(columns)), limit=1)


def _constant_nulls(snapshot, exprs: dict) -> pa.Schema | None:
    """The schema of ``exprs`` when every one reads no column and evaluates to NULL (the new
    columns are then all null and need no data file), else None."""
    parsed = {}
    for name, text in exprs.items():
        if not isinstance(text, str):
            return None
        parsed[name] = parse_expression(text, snapshot.schema)
    try:  # over a table without the dataset's columns: an expression reading one fails
        out = pads.dataset(pa.table({"__n": [None]})).to_table(columns=dict(parsed))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError):
        return None
    if any(out.column(n).null_count != 1 for n in exprs):
        return None
    return pa.schema([pa.field(n, out.schema.field(n).type) for n in exprs])


def _expression_tables(snapshot, exprs: dict, batch_size):
    parsed = {}
    for name, text in exprs.items():
        if not isinstance(text, str):
            raise InvalidArgumentError(f"add_columns expressions must be SQL strings, got {text!r}")
        parsed[name] = parse_expression(text, snapshot.schema)
    needed = sorted({c for e in parsed.values() for c in referenced_columns(e, snapshot.schema)
                     if c in snapshot.schema.names}, key=snapshot.schema.names.index)

    def compute(table: pa.Table) -> pa.Table:
        if not needed:
            table = pa.table({"__n": pa.nulls(table.num_rows, pa.bool_())})
        return pads.dataset(table).to_table(columns=dict(parsed))

    probe = compute(_first_row(snapshot, needed) if needed else pa.table({"__n": [None]}))
    schema = pa.schema([pa.field(n, probe.schema.field(n).type) for n in exprs])

    def tables_for(pb):
        for t in physical_batches(snapshot, pb, needed, batch_size):
            if not t.num_rows and needed:
                continue
            yield compute(t).cast(schema)

    return schema, tables_for


def udf_tables(snapshot, udf, read_columns, batch_size, pbs=None):
    """(output schema, tables_for(fragment pb)) of a batch UDF over every physical row; the
    schema is the UDF's declared one, or that of its output for the first batch (which the
    UDF then sees again, as pylance calls it: a UDF whose output changes is caught)."""
    if not isinstance(udf, BatchUDF):
        udf = BatchUDF(getattr(udf, "func", udf), getattr(udf, "output_schema", None))
    columns = list(read_columns) if read_columns is not None else snapshot.schema.names

    checkpoint = UdfCheckpoint(udf.checkpoint_file) if udf.checkpoint_file else None

    def batches(pb):
        for t in physical_batches(snapshot, pb, columns, batch_size):
            yield from t.to_batches(max_chunksize=batch_size)

    def run(pb, start, b):
        if checkpoint is None:
            return udf(b)
        out = checkpoint.get(pb.id, start, b.num_rows)
        if out is None:
            out = udf(b)
            checkpoint.put(pb.id, start, out)
        return out

    def runs(pb, it, start=0):
        for b in it:
            yield run(pb, start, b)
            start += b.num_rows

    schema = udf.output_schema
    if schema is None:  # as pylance: the UDF's output for the first batch, then every batch
        pbs = list(pbs) if pbs is not None else snapshot.fragment_pbs()
        first_pb = next((pb for pb in pbs if pb.physical_rows), None)
        if first_pb is None:
            sample = _first_row(snapshot, columns)
            schema = udf(pa.RecordBatch.from_pylist([], schema=sample.schema)).schema
        else:
            schema = udf(next(batches(first_pb))).schema
        udf.output_schema = schema

    def tables_for(pb):
        yield from runs(pb, batches(pb))

    tables_for.checkpoint = checkpoint  # removed by add_columns once the files are written
    return schema, tables_for


def _aligned_tables(snapshot, data, reader_schema):
    """Row-aligned data: consumed fragment by fragment, one value per live row."""
    reader = to_reader(data, reader_schema)
    schema = reader.schema
    pending = []   # RecordBatches not yet consumed
    it = iter(reader)

    def take(n: int) -> pa.Table:
        got, have = [], 0
        while have < n:
            if not pending:
                try:
                    pending.append(next(it))
                except StopIteration:
                    raise InvalidInputError("Stream ended before producing values for all "
                                            "rows in dataset") from None
            b = pending.pop(0)
            if have + b.num_rows > n:
                pending.insert(0, b.slice(n - have))
                b = b.slice(0, n - have)
            got.append(b)
            have += b.num_rows
        return pa.Table.from_batches(got, schema=schema)

    def tables_for(pb):
        scan = FragmentScan(snapshot.ctx, pb, ScanSpec.build(snapshot.schema, []))
        dv = scan.deletions
        n = pb.physical_rows
        if dv is None or not len(dv):
            yield take(n)
            return
        kept = dv.kept_indices(n)
        live = take(len(kept))
        positions = np.full(n, -1, dtype=np.int64)
        positions[kept] = np.arange(len(kept))
        idx = pa.array(positions, mask=positions < 0)
        yield live.take(idx)

    def check_done():
        rest = sum(b.num_rows for b in pending)
        for b in it:
            rest += b.num_rows
        if rest:
            raise InvalidInputError("Stream produced more values than expected for dataset")

    return schema, tables_for, check_done


def add_columns(snapshot, transforms, read_columns=None, reader_schema=None, batch_size=None,
                pbs=None) -> CommitPlan:
    """The Merge that adds columns described by ``transforms`` (see the module docstring);
    ``pbs``: only these fragments (``Fragment.merge_columns``)."""
    if isinstance(transforms, pa.Field):
        transforms = [transforms]
    if isinstance(transforms, (pa.Schema, list)) and all(isinstance(f, pa.Field) for f in transforms):
        return _null_columns(snapshot, pa.schema(list(transforms)))
    check_done = checkpoint = None
    if isinstance(transforms, dict):
        if not transforms:
            raise InvalidArgumentError("add_columns needs at least one column")
        check_new_names(snapshot, list(transforms))
        nulls = _constant_nulls(snapshot, transforms)
        if nulls is not None:  # e.g. CAST(NULL AS INT): metadata only, as pylance does
            return _null_columns(snapshot, nulls)
        schema, tables_for = _expression_tables(snapshot, transforms, batch_size)
    elif isinstance(transforms, BatchUDF) or (callable(transforms) and not hasattr(transforms, "__arrow_c_stream__")
                                              and not isinstance(transforms, (pa.Table, pa.RecordBatchReader))):
        schema, tables_for = udf_tables(snapshot, transforms, read_columns, batch_size, pbs)
        checkpoint = tables_for.checkpoint
    else:
        schema, tables_for, check_done = _aligned_tables(snapshot, transforms, reader_schema)
    check_new_names(snapshot, schema.names)
    plan = with_new_files(snapshot, schema, tables_for, pbs)
    if checkpoint is not None:
        checkpoint.remove()
    if check_done is not None:
        try:
            check_done()
        except BaseException:
            for uri, options in plan.written:
                delete_files([uri], options)
            raise
    return plan


def _null_columns(snapshot, schema: pa.Schema) -> CommitPlan:
    check_new_names(snapshot, schema.names)
    bad = [f.name for f in schema if not f.nullable]
    if bad:
        raise InvalidArgumentError(f"all-null new columns must be nullable: {bad}")
    fields = fields_from_arrow(schema, start_id=max_field_id(snapshot.lance_fields) + 1)
    frags = [FragmentMetadata.from_bytes(pb.SerializeToString()) for pb in snapshot.fragment_pbs()]
    return CommitPlan(Merge(frags, list(snapshot.lance_fields) + fields,
                            schema_metadata=dict(snapshot.manifest.schema_metadata)))


def merge_columns(snapshot, data, left_on: str, right_on: str, schema=None,
                  pbs=None) -> CommitPlan:
    """pylance's ``Dataset.merge``: new columns from ``data`` joined on ``left_on == right_on``;
    rows without a match get nulls. ``left_on`` may be ``_rowid`` / ``_rowaddr``; ``pbs``:
    only these fragments (``Fragment.merge``)."""
    right = to_reader(data, schema).read_all()
    if left_on not in snapshot.schema.names and left_on not in ("_rowid", "_rowaddr"):
        raise InvalidArgumentError(f"no column {left_on!r} in the dataset")
    if right_on not in right.column_names:
        raise InvalidArgumentError(f"no column {right_on!r} in the data to merge")
    new_names = [n for n in right.column_names if n != right_on]
    check_new_names(snapshot, new_names)
    new_schema = pa.schema([right.schema.field(n) for n in new_names])
    new_schema = pa.schema([f.with_nullable(True) for f in new_schema])
    keys = right.column(right_on)
    if pa.compute.count_distinct(keys).as_py() != keys.length() - keys.null_count:
        raise InvalidArgumentError(f"the merge key {right_on!r} has duplicate values")
    right = right.select([right_on] + new_names).rename_columns(["__key"] + new_names)

    def tables_for(pb):
        for t in _key_batches(snapshot, pb, left_on):
            left = pa.table({"__key": t.column(left_on),
                             "__pos": pa.array(np.arange(t.num_rows, dtype=np.int64))})
            joined = left.join(right, "__key", join_type="left outer").sort_by("__pos")
            yield pa.Table.from_arrays([joined.column(n).cast(new_schema.field(n).type)
                                        for n in new_names], schema=new_schema)

    return with_new_files(snapshot, new_schema, tables_for, pbs)


def _key_batches(snapshot, pb, left_on: str):
    """The merge key of every physical row of ``pb`` (deleted rows too, as files hold them)."""
    if left_on not in ("_rowid", "_rowaddr"):
        yield from physical_batches(snapshot, pb, [left_on])
        return
    bare = table_pb2.DataFragment()
    bare.CopyFrom(pb)
    bare.ClearField("deletion_file")
    spec = ScanSpec.build(snapshot.schema, [], with_row_id=left_on == "_rowid",
                          with_row_address=left_on == "_rowaddr")
    yield from FragmentScan(snapshot.ctx, bare, spec).windows()
