"""Scan projections as pylance takes them: a list of column names or nested paths
(``"st.small"``), or a dict of output name -> SQL expression (``{"twice": "id * 2"}``).

The scan reads the top-level columns the projection needs (:class:`ScanSpec` columns); when
the output is more than a selection of top-level columns, each window of batches is then
evaluated into the output columns with pyarrow compute.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ...errors import InvalidArgumentError
from ...sql.translate import META_COLUMNS, expression_type, parse_typed_expression, referenced_columns


@dataclass(frozen=True)
class Projection:
    read_columns: tuple           # top-level columns (and _rowid/_rowaddr) the scan must return
    outputs: tuple | None         # ((name, expression), ...) or None: read_columns as they are
    schema: pa.Schema             # output schema (without with_row_id/address extras)
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def computed(self) -> bool:
        return self.outputs is not None

    def apply(self, batch: pa.RecordBatch, extras=()) -> pa.RecordBatch:
        """The output columns of one scanned batch (``extras``: metadata columns kept as is)."""
        if self.outputs is None:
            return batch
        if batch.num_rows == 0:
            return pa.RecordBatch.from_pylist([], schema=self.output_schema(extras))
        out = self._evaluate(pa.Table.from_batches([batch]), extras)
        return out.combine_chunks().to_batches()[0] if out.num_rows else \
            pa.RecordBatch.from_pylist([], schema=out.schema)

    def apply_window(self, batches: list, extras=()) -> list:
        """:meth:`apply` for a window's batches (a list, as scans hand them over) in one
        evaluation: an Arrow dataset is built per window, not per batch, and the batches keep
        their boundaries."""
        if self.outputs is None or not batches:
            return batches
        return self._evaluate(pa.Table.from_batches(batches), extras).to_batches()

    def _evaluate(self, table: pa.Table, extras) -> pa.Table:
        schema = self.output_schema(extras)
        out = pads.dataset(table).to_table(columns=self._columns(extras))
        return out if out.schema.equals(schema) else out.cast(schema)

    def _columns(self, extras) -> dict:
        key = ("columns", tuple(extras))
        cols = self._memo.get(key)
        if cols is None:
            cols = {name: e for name, e in self.outputs}
            for x in extras:
                cols[x] = pc.field(x)
            self._memo[key] = cols
        return cols

    def output_schema(self, extras=()) -> pa.Schema:
        key = ("schema", tuple(extras))
        schema = self._memo.get(key)
        if schema is None:  # once per scan, not per batch
            fields = list(self.schema)
            for x in extras:
                fields.append(pa.field(x, META_COLUMNS[x]))
            schema = self._memo[key] = pa.schema(fields, metadata=self.schema.metadata)
        return schema


def _nested(schema: pa.Schema, path: str):
    """(field path, type) of a dotted nested column, or None."""
    parts = path.split(".")
    if len(parts) < 2 or schema.get_field_index(parts[0]) < 0:
        return None
    t = schema.field(parts[0]).type
    for p in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(p) < 0:
            return None
        t = t.field(t.get_field_index(p)).type
    return parts, t


def build_projection(schema: pa.Schema, columns) -> Projection:
    """The projection for ``columns`` (None = every column) over the dataset ``schema``."""
    if columns is None:
        return Projection(tuple(schema.names), None, schema)
    if isinstance(columns, str):
        raise InvalidArgumentError(
            f"columns must be a list or dict[name, expression], got {type(columns).__name__}")
    if isinstance(columns, dict):
        return _expression_projection(schema, columns)
    columns = list(columns)
    if all(isinstance(c, str) and schema.get_field_index(c) >= 0 for c in columns) \
            and len(set(columns)) == len(columns):
        return Projection(tuple(columns), None,
                          pa.schema([schema.field(c) for c in columns], metadata=schema.metadata))
    outputs, fields, read = [], [], []
    for c in columns:
        if not isinstance(c, str):
            raise InvalidArgumentError(f"column names are strings, not {type(c).__name__}")
        if schema.get_field_index(c) >= 0 or c in META_COLUMNS:
            outputs.append((c, pc.field(c)))
            fields.append(schema.field(c) if schema.get_field_index(c) >= 0 else pa.field(c, META_COLUMNS[c]))
            read.append(c)
            continue
        nested = _nested(schema, c)
        if nested is None:
            raise InvalidArgumentError(f"no such column: {c!r}")
        parts, t = nested
        outputs.append((c, pc.field(*parts)))
        fields.append(pa.field(c, t))
        read.append(parts[0])
    return Projection(_ordered(schema, read), tuple(outputs), pa.schema(fields, metadata=schema.metadata))


def _expression_projection(schema: pa.Schema, columns: dict) -> Projection:
    outputs, fields, read = [], [], []
    for name, value in columns.items():
        if not isinstance(name, str):
            raise InvalidArgumentError("projection names must be strings")
        if isinstance(value, pc.Expression):
            expr = value
            try:
                t = expression_type(expr, schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, KeyError) as e:
                raise InvalidArgumentError(f"column {name!r}: {e}") from None
            cols = referenced_columns(expr, schema)
        elif isinstance(value, str):
            expr, t, cols = parse_typed_expression(value, schema)
        else:
            raise InvalidArgumentError(
                f"column {name!r}: a projection value is a SQL string or a pyarrow Expression")
        outputs.append((name, expr))
        fields.append(pa.field(name, t if t is not None else pa.null()))
        read.extend(cols)
    return Projection(_ordered(schema, read), tuple(outputs), pa.schema(fields, metadata=schema.metadata))


def _ordered(schema: pa.Schema, names) -> tuple:
    wanted = set(names)
    out = [n for n in schema.names if n in wanted]
    out += [m for m in META_COLUMNS if m in wanted and m not in out]
    return tuple(out)


def needs_projection(schema: pa.Schema, columns) -> bool:
    """True for columns a plain take cannot read (SQL expressions, nested paths)."""
    return isinstance(columns, dict) or (columns is not None and not isinstance(columns, str) and any(
        isinstance(c, str) and schema.get_field_index(c) < 0 and c not in META_COLUMNS
        for c in columns))


def projected(schema: pa.Schema, columns, read):
    """Rows read by ``read(plain columns)`` for a projection with computed outputs: the
    plain columns it needs are read, then each batch is evaluated into the output."""
    proj = build_projection(schema, columns)
    base = read([c for c in proj.read_columns if schema.get_field_index(c) >= 0])
    return pa.Table.from_batches(proj.apply_window(base.to_batches()), schema=proj.schema)
