"""``arrow.json`` columns (what users write and read) <-> Lance JSON columns (what is stored).

A stored JSON field is ``large_binary`` with ``ARROW:extension:name = lance.json``; users see
``pa.json_()`` (``arrow.json`` over utf8). Writes convert at the input, reads at the output,
at any depth inside structs and lists, as pylance does; everything in between (filters,
compaction, updates) works on the stored JSONB.
"""
from __future__ import annotations

import pyarrow as pa

from .codec import ARROW_JSON_EXT_NAME, LANCE_JSON_EXT_NAME, decode_array, encode_array

EXT_NAME = b"ARROW:extension:name"
EXT_META = b"ARROW:extension:metadata"


def _ext_name(field: pa.Field) -> str | None:
    if isinstance(field.type, pa.BaseExtensionType):
        return field.type.extension_name
    name = (field.metadata or {}).get(EXT_NAME)
    return name.decode("utf-8", "replace") if name is not None else None


def is_arrow_json(field: pa.Field) -> bool:
    """A user JSON column: ``pa.json_()`` or utf8 tagged ``arrow.json``."""
    storage = field.type.storage_type if isinstance(field.type, pa.BaseExtensionType) else field.type
    return _ext_name(field) == ARROW_JSON_EXT_NAME and (
        pa.types.is_string(storage) or pa.types.is_large_string(storage))


def is_lance_json(field: pa.Field) -> bool:
    """A stored JSON column (large_binary tagged ``lance.json``)."""
    return pa.types.is_large_binary(field.type) and _ext_name(field) == LANCE_JSON_EXT_NAME


