"""Normalise what users pass to ``write_dataset`` / ``write_fragments`` into one stream.

JSON columns (``pa.json_()``) leave as Lance stores them: JSONB ``lance.json`` columns.

Accepted, as in pylance: ``pa.Table``, ``pa.RecordBatch``, ``pa.RecordBatchReader``, an iterable
of ``pa.RecordBatch`` (with ``schema=`` or taking the first batch's), a pandas DataFrame, and
anything with ``__arrow_c_stream__`` (polars, duckdb results...). The result is a
``RecordBatchReader``, so a 10 GB input never has to be in memory at once.
"""
from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa

from ...errors import InvalidArgumentError
from ...jsonb.arrow import encode_reader


def _cast_reader(reader: pa.RecordBatchReader, schema: pa.Schema) -> pa.RecordBatchReader:
    if reader.schema.equals(schema, check_metadata=False):
        return reader

    def cast():
        for batch in reader:
            yield batch.cast(schema)

    try:
        pa.Table.from_batches([], reader.schema).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
        raise InvalidArgumentError(f"data does not match the schema: {e}") from None
    return pa.RecordBatchReader.from_batches(schema, cast())


def to_reader(data: Any, schema: pa.Schema | None = None) -> pa.RecordBatchReader:
    """A RecordBatchReader over ``data`` (cast to ``schema`` when one is given)."""
    if isinstance(data, pa.RecordBatchReader):
        reader = data
    elif isinstance(data, pa.Table):
        reader = data.to_reader()
    elif isinstance(data, pa.RecordBatch):
        reader = pa.RecordBatchReader.from_batches(data.schema, [data])
    elif _is_pandas(data):
        table = pa.Table.from_pandas(data, schema=schema, preserve_index=False)
        reader = table.to_reader()
    elif hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
    elif isinstance(data, dict):
        reader = pa.table(data).to_reader()
    elif hasattr(data, "__iter__"):
        it = iter(data)
        if schema is None:
            try:
                first = next(it)
            except StopIteration:
                raise InvalidArgumentError("an empty iterable of batches needs schema=") from None
            first = _as_batch(first)
            reader = pa.RecordBatchReader.from_batches(
                first.schema, itertools.chain([first], (_as_batch(b) for b in it)))
        else:
            reader = pa.RecordBatchReader.from_batches(schema, (_as_batch(b) for b in it))
    else:
        raise InvalidArgumentError(f"cannot write data of type {type(data).__name__}")
    if schema is not None:
        reader = _cast_reader(reader, schema)
    return encode_reader(reader)  # arrow.json columns -> JSONB, as Lance stores them


def _as_batch(obj) -> pa.RecordBatch:
    if isinstance(obj, pa.RecordBatch):
        return obj
    if isinstance(obj, pa.Table):
        return obj.combine_chunks().to_batches()[0] if obj.num_rows else \
            pa.RecordBatch.from_pylist([], schema=obj.schema)
    raise InvalidArgumentError(f"expected pyarrow RecordBatches, got {type(obj).__name__}")


def _is_pandas(data) -> bool:
    mod = type(data).__module__
    return mod.startswith("pandas") and type(data).__name__ == "DataFrame"
