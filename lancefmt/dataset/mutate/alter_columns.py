"""Dropping and altering columns (pylance's ``drop_columns`` / ``alter_columns``).

``drop_columns`` is a Project (data files stay, a file whose fields are all gone is dropped);
a rename or a nullability change is a Project too; a cast writes the column again under a new
field id and tombstones (-2) the old id in the old files, in one Merge.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

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


def _same_kind(src: pa.DataType, dst: pa.DataType) -> bool:
    """Lance's ``is_upcast_downcast``: a cast stays within its kind (integers, floats,
    temporal types, strings, binaries, decimals; lists of such, element-wise)."""
    t = pa.types
    kinds = [t.is_integer, t.is_floating, t.is_temporal, t.is_boolean,
             lambda x: t.is_string(x) or t.is_large_string(x),
             lambda x: t.is_binary(x) or t.is_large_binary(x), t.is_decimal]
    for kind in kinds:
        if kind(src):
            return kind(dst)
    lists = (t.is_list, t.is_large_list, t.is_fixed_size_list)
    if any(k(src) for k in lists):
        return any(k(dst) for k in lists) and _same_kind(src.value_type, dst.value_type)
    return False


def _rust_type(dt: pa.DataType) -> str:
    """A type as Lance's messages print it (Rust's Debug of Arrow's DataType), for the
    common ones; Arrow's name otherwise."""
    t = pa.types
    if dt in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.bool_(),
              pa.date32(), pa.date64()):
        return {"string": "Utf8", "large_string": "LargeUtf8", "binary": "Binary",
                "large_binary": "LargeBinary", "bool": "Boolean", "date32[day]": "Date32",
                "date64[ms]": "Date64"}[str(dt)]
    if t.is_timestamp(dt):
        unit = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}[dt.unit]
        return f"Timestamp({unit}, {'None' if dt.tz is None else f'Some({chr(34)}{dt.tz}{chr(34)})'})"
    if (t.is_list(dt) or t.is_large_list(dt)) and dt.value_field.name == "item":
        kind = "List" if t.is_list(dt) else "LargeList"
        return (f"{kind}(Field {{ data_type: {_rust_type(dt.value_type)}, "
                f"nullable: {str(dt.value_field.nullable).lower()} }})")
    return _RUST_NAMES.get(str(dt), str(dt))


def alter_columns(snapshot, alterations) -> CommitPlan:
    fields = copy_fields(snapshot.lance_fields)
    by_id = {f.id: f for f in fields}
    casts = {}
    for alt in alterations:
        if not isinstance(alt, dict) or "path" not in alt:
            raise InvalidArgumentError(f"an alteration is a dict with 'path' and any of 'name', "
                                       f"'nullable', 'data_type', not {alt!r}")
        unknown = sorted(set(alt) - _ALTER_KEYS)
        if unknown:
            raise InvalidArgumentError(f"Unknown key: {unknown[0]}. Valid keys are name, "
                                       f"nullable, and data_type.")
        if all(alt.get(k) is None for k in ("name", "nullable", "data_type")):
            raise InvalidArgumentError("At least one of name, nullable, or data_type must be "
                                       "specified")
        f = by_id[field_by_path(fields, alt["path"], quote='"').id]
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
            src = snapshot.schema.field(old_name(snapshot, f.id)).type
            if not _same_kind(src, alt["data_type"]):
                raise InvalidArgumentError(f'Cannot cast column "{alt["path"]}" from '
                                           f'{_rust_type(src)} to {_rust_type(alt["data_type"])}')
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


def _cast(column, dtype: pa.DataType):
    """Arrow-rs's checked cast, as Lance casts: an integer that does not fit fails, a finer
    time unit is truncated to a coarser one."""
    return pc.cast(column, options=pc.CastOptions(dtype, allow_time_truncate=True))


def old_name(snapshot, fid: int) -> str:
    return next(f.name for f in snapshot.lance_fields if f.id == fid)


def _cast_plan(snapshot, fields, casts: dict) -> CommitPlan:
    """Rewrite cast columns under new field ids; old ids (a list's children too) become
    tombstones in old files."""
    old_names = {f.id: f.name for f in snapshot.lance_fields if f.id in casts}
    gone = set().union(*(descendants(fields, fid) for fid in casts))
    new_fields = [f for f in fields if f.id not in gone]
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
                            [_cast(t.column(n), f.type) for n, f in zip(source, schema)], schema=schema)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                        raise InvalidArgumentError(cast_error(t, source, schema, e)) from None
            df, _ = writer.write(tables())
            meta = FragmentMetadata.from_bytes(pb.SerializeToString())
            keep_ids = {f.id for f in new_fields}
            files = []
            for old in meta.pb.files:
                ids = [TOMBSTONE if i in gone else i for i in old.fields]
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
    # cast columns (with their new children) keep their position in the schema
    order = []
    new_tops = {f.name: f for f in lance_new if f.parent_id == -1}
    for f in fields:
        if f.id in casts:
            top = new_tops[f.name]
            below = descendants(lance_new, top.id)
            order.extend(g for g in lance_new if g.id in below)
        elif f.id not in gone:
            order.append(f)
    return CommitPlan(Merge(fragments, order, schema_metadata=dict(snapshot.manifest.schema_metadata)),
                      writer.written)