def _children(dtype: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(dtype):
        return [dtype.field(i) for i in range(dtype.num_fields)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or \
            pa.types.is_fixed_size_list(dtype):
        return [dtype.value_field]
    return []


def _has(field: pa.Field, pred) -> bool:
    return pred(field) or any(_has(c, pred) for c in _children(field.type))


def schema_has_arrow_json(schema: pa.Schema) -> bool:
    return any(_has(f, is_arrow_json) for f in schema)


_LARGE_BINARY = pa.large_binary().id
_NESTED = frozenset(t.id for t in (pa.struct([]), pa.list_(pa.int8()), pa.large_list(pa.int8()),
                                   pa.list_(pa.int8(), 1)))


def schema_has_lance_json(schema: pa.Schema) -> bool:
    # asked on every read (an indexed look-up asks twice): plain columns are told apart by
    # their type id, only nested ones are walked
    for f in schema:
        tid = f.type.id
        if tid == _LARGE_BINARY and is_lance_json(f) or tid in _NESTED and _has(f, is_lance_json):
            return True
    return False


def _plain_metadata(field: pa.Field) -> dict:
    return {k: v for k, v in (field.metadata or {}).items() if k not in (EXT_NAME, EXT_META)}


def _rebuild_type(dtype: pa.DataType, convert) -> pa.DataType:
    if pa.types.is_struct(dtype):
        return pa.struct([convert(c) for c in _children(dtype)])
    if pa.types.is_list(dtype):
        return pa.list_(convert(dtype.value_field))
    if pa.types.is_large_list(dtype):
        return pa.large_list(convert(dtype.value_field))
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(convert(dtype.value_field), dtype.list_size)
    return dtype


def stored_field(field: pa.Field) -> pa.Field:
    """The field as Lance stores it (JSON columns -> ``lance.json`` large_binary)."""
    if is_arrow_json(field):
        md = _plain_metadata(field)
        md.update({EXT_NAME: LANCE_JSON_EXT_NAME.encode(), EXT_META: b""})
        return pa.field(field.name, pa.large_binary(), field.nullable, md)
    if not _children(field.type):
        return field
    return field.with_type(_rebuild_type(field.type, stored_field))


def user_field(field: pa.Field) -> pa.Field:
    """The field as pylance shows it (stored JSON columns -> ``arrow.json``)."""
    if is_lance_json(field):
        return pa.field(field.name, pa.json_(pa.utf8()), field.nullable,
                        _plain_metadata(field) or None)
    if not _children(field.type):
        return field
    return field.with_type(_rebuild_type(field.type, user_field))


def stored_schema(schema: pa.Schema) -> pa.Schema:
    if not schema_has_arrow_json(schema):
        return schema
    return pa.schema([stored_field(f) for f in schema], metadata=schema.metadata)


def user_schema(schema: pa.Schema) -> pa.Schema:
    if not schema_has_lance_json(schema):
        return schema
    return pa.schema([user_field(f) for f in schema], metadata=schema.metadata)


# -- arrays -------------------------------------------------------------------------------------


def _convert(arr: pa.Array, field: pa.Field, pred, leaf, new_field) -> pa.Array:
    if pred(field):
        return leaf(arr)
    if not _has(field, pred):
        return arr
    target = new_field(field).type
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([_convert(c, field, pred, leaf, new_field) for c in arr.chunks],
                                target)
    dtype = field.type
    if pa.types.is_struct(dtype):
        kids = [_convert(arr.field(i), dtype.field(i), pred, leaf, new_field)
                for i in range(dtype.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(target), mask=arr.is_null()
                                          if arr.null_count else None)
    values = _convert(arr.values, dtype.value_field, pred, leaf, new_field)
    if pa.types.is_fixed_size_list(dtype):
        return pa.FixedSizeListArray.from_arrays(values, type=target,
                                                 mask=arr.is_null() if arr.null_count else None)
    cls = pa.LargeListArray if pa.types.is_large_list(dtype) else pa.ListArray
    return cls.from_arrays(arr.offsets, values, type=target,
                           mask=arr.is_null() if arr.null_count else None)


def _to_jsonb(arr):
    return encode_array(arr)


def _to_json(arr):
    storage = decode_array(arr, pa.utf8())
    if isinstance(storage, pa.ChunkedArray):
        return pa.chunked_array([pa.ExtensionArray.from_storage(pa.json_(pa.utf8()), c)
                                 for c in storage.chunks], pa.json_(pa.utf8()))
    return pa.ExtensionArray.from_storage(pa.json_(pa.utf8()), storage)


def encode_batch(batch):
    """A RecordBatch/Table with JSON columns as Lance stores them (JSON text -> JSONB)."""
    if not schema_has_arrow_json(batch.schema):
        return batch
    arrays = [_convert(col, f, is_arrow_json, _to_jsonb, stored_field)
              for col, f in zip(batch.columns, batch.schema)]
    schema = stored_schema(batch.schema)
    if isinstance(batch, pa.Table):
        return pa.Table.from_arrays(arrays, schema=schema)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


class BatchDecoder:
    """:func:`decode_batch` for the batches of one scan: which columns hold stored JSON is
    decided once per batch schema, not walked again for every batch and column."""

    def __init__(self, schema: pa.Schema):
        self._json = {f.name: f for f in schema if _has(f, is_lance_json)}
        self._schema = None  # the batch schema planned for
        self._plan: list = []
        self._out = None

    def _replan(self, schema: pa.Schema) -> None:
        plan, fields = [], []
        for i, f in enumerate(schema):
            ref = self._json.get(f.name)
            if ref is not None and ref.type.equals(f.type):
                plan.append((i, ref))
                f = user_field(ref)
            fields.append(f)
        self._schema, self._plan = schema, plan
        self._out = pa.schema(fields, metadata=schema.metadata)

    def __call__(self, batch):
        schema = batch.schema
        if self._schema is None or not schema.equals(self._schema, check_metadata=True):
            self._replan(schema)
        if not self._plan:
            return batch
        arrays = batch.columns
        for i, ref in self._plan:
            arrays[i] = _convert(arrays[i], ref, is_lance_json, _to_json, user_field)
        if isinstance(batch, pa.Table):
            return pa.Table.from_arrays(arrays, schema=self._out)
        return pa.RecordBatch.from_arrays(arrays, schema=self._out)


def batch_decoder(schema: pa.Schema) -> BatchDecoder | None:
    """A decoder for batches whose stored schema is ``schema``; None when it holds no JSON
    column (the batches pass through as they are)."""
    return BatchDecoder(schema) if schema_has_lance_json(schema) else None


def decode_batch(batch, schema: pa.Schema | None = None):
    """A RecordBatch/Table with stored JSON columns as pylance returns them (``arrow.json``).
    ``schema``: the stored schema that says which columns are JSON (a scan's batches may
    have lost the field metadata); by default the batch's own. Columns it does not name are
    left alone."""
    decoder = batch_decoder(batch.schema if schema is None else schema)
    return batch if decoder is None else decoder(batch)


def encode_reader(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """A reader whose JSON columns are converted batch by batch (as stored)."""
    if not schema_has_arrow_json(reader.schema):
        return reader
    return pa.RecordBatchReader.from_batches(stored_schema(reader.schema),
                                             (encode_batch(b) for b in reader))
