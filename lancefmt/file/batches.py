"""Decoded columns -> the Arrow table or batch a reader returns (shared by the 2.x and the
legacy readers)."""
from __future__ import annotations

import pyarrow as pa

from .projection import Projection


def output_table(arrays, proj: Projection, num_rows: int) -> pa.Table:
    """The decoded (storage) columns as the projection's schema, extension types restored."""
    out = list(arrays)
    for i, target in proj.restored:
        out[i] = _to_extension(out[i], target)
    if not out:  # no columns, but the row count still matters (replace_schema_metadata
        # would drop it: build the table with its metadata instead)
        return pa.table({"_": pa.nulls(num_rows)}, metadata=proj.schema.metadata).drop_columns(["_"])
    return pa.Table.from_arrays(out, schema=proj.schema)


def _to_extension(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if isinstance(target, pa.BaseExtensionType) and col.type.equals(target.storage_type):
        return pa.chunked_array([pa.ExtensionArray.from_storage(target, c) for c in col.chunks],
                                type=target)
    return col.cast(target)


def combine_batch(table: pa.Table) -> pa.RecordBatch:
    """One RecordBatch of a (small) table, concatenating chunks only when a column has several."""
    if not table.num_columns:  # keep the row count of a column-less read
        return pa.record_batch({"_": pa.nulls(table.num_rows)},
                               metadata=table.schema.metadata).drop_columns(["_"])
    if all(c.num_chunks == 1 for c in table.columns):
        return pa.RecordBatch.from_arrays([c.chunk(0) for c in table.columns], schema=table.schema)
    return table.combine_chunks().to_batches()[0] if table.num_rows else \
        pa.RecordBatch.from_pylist([], schema=table.schema)
