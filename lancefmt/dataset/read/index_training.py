"""The column an index is built from, as :class:`~lancefmt.index.core.registry.TrainingData`.

A column (a top-level name, or a path into structs such as ``st.a``) of the chosen fragments
is scanned with its row ids and row addresses; deleted rows are left out, as in any scan. The
dataset scan's thread pool reads the fragments in parallel.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidArgumentError
from ...index.core.registry import ROW_ADDRESS, ROW_ID, VALUE, TrainingData
from .scan import ScanSpec, scan_batches


def column_field(schema: pa.Schema, column: str) -> tuple[pa.Field, list]:
    """The Arrow field at ``column`` (``a`` or ``a.b.c``; case-insensitive when unambiguous)
    and its path of names as the schema spells them. KeyError when absent (as pylance)."""
    parts = column.split(".")
    fields = list(schema)
    path = []
    field = None
    for part in parts:
        match = [f for f in fields if f.name == part] or \
            [f for f in fields if f.name.lower() == part.lower()]
        if len(match) != 1:
            raise _missing(column)
        field = match[0]
        path.append(field.name)
        if pa.types.is_struct(field.type):
            fields = [field.type.field(i) for i in range(field.type.num_fields)]
        else:
            fields = []
    if field is None:
        raise _missing(column)
    return field, path


class ColumnNotFoundError(InvalidArgumentError, KeyError):
    """pylance raises KeyError for an index on a column the schema lacks."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def _missing(column: str) -> ColumnNotFoundError:
    return ColumnNotFoundError(f"{column} not found in schema")


def storage_field(field: pa.Field) -> pa.Field:
    """The field an index sees: an extension column's storage (pylance's BTREE on a ``uuid``
    column holds ``fixed_size_binary(16)`` values)."""
    t = field.type
    return field.with_type(t.storage_type) if isinstance(t, pa.BaseExtensionType) else field


def training_data(snapshot, column: str, pbs) -> TrainingData:
    """``column`` of fragments ``pbs`` with ``_rowid`` and ``_rowaddr`` (an extension column's
    storage values, see :func:`storage_field`)."""
    field, path = column_field(snapshot.schema, column)
    field = storage_field(field)
    ctx = snapshot.ctx
    spec = ScanSpec.build(ctx.schema, [path[0]], None, True, True)
    out_schema = pa.schema([pa.field(VALUE, field.type), pa.field(ROW_ID, pa.uint64()),
                            pa.field(ROW_ADDRESS, pa.uint64())])

    def shaped(batches):
        for b in batches:
            value = b.column(0)
            for name in path[1:]:
                value = pc.struct_field(value, [value.type.get_field_index(name)])
            if isinstance(value, pa.ExtensionArray):
                value = value.storage
            yield pa.RecordBatch.from_arrays([value, b.column(ROW_ID), b.column(ROW_ADDRESS)],
                                             schema=out_schema)

    by_id = {int(pb.id): pb for pb in pbs}

    def one(fid):
        return shaped(scan_batches(ctx, [by_id[fid]], spec))

    def every():
        return shaped(scan_batches(ctx, list(pbs), spec))

    return TrainingData(field.with_name(column), [(int(pb.id), int(pb.physical_rows)) for pb in pbs],
                        one, snapshot.has_stable_row_ids, every)
