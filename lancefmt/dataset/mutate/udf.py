"""``BatchUDF`` / ``batch_udf``: functions computing new columns batch by batch (pylance's)."""
from __future__ import annotations

import pyarrow as pa

from ...errors import InvalidArgumentError


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
                raise InvalidArgumentError("Output schema of function does not match the expected "
                                           f"schema: {e}") from None
        return out


def batch_udf(output_schema: pa.Schema | None = None, checkpoint_file=None):
    """Decorator making a :class:`BatchUDF` (``lance.batch_udf``'s signature)."""

    def wrap(func):
        return BatchUDF(func, output_schema, checkpoint_file)

    return wrap
