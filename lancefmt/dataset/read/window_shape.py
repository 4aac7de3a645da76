"""What every window of one scan looks like, decided once per scan instead of once per window.

A scan reads the same columns from every fragment, so the window table's column names, its
schema (the columns' types with the dataset's nullability: a ``not null`` column stays
``not null`` in what a scan returns) and the columns it finally selects are fixed by the
dataset schema and the :class:`~.scan.ScanSpec`. One :class:`WindowShape` is shared by the
scan's fragments and threads; it builds a schema once per distinct list of column types.
"""
from __future__ import annotations

import pyarrow as pa

ROW_ID = "_rowid"
ROW_ADDRESS = "_rowaddr"
# A local scan of narrow fixed-width rows reads windows of about this many bytes (at least the
# scan's row window): per-window work is paid once per 8 MiB, e.g. once per 200k-row fragment
# of three numbers instead of twice.
WINDOW_BYTES = 8 << 20


class WindowShape:
    """The columns of one scan's windows (see module docstring)."""

    def __init__(self, schema: pa.Schema, spec, local: bool = False):
        self.read_names = tuple(spec.read_columns)
        self.row_id = spec.need_row_id
        self.row_address = spec.need_row_address
        names = list(self.read_names)
        if self.row_id:
            names.append(ROW_ID)
        if self.row_address:
            names.append(ROW_ADDRESS)
        self.names = tuple(names)
        index = schema.get_field_index
        self._nullable = tuple(schema.field(index(n)).nullable if index(n) >= 0 else True
                               for n in names)
        self.null_types = {n: schema.field(n).type for n in self.read_names
                           if index(n) >= 0}
        out = list(spec.columns)
        if spec.with_row_id:
            out.append(ROW_ID)
        if spec.with_row_address:
            out.append(ROW_ADDRESS)
        # the filter keeps the columns: a select is needed only when the output differs
        self.select = None if out == names else out
        self.filter = spec.filter
        self._schemas: dict = {}
        width = row_bytes([schema.field(n).type for n in self.read_names])
        self.narrow_rows = WINDOW_BYTES // width if local and width else 0

    def schema(self, types: tuple) -> pa.Schema:
        """The window schema for columns of ``types`` (in :attr:`names` order)."""
        schema = self._schemas.get(types)
        if schema is None:
            schema = pa.schema([pa.field(n, t, nullable=nullable)
                                for n, t, nullable in zip(self.names, types, self._nullable)])
            self._schemas[types] = schema
        return schema


def row_bytes(types) -> int | None:
    """Bytes a row of these types takes decoded, when every one is fixed-width (numbers,
    temporals, fixed-size lists of them); else None (the width is not known up front)."""
    total = 0.0
    for t in types:
        n = 1
        while pa.types.is_fixed_size_list(t):
            n *= t.list_size
            t = t.value_type
        try:
            bits = t.bit_width
        except ValueError:
            return None
        if not bits or isinstance(t, pa.BaseExtensionType) or pa.types.is_dictionary(t):
            return None
        total += n * bits / 8
    return max(1, int(total)) if total else None
