"""Dropping and altering columns (pylance's ``drop_columns`` / ``alter_columns``).

``drop_columns`` is a Project (data files stay, a file whose fields are all gone is dropped);
a rename or a nullability change is a Project too; a cast writes the column again under a new
field id and tombstones (-2) the old id in the old files, in one Merge.
"""
from __future__ import annotations

import pyarrow as pa

from ..._proto import table_pb2
from ...errors import InvalidArgumentError
from ...file.schema import fields_from_arrow
from ...table.fragment import FragmentMetadata
from ...table.transaction import Merge, Project
from ..core.indices import index_entries
from ..core.plan import CommitPlan
from ..read.scan import ScanSpec, scan_batches
from .column_files import (
    TOMBSTONE, FragmentFileWriter, copy_fields, descendants, field_by_path, max_field_id,
    physical_batches,
)


def drop_columns(snapshot, columns) -> CommitPlan:
    if isinstance(columns, str):
        columns = [columns]
    fields = list(snapshot.lance_fields)
    gone = set()
    for c in columns:
        gone |= descendants(fields, field_by_path(fields, c).id)
    kept = [f for f in copy_fields(fields) if f.id not in gone]
    if not any(f.parent_id == -1 for f in kept):
        raise InvalidArgumentError("Cannot drop all columns from a dataset")
    return CommitPlan(Project(kept))


_ALTER_KEYS = {"path", "name", "nullable", "data_type"}


_RUST_NAMES = {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
               "uint8": "UInt8", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
               "float": "Float32", "double": "Float64", "halffloat": "Float16"}


def cast_error(table, source, schema, error) -> str:
    """pylance's wording for a failed cast (``Can't cast value 1024 to type Int8``), naming
    the first value that does not fit; Arrow's message when none is found."""
    for name, field in zip(source, schema):
        for value in table.column(name).to_pylist():
            try:
                pa.array([value]).cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                kind = _RUST_NAMES.get(str(field.type), str(field.type))
                return f"Can't cast value {value} to type {kind} (column {field.name!r})"
    return f"cannot cast: {error}"


def alter_columns(snapshot, alterations) -> CommitPlan:
    fields = copy_fields(snapshot.lance_fields)
    by_id = {f.id: f for f in fields}
    casts = {}
    for alt in alterations:
        if not isinstance(alt, dict) or "path" not in alt or set(alt) - _ALTER_KEYS:
            raise InvalidArgumentError(f"an alteration is a dict with 'path' and any of 'name', "
                                       f"'nullable', 'data_type', not {alt!r}")
        f = by_id[field_by_path(fields, alt["path"]).id]
        if alt.get("name") is not None:
            siblings = [g for g in fields if g.parent_id == f.parent_id and g.id != f.id]
            if any(g.name == alt["name"] for g in siblings):
                raise InvalidArgumentError(f"a column named {alt['name']!r} already exists")
            f.name = alt["name"]
        if alt.get("nullable") is not None:
            if not alt["nullable"] and f.nullable:
                _check_no_nulls(snapshot, alt["path"])
            f.nullable = bool(alt["nullable"])
        if alt.get("data_type") is not None:
            if f.parent_id != -1:
                raise InvalidArgumentError("only top-level columns can be cast")
            casts[f.id] = alt["data_type"]
    if not casts:
        return CommitPlan(Project(fields))
    _refuse_indexed_casts(snapshot, casts)
    return _cast_plan(snapshot, fields, casts)


def _refuse_indexed_casts(snapshot, casts: dict) -> None:
    """A cast rewrites the column and would leave its indices answering for old values:
    refused, as pylance refuses it (drop the index first)."""
    indexed = sorted({e.name for e in index_entries(snapshot) if set(e.fields) & set(casts)})
    if indexed:
        names = [f.name for f in snapshot.lance_fields if f.id in casts]
        raise InvalidArgumentError(
            f"Cannot cast column(s) [{', '.join(names)}] to a new type: they have "
            f"{len(indexed)} index(es) attached: [{', '.join(indexed)}]. Cast rewrites column "
            f"data and invalidates any index on the affected column(s). Drop the index(es) with "
            f"drop_index() before altering, then recreate them after the cast completes.")


def _check_no_nulls(snapshot, path: str) -> None:
    top = str(path).split(".")[0]
    for t in scan_batches(snapshot.ctx, snapshot.fragment_pbs(), ScanSpec.build(snapshot.schema, [top])):
        col = t.column(0)
        for part in str(path).split(".")[1:]:
            col = col.field(part)
        if col.null_count:
            raise InvalidArgumentError(f'Column "{path}" contains NULL values and cannot be made '
                                       "non-nullable")


def _cast_plan(snapshot, fields, casts: dict) -> CommitPlan:
    """Rewrite cast columns under new field ids; old ids become tombstones in old files."""
    old_names = {f.id: f.name for f in snapshot.lance_fields if f.id in casts}
    new_fields = [f for f in fields if f.id not in casts]
    cast_fields = []
    for fid, dtype in casts.items():
        f = next(x for x in fields if x.id == fid)
        cast_fields.append(pa.field(f.name, dtype, nullable=f.nullable))
    schema = pa.schema(cast_fields)
    lance_new = fields_from_arrow(schema, start_id=max_field_id(snapshot.lance_fields) + 1)
    writer = FragmentFileWriter(snapshot, schema, lance_new)
    source = [old_names[i] for i in casts]
    fragments = []
    try:
        for pb in snapshot.fragment_pbs():
            def tables(pb=pb):
                for t in physical_batches(snapshot, pb, source):
                    try:
                        yield pa.Table.from_arrays(
                            [t.column(n).cast(f.type) for n, f in zip(source, schema)], schema=schema)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                        raise InvalidArgumentError(cast_error(t, source, schema, e)) from None
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
    return CommitPlan(Merge(fragments, order, schema_metadata=dict(snapshot.manifest.schema_metadata)),
                      writer.written)
