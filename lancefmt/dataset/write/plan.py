"""What a write produces, decided before any file is written: schema, Lance fields, storage
version, bases, and the input conformed to the dataset's schema on append."""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ...errors import (
    DatasetExistsError, DatasetNotFoundError, InvalidArgumentError, InvalidInputError,
    UnsupportedFeatureError,
)
from ...file.format import write_version_name
from ...file.schema import arrow_from_fields, fields_from_arrow, storage_schema
from ...io import open_store
from ...table.base_paths import BasePath, assign_base_ids
from ...table.manifest_stores import as_manifest_store
from ...table.versions import latest_manifest, load_manifest
from ..core.base_options import as_base_paths
from .blobs import blob_v2_columns, blob_v2_schema, input_schema
from .input import to_reader

WRITABLE_STORAGE_VERSIONS = ("0.1", "2.0", "2.1", "2.2")


def existing_manifest(uri: str, store):
    """The latest manifest of the dataset at ``uri``, or None if there is none."""
    try:
        loc = latest_manifest(uri, store=store)
    except DatasetNotFoundError:
        return None
    return load_manifest(uri, loc.version, store=store)


def check_storage_version(version: str | None) -> str:
    """pylance's names (None / "stable" -> 2.2, "legacy"/"0.1" -> 0.1) -> the version written."""
    version = write_version_name(version)
    if version not in WRITABLE_STORAGE_VERSIONS:
        raise UnsupportedFeatureError(
            f"lancefmt writes data storage version(s) {', '.join(WRITABLE_STORAGE_VERSIONS)}, "
            f"not {version}")
    return version


def appended_fields(fields: list, data_schema: pa.Schema) -> list:
    """The dataset fields an append writes: all of them, or (as pylance allows) only the
    top-level columns the data has when every missing one is nullable; fragments without a
    column's data file read it as nulls."""
    top = [f for f in fields if f.parent_id == -1]
    names = set(data_schema.names)
    missing = [f for f in top if f.name not in names]
    if not missing or not names <= {f.name for f in top}:
        return fields
    required = [f.name for f in missing if not f.nullable]
    if required:
        raise InvalidArgumentError(f"appended data lacks non-nullable column(s) {required}")
    dropped = {f.id for f in missing}
    changed = True
    while changed:
        changed = False
        for f in fields:
            if f.parent_id in dropped and f.id not in dropped:
                dropped.add(f.id)
                changed = True
    return [f for f in fields if f.id not in dropped]


def conform(reader: pa.RecordBatchReader, schema: pa.Schema) -> pa.RecordBatchReader:
    """Check appended data against the dataset schema and reorder/cast it to that schema."""
    have = reader.schema
    if set(have.names) != set(schema.names) or len(have.names) != len(schema.names):
        raise InvalidInputError(
            f"appended data has columns {have.names}, the dataset has {schema.names}")
    mismatched = [n for n in schema.names
                  if not storage_schema(pa.schema([have.field(n)])).field(0).type.equals(
                      storage_schema(pa.schema([schema.field(n)])).field(0).type)]
    if mismatched:
        detail = ", ".join(f"{n}: {have.field(n).type} vs {schema.field(n).type}" for n in mismatched)
        raise InvalidInputError(f"appended data does not match the dataset schema ({detail})")
    required = [n for n in schema.names if not schema.field(n).nullable]

    def batches():
        for b in reader:
            b = b.select(schema.names) if b.schema.names != schema.names else b
            for n in required:
                if b.column(n).null_count:
                    raise InvalidArgumentError(f"column {n!r} is not nullable but the data has nulls")
            yield pa.RecordBatch.from_arrays(b.columns, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


@dataclass
class WritePlan:
    """What a write produces, decided before any file is written."""

    uri: str
    existing: object           # ManifestFile or None
    schema: pa.Schema
    fields: list
    storage_version: str
    bases: list                # BasePaths known to the write (existing + initial)
    reader: pa.RecordBatchReader


def plan_write(data, uri, mode, schema, data_storage_version, initial_bases, storage_options,
          manifest_store=None) -> WritePlan:
    if mode not in ("create", "append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'create', 'append' or 'overwrite', not {mode!r}")
    store = open_store(uri, storage_options, as_manifest_store(manifest_store))
    existing = existing_manifest(uri, store)
    if existing is not None:
        existing.check_writable()
    if mode == "create" and existing is not None:
        raise DatasetExistsError(f"a Lance dataset already exists at {uri} (use mode='append' or 'overwrite')")
    reader = to_reader(data, schema)
    if existing is not None and mode == "append":
        if initial_bases:
            raise InvalidArgumentError("Cannot register new bases in Append mode: "
                                       "initial_bases can only be given when creating a dataset")
        header = existing.header
        fields = list(header.fields)
        blobs = blob_v2_columns(fields)
        if not blobs:
            fields = appended_fields(fields, reader.schema)
        ds_schema = arrow_from_fields(fields, dict(header.schema_metadata) or None)
        if blobs:
            ds_schema = input_schema(ds_schema, blobs)
        version = existing.data_storage_version
        check_storage_version(version)
        bases = [BasePath.from_pb(b) for b in header.base_paths]
        return WritePlan(uri, existing, ds_schema, fields, version, bases, conform(reader, ds_schema))
    new_schema = reader.schema
    if existing is not None:  # overwrite keeps the storage version unless one is asked for
        version = check_storage_version(data_storage_version or existing.data_storage_version)
        if initial_bases:
            raise InvalidArgumentError("Cannot register new bases when overwriting: "
                                       "initial_bases can only be given when creating a dataset")
        bases = [BasePath.from_pb(b) for b in existing.header.base_paths]
    else:
        version = check_storage_version(data_storage_version)
        bases = assign_base_ids([], as_base_paths(initial_bases))
    fields = fields_from_arrow(blob_v2_schema(new_schema, version))
    return WritePlan(uri, existing, new_schema, fields, version, bases, reader)


