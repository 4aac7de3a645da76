"""Schema evolution with data: ``add_columns``, ``drop_columns``, ``alter_columns``, ``merge``
and the fragment-level ``merge_columns``.

As Lance does it (checked against pylance 14):

* new columns get field ids from ``max(id) + 1``; each fragment gets **one** new data file
  holding only them (its ``fields`` = the new ids), written for every *physical* row (deleted
  rows too, so offsets stay aligned); one Merge transaction commits the new fragment list and
  schema;
* all-null columns (a ``pa.Schema``/``pa.Field``) are a Merge with the schema only: no data is
  written and fragments without the column's data file read it as nulls;
* row-aligned data (a table or reader) is aligned with the dataset's *live* rows in fragment
  order; deleted rows get nulls;
* ``drop_columns`` is a Project (data files stay, a file whose fields are all gone is dropped);
  a rename or a nullability change is a Project too; a cast writes the column again under a new
  field id and tombstones (-2) the old id in the old files, in one Merge.

Functions here return a :class:`ColumnPlan` (operation + files written); ``Dataset`` commits it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from .._proto import file_pb2, table_pb2
from ..errors import InvalidArgumentError
from ..file.writer import LanceFileWriter
from ..file.schema import fields_from_arrow
from ..io import open_store
from ..sql import parse_expression, referenced_columns
from ..table.fragment import FragmentMetadata
from ..table.naming import data_file_name
from ..table.transaction import Merge, Project
from .input import to_reader
from .scan import FragmentScan, ScanSpec

TOMBSTONE = -2


@dataclass
class ColumnPlan:
    """An operation to commit and the files written for it (removed if the commit fails)."""

    operation: object
    written: list = field(default_factory=list)   # [(uri, storage_options)]


class BatchUDF:
    """A function ``RecordBatch -> RecordBatch`` (or pandas DataFrame) adding columns, with an
    optional declared output schema (pylance's ``BatchUDF``)."""

    def __init__(self, func, output_schema: pa.Schema | None = None, checkpoint_file=None):
        self.func = func
        self.output_schema = output_schema
        self.checkpoint_file = checkpoint_file

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        out = self.func(batch)
        if not isinstance(out, (pa.RecordBatch, pa.Table)):
            if type(out).__module__.startswith("pandas"):
                out = pa.RecordBatch.from_pandas(out, schema=self.output_schema, preserve_index=False)
            else:
                raise InvalidArgumentError(f"a batch UDF must return a RecordBatch, not {type(out).__name__}")
        if isinstance(out, pa.Table):
            out = out.combine_chunks().to_batches()[0] if out.num_rows else \
                pa.RecordBatch.from_pylist([], schema=out.schema)
        if out.num_rows != batch.num_rows:
            raise InvalidArgumentError(f"the UDF returned {out.num_rows} rows for {batch.num_rows}")
        if self.output_schema is not None and not out.schema.equals(self.output_schema):
            try:
                out = out.cast(self.output_schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
                raise InvalidArgumentError(f"UDF output does not match its schema: {e}") from None
        return out


def batch_udf(output_schema: pa.Schema | None = None, checkpoint_file=None):
    """Decorator making a :class:`BatchUDF` (``lance.batch_udf``'s signature)."""

    def wrap(func):
        return BatchUDF(func, output_schema, checkpoint_file)

    return wrap


# -- helpers ------------------------------------------------------------------------------
def _max_field_id(fields) -> int:
    return max((f.id for f in fields), default=-1)


def _physical_spec(ds, columns) -> ScanSpec:
    return ScanSpec.build(ds.schema, list(columns))


def _physical_batches(ds, pb, columns, batch_size=None):
    """Every physical row (deleted ones too) of fragment ``pb``, for ``columns``."""
    bare = table_pb2.DataFragment()
    bare.CopyFrom(pb)
    bare.ClearField("deletion_file")
    spec = ScanSpec.build(ds.schema, list(columns), batch_size=batch_size)
    scan = FragmentScan(ds._ctx, bare, spec)
    if not columns:
        yield pa.table({"__n": pa.nulls(pb.physical_rows, pa.bool_())}).drop_columns(["__n"])
        return
    yield from scan.windows()


def _check_new_names(ds, names) -> None:
    have = set(ds.schema.names)
    dup = [n for n in names if n in have]
    if dup:
        raise InvalidArgumentError(f"column(s) {dup} already exist in the dataset")
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"duplicate new column names {names}")


class _FragmentFileWriter:
    """Writes one data file per fragment for the new columns, in the dataset root's data/."""

    def __init__(self, ds, schema: pa.Schema, fields):
        from .write import _check_storage_version, _targets

        self.version = _check_storage_version(ds.data_storage_version)
        target = _targets(ds.uri, list(ds.base_paths.values()), None, ds.storage_options,
                          ds.base_store_params)[0]
        self.data_dir, self.options = target.data_dir, target.storage_options
        self.schema, self.fields = schema, fields
        self.written: list = []

    def write(self, tables) -> tuple[table_pb2.DataFile, int]:
        from .write import _data_file

        name = data_file_name()
        uri = self.data_dir.rstrip("/") + "/" + name
        writer = LanceFileWriter(uri, self.schema, self.version, store=open_store(uri, self.options),
                                 fields=self.fields)
        try:
            for t in tables:
                for b in (t.to_batches() if isinstance(t, pa.Table) else [t]):
                    if b.num_rows:
                        writer.write_batch(pa.RecordBatch.from_arrays(b.columns, schema=self.schema))
            rows = writer.close()
        except BaseException:
            writer.abort()
            raise
        self.written.append((uri, self.options))
        return _data_file(name, writer, None), rows

    def abort(self):
        from .write import delete_files

        for uri, options in self.written:
            delete_files([uri], options)


def _with_new_files(ds, new_schema: pa.Schema, tables_for, pbs=None):
    """Merge plan: every fragment (of ``pbs``, default all) gets one data file for
    ``new_schema``'s columns, the rows coming from ``tables_for(fragment pb)`` (an iterable of
    tables, physical row order)."""
    fields = fields_from_arrow(new_schema, start_id=_max_field_id(ds.lance_fields) + 1)
    writer = _FragmentFileWriter(ds, new_schema, fields)
    fragments = []
    try:
        for pb in (ds._fragment_pbs() if pbs is None else pbs):
            df, rows = writer.write(tables_for(pb))
            if rows != pb.physical_rows:
                raise InvalidArgumentError(f"fragment {pb.id} has {pb.physical_rows} rows, the "
                                           f"new columns {rows}")
            meta = FragmentMetadata.from_bytes(pb.SerializeToString())
            meta.pb.files.add().CopyFrom(df)
            fragments.append(meta)
    except BaseException:
        writer.abort()
        raise
    op = Merge(fragments, list(ds.lance_fields) + fields,
               schema_metadata=dict(ds.manifest.schema_metadata))
    return ColumnPlan(op, writer.written)


def _expression_tables(ds, exprs: dict, batch_size):
    parsed = {}
    for name, text in exprs.items():
        if not isinstance(text, str):
            raise InvalidArgumentError(f"add_columns expressions must be SQL strings, got {text!r}")
        parsed[name] = parse_expression(text, ds.schema)
    needed = sorted({c for e in parsed.values() for c in referenced_columns(e, ds.schema)
                     if c in ds.schema.names}, key=ds.schema.names.index)

    def compute(table: pa.Table) -> pa.Table:
        if not needed:
            table = pa.table({"__n": pa.nulls(table.num_rows, pa.bool_())})
        return pads.dataset(table).to_table(columns=dict(parsed))

    probe = compute(ds.to_table(columns=needed, limit=1) if needed else pa.table({"__n": [None]}))
    schema = pa.schema([pa.field(n, probe.schema.field(n).type) for n in exprs])

    def tables_for(pb):
        for t in _physical_batches(ds, pb, needed, batch_size):
            if not t.num_rows and needed:
                continue
            yield compute(t).cast(schema)

    return schema, tables_for


def _udf_tables(ds, udf, read_columns, batch_size):
    if not isinstance(udf, BatchUDF):
        udf = BatchUDF(getattr(udf, "func", udf), getattr(udf, "output_schema", None))
    columns = list(read_columns) if read_columns is not None else ds.schema.names
    schema = udf.output_schema
    if schema is None:
        sample = ds.to_table(columns=columns, limit=1)
        schema = udf(sample.to_batches()[0] if sample.num_rows else
                     pa.RecordBatch.from_pylist([], schema=sample.schema)).schema
        udf.output_schema = schema

    def tables_for(pb):
        for t in _physical_batches(ds, pb, columns, batch_size):
            for b in t.to_batches(max_chunksize=batch_size):
                yield udf(b)

    return schema, tables_for


def _aligned_tables(ds, data, reader_schema):
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
                    raise InvalidArgumentError("the new column data has fewer rows than the "
                                               "dataset") from None
            b = pending.pop(0)
            if have + b.num_rows > n:
                pending.insert(0, b.slice(n - have))
                b = b.slice(0, n - have)
            got.append(b)
            have += b.num_rows
        return pa.Table.from_batches(got, schema=schema)

    def tables_for(pb):
        scan = FragmentScan(ds._ctx, pb, _physical_spec(ds, []))
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
            raise InvalidArgumentError("the new column data has more rows than the dataset")

    return schema, tables_for, check_done


def add_columns(ds, transforms, read_columns=None, reader_schema=None, batch_size=None,
                pbs=None) -> ColumnPlan:
    """The Merge that adds columns described by ``transforms`` (see the module docstring);
    ``pbs``: only these fragments (``Fragment.merge_columns``)."""
    if isinstance(transforms, pa.Field):
        transforms = [transforms]
    if isinstance(transforms, (pa.Schema, list)) and all(isinstance(f, pa.Field) for f in transforms):
        return _null_columns(ds, pa.schema(list(transforms)))
    check_done = None
    if isinstance(transforms, dict):
        if not transforms:
            raise InvalidArgumentError("add_columns needs at least one column")
        _check_new_names(ds, list(transforms))
        schema, tables_for = _expression_tables(ds, transforms, batch_size)
    elif isinstance(transforms, BatchUDF) or (callable(transforms) and not hasattr(transforms, "__arrow_c_stream__")
                                              and not isinstance(transforms, (pa.Table, pa.RecordBatchReader))):
        schema, tables_for = _udf_tables(ds, transforms, read_columns, batch_size)
    else:
        schema, tables_for, check_done = _aligned_tables(ds, transforms, reader_schema)
    _check_new_names(ds, schema.names)
    plan = _with_new_files(ds, schema, tables_for, pbs)
    if check_done is not None:
        try:
            check_done()
        except BaseException:
            from .write import delete_files

            for uri, options in plan.written:
                delete_files([uri], options)
            raise
    return plan


def _null_columns(ds, schema: pa.Schema) -> ColumnPlan:
    _check_new_names(ds, schema.names)
    bad = [f.name for f in schema if not f.nullable]
    if bad:
        raise InvalidArgumentError(f"all-null new columns must be nullable: {bad}")
    fields = fields_from_arrow(schema, start_id=_max_field_id(ds.lance_fields) + 1)
    frags = [FragmentMetadata.from_bytes(pb.SerializeToString()) for pb in ds._fragment_pbs()]
    return ColumnPlan(Merge(frags, list(ds.lance_fields) + fields,
                            schema_metadata=dict(ds.manifest.schema_metadata)))


# -- dropping and altering -------------------------------------------------------------------
def _field_by_path(fields, path: str):
    parent, found = -1, None
    for part in str(path).split("."):
        found = next((f for f in fields if f.parent_id == parent and f.name == part), None)
        if found is None:
            raise InvalidArgumentError(f"Column {path!r} does not exist in the dataset")
        parent = found.id
    return found


def _descendants(fields, fid: int) -> set:
    out = {fid}
    changed = True
    while changed:
        changed = False
        for f in fields:
            if f.parent_id in out and f.id not in out:
                out.add(f.id)
                changed = True
    return out


def _copy_fields(fields) -> list:
    out = []
    for f in fields:
        c = file_pb2.Field()
        c.CopyFrom(f)
        out.append(c)
    return out


def drop_columns(ds, columns) -> ColumnPlan:
    if isinstance(columns, str):
        columns = [columns]
    fields = list(ds.lance_fields)
    gone = set()
    for c in columns:
        gone |= _descendants(fields, _field_by_path(fields, c).id)
    kept = [f for f in _copy_fields(fields) if f.id not in gone]
    if not any(f.parent_id == -1 for f in kept):
        raise InvalidArgumentError("Cannot drop all columns from a dataset")
    return ColumnPlan(Project(kept))


_ALTER_KEYS = {"path", "name", "nullable", "data_type"}


def alter_columns(ds, alterations) -> ColumnPlan:
    fields = _copy_fields(ds.lance_fields)
    by_id = {f.id: f for f in fields}
    casts = {}
    for alt in alterations:
        if not isinstance(alt, dict) or "path" not in alt or set(alt) - _ALTER_KEYS:
            raise InvalidArgumentError(f"an alteration is a dict with 'path' and any of 'name', "
                                       f"'nullable', 'data_type', not {alt!r}")
        f = by_id[_field_by_path(fields, alt["path"]).id]
        if alt.get("name") is not None:
            siblings = [g for g in fields if g.parent_id == f.parent_id and g.id != f.id]
            if any(g.name == alt["name"] for g in siblings):
                raise InvalidArgumentError(f"a column named {alt['name']!r} already exists")
            f.name = alt["name"]
        if alt.get("nullable") is not None:
            if not alt["nullable"] and f.nullable:
                _check_no_nulls(ds, alt["path"])
            f.nullable = bool(alt["nullable"])
        if alt.get("data_type") is not None:
            if f.parent_id != -1:
                raise InvalidArgumentError("only top-level columns can be cast")
            casts[f.id] = alt["data_type"]
    if not casts:
        return ColumnPlan(Project(fields))
    return _cast_plan(ds, fields, casts)


def _check_no_nulls(ds, path: str) -> None:
    top = str(path).split(".")[0]
    for t in ds.to_batches(columns=[top]):
        col = t.column(0)
        for part in str(path).split(".")[1:]:
            col = col.field(part)
        if col.null_count:
            raise InvalidArgumentError(f'Column "{path}" contains NULL values and cannot be made '
                                       "non-nullable")


def _cast_plan(ds, fields, casts: dict) -> ColumnPlan:
    """Rewrite cast columns under new field ids; old ids become tombstones in old files."""
    old_names = {f.id: f.name for f in ds.lance_fields if f.id in casts}
    new_fields = [f for f in fields if f.id not in casts]
    cast_fields = []
    for fid, dtype in casts.items():
        f = next(x for x in fields if x.id == fid)
        cast_fields.append(pa.field(f.name, dtype, nullable=f.nullable))
    schema = pa.schema(cast_fields)
    lance_new = fields_from_arrow(schema, start_id=_max_field_id(ds.lance_fields) + 1)
    writer = _FragmentFileWriter(ds, schema, lance_new)
    source = [old_names[i] for i in casts]
    fragments = []
    try:
        for pb in ds._fragment_pbs():
            def tables(pb=pb):
                for t in _physical_batches(ds, pb, source):
                    try:
                        yield pa.Table.from_arrays(
                            [t.column(n).cast(f.type) for n, f in zip(source, schema)], schema=schema)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                        raise InvalidArgumentError(f"cannot cast: {e}") from None
            df, _ = writer.write(tables())
            meta = FragmentMetadata.from_bytes(pb.SerializeToString())
            keep_ids = {f.id for f in new_fields}
            files = []
            for old in meta.pb.files:
                ids = [TOMBSTONE if i in casts else i for i in old.fields]
                if not any(i in keep_ids for i in ids):
                    continue  # nothing of this file is in the new schema (as Lance drops it)
                c = table_pb2.DataFile()
                c.CopyFrom(old)
                del c.fields[:]
                c.fields.extend(ids)
                files.append(c)
            del meta.pb.files[:]
            meta.pb.files.extend(files)
            meta.pb.files.add().CopyFrom(df)
            fragments.append(meta)
    except BaseException:
        writer.abort()
        raise
    # cast columns keep their position in the schema
    order = []
    new_by_name = {f.name: f for f in lance_new}
    for f in fields:
        if f.id in casts:
            order.append(new_by_name[f.name])
        else:
            order.append(f)
    return ColumnPlan(Merge(fragments, order, schema_metadata=dict(ds.manifest.schema_metadata)),
                      writer.written)


# -- merge (left join) ---------------------------------------------------------------------------
def merge_columns(ds, data, left_on: str, right_on: str, schema=None) -> ColumnPlan:
    """pylance's ``Dataset.merge``: new columns from ``data`` joined on ``left_on == right_on``;
    rows without a match get nulls."""
    right = to_reader(data, schema).read_all()
    if left_on not in ds.schema.names:
        raise InvalidArgumentError(f"no column {left_on!r} in the dataset")
    if right_on not in right.column_names:
        raise InvalidArgumentError(f"no column {right_on!r} in the data to merge")
    new_names = [n for n in right.column_names if n != right_on]
    _check_new_names(ds, new_names)
    new_schema = pa.schema([right.schema.field(n) for n in new_names])
    new_schema = pa.schema([f.with_nullable(True) for f in new_schema])
    keys = right.column(right_on)
    if pa.compute.count_distinct(keys).as_py() != keys.length() - keys.null_count:
        raise InvalidArgumentError(f"the merge key {right_on!r} has duplicate values")
    right = right.select([right_on] + new_names).rename_columns(["__key"] + new_names)

    def tables_for(pb):
        for t in _physical_batches(ds, pb, [left_on]):
            left = pa.table({"__key": t.column(left_on),
                             "__pos": pa.array(np.arange(t.num_rows, dtype=np.int64))})
            joined = left.join(right, "__key", join_type="left outer").sort_by("__pos")
            yield pa.Table.from_arrays([joined.column(n).cast(new_schema.field(n).type)
                                        for n in new_names], schema=new_schema)

    return _with_new_files(ds, new_schema, tables_for)
