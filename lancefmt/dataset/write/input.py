"""Normalise what users pass to ``write_dataset`` / ``write_fragments`` into one stream.

JSON columns (``pa.json_()``) leave as Lance stores them: JSONB ``lance.json`` columns.

Accepted, as in pylance: ``pa.Table``, ``pa.RecordBatch``, ``pa.RecordBatchReader``, a
``pyarrow.dataset.Scanner``, a list of row dicts, an iterable of ``pa.RecordBatch`` (with
``schema=``, each batch cast to it, or taking the first batch's), a pandas DataFrame, and
anything with ``__arrow_c_stream__`` (polars, duckdb results...). The result is a
``RecordBatchReader``, so a 10 GB input never has to be in memory at once.
"""
from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

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
    elif isinstance(data, pads.Scanner):  # a pyarrow (or lancefmt) scan, streamed
        reader = data.to_reader()
    elif isinstance(data, dict):
        reader = pa.table(data).to_reader()
    elif isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        reader = pa.Table.from_pylist(data, schema=schema).to_reader()  # rows, as pylance
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
            reader = pa.RecordBatchReader.from_batches(schema, (_conform(_as_batch(b), schema)
                                                                for b in it))
    else:
        raise InvalidArgumentError(f"cannot write data of type {type(data).__name__}")
    if schema is not None:
        reader = _cast_reader(reader, schema)
    return encode_reader(reader)  # arrow.json columns -> JSONB, as Lance stores them


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch of an iterable given with ``schema=`` cast to it (int32 values into an int64
    column), as pylance casts them."""
    if batch.schema.equals(schema, check_metadata=False):
        return batch
    try:
        return batch.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
        raise InvalidArgumentError(f"batch does not match the schema: {e}") from None


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
