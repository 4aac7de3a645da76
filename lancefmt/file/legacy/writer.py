"""LegacyFileWriter: write a legacy (v0.1) Lance data file, as pylance's
``data_storage_version="legacy"`` writer does, behind LanceFileWriter's interface.

``LanceFileWriter(uri, schema, version="legacy")`` (also ``"0.1"``, ``"0.2"``) hands out one of
these. Rows are regrouped into batches of ``max_rows_per_group`` (pylance's default 1024); each
batch writes one page per field (:mod:`lancefmt.encoding.legacy.encode`). ``close`` writes the
page table, the dictionary values, the file's schema (a Manifest holding only the fields and
schema metadata, as pylance's ``ManifestDescribing`` does), the Metadata and the footer.
The dataset layer records ``field_ids`` and an empty ``column_indices`` (legacy pages are found
by field id) with ``version`` (0, 2) in the DataFile.
"""
from __future__ import annotations

import os
import struct

import numpy as np
import pyarrow as pa

from ..._proto import file_pb2, table_pb2
from ...encoding.legacy.encode import PageEncoder
from ...errors import InvalidArgumentError, LanceError
from ...io import open_store
from ...io.store import MemoryStore
from ..schema import (arrow_from_fields, field_tree, fields_from_arrow, schema_metadata_to_proto,
                      storage_schema)
from .format import MAGIC, WRITE_VERSION

DEFAULT_ROWS_PER_GROUP = 1024


class LegacyFileWriter:
    """Writes one legacy Lance data file (see the module docstring)."""

    def __init__(self, uri, schema: pa.Schema | None = None, version="legacy",
                 storage_options: dict | None = None, *, store=None, fields=None,
                 max_page_bytes: int | None = None, page_buffer_bytes: int | None = None,
                 schema_metadata: dict | None = None,
                 max_rows_per_group: int = DEFAULT_ROWS_PER_GROUP):
        self.version = WRITE_VERSION
        self.uri = os.fspath(uri)
        self.store = store if store is not None else open_store(self.uri, storage_options)
        if max_rows_per_group <= 0:
            raise InvalidArgumentError("max_rows_per_group must be positive")
        self.max_rows_per_group = int(max_rows_per_group)
        self._extra_metadata = dict(schema_metadata or {})
        self._fields_arg = list(fields) if fields is not None else None
        self._out = None
        self._pos = 0
        self._closed = False
        self._failed = False
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._batch_offsets = [0]
        self._encoder = PageEncoder(self._write, lambda: self._pos)
        self.num_rows = 0
        self.file_size = None
        self.schema = None
        self.fields = None
        self.field_ids = []
        self.column_indices = []
        if schema is not None:
            self._init_schema(schema)
        elif fields is not None:
            self._init_schema(arrow_from_fields(fields))

    def _init_schema(self, schema: pa.Schema):
        storage = storage_schema(schema)
        if self._fields_arg is None:
            fields = fields_from_arrow(schema)
        else:
            fields = self._fields_arg
            expected = storage_schema(arrow_from_fields(fields))
            if len(expected) != len(storage) or any(
                    a.name != b.name or not a.type.equals(b.type) for a, b in zip(expected, storage)):
                raise InvalidArgumentError(f"fields= describe {expected} but the schema is {storage}")
        fields = [_with_legacy_encoding(f) for f in fields]
        self.schema = schema
        self._storage_schema = storage
        self.fields = list(fields)
        self._roots = field_tree(self.fields)
        self.field_ids = sorted(f.id for f in self.fields)

    # -- writing ---------------------------------------------------------------------------
    def _output(self):
        if self._out is None:
            self._out = self.store.open_output(self.uri)
        return self._out

    def _write(self, data) -> int:
        pos = self._pos
        view = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        if len(view):
            self._output().write(view)
            self._pos += len(view)
        return pos

    def write_batch(self, data) -> None:
        """Append a ``pa.RecordBatch`` or ``pa.Table`` (its schema must match the writer's)."""
        if self._closed:
            raise InvalidArgumentError("the writer is closed")
        if isinstance(data, pa.Table):
            if self.schema is None:
                self._init_schema(data.schema)
            for batch in data.to_batches():
                self.write_batch(batch)
            return
        if not isinstance(data, pa.RecordBatch):
            raise InvalidArgumentError(f"expected a RecordBatch or Table, got {type(data).__name__}")
        if self.schema is None:
            self._init_schema(data.schema)
        self._check_schema(data.schema)
        self._pending.append(data)
        self._pending_rows += data.num_rows
        self.num_rows += data.num_rows
        while self._pending_rows >= self.max_rows_per_group:
            self._flush(self.max_rows_per_group)

    def _check_schema(self, schema: pa.Schema):
        if schema is self.schema or schema.equals(self.schema):
            return
        storage = storage_schema(schema)
        mine = self._storage_schema
        if len(storage) != len(mine) or any(
                a.name != b.name or not a.type.equals(b.type) for a, b in zip(storage, mine)):
            raise InvalidArgumentError(f"batch schema {schema} does not match the writer's {self.schema}")

    def _flush(self, rows: int) -> None:
        """Write the first ``rows`` pending rows as one batch (a row group)."""
        table = pa.Table.from_batches(self._pending, schema=self._pending[0].schema)
        group, rest = table.slice(0, rows), table.slice(rows)
        batch_id = len(self._batch_offsets) - 1
        try:
            for root, column in zip(self._roots, group.columns):
                arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
                if isinstance(arr.type, pa.BaseExtensionType):
                    arr = arr.storage
                self._encoder.encode(root, arr, batch_id)
        except BaseException:
            self._failed = True
            raise
        self._batch_offsets.append(self._batch_offsets[-1] + group.num_rows)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows

    # -- closing ---------------------------------------------------------------------------
    def close(self, wait: bool = True) -> int:
        """Finish the file; returns the number of rows written (``wait``: as
        :meth:`lancefmt.file.writer.LanceFileWriter.close`)."""
        if self._closed:
            return self.num_rows
        if self._failed:
            self.abort()
            raise InvalidArgumentError("an earlier write failed; nothing was written")
        if self.schema is None:
            self.abort()
            raise InvalidArgumentError("Schema is unknown and file cannot be created: pass "
                                       "schema= or write at least one batch")
        try:
            if self._pending_rows:
                self._flush(self._pending_rows)
            self._write_footer()
            out = self._output()
            if not wait and hasattr(out, "close_later"):
                out.close_later()
            else:
                out.close()
        except BaseException:
            self.abort()
            raise
        self._closed = True
        self.file_size = self._pos
        return self.num_rows

    def _write_footer(self) -> None:
        ids = [f.id for f in self.fields]
        lo, hi = min(ids), max(ids)
        nb = len(self._batch_offsets) - 1
        table = np.zeros((hi - lo + 1, nb, 2), dtype="<i8")
        for (fid, b), (pos, length) in self._encoder.pages.items():
            table[fid - lo, b] = (pos, length)
        page_table_pos = self._write(table.tobytes())
        schema = table_pb2.Manifest()
        for f in self.fields:
            g = schema.fields.add()
            g.CopyFrom(f)
            values = self._encoder.dictionaries.get(f.id)
            if values is not None:
                g.dictionary.offset = self._encoder.write_dictionary(values)
                g.dictionary.length = len(values)
        md = schema_metadata_to_proto(self.schema.metadata)
        md.update(schema_metadata_to_proto(self._extra_metadata))
        for k, v in md.items():
            schema.schema_metadata[k] = v
        schema.data_format.file_format = "lance"
        schema.data_format.version = "0.1"
        manifest_pos = self._write_struct(schema)
        meta = file_pb2.Metadata(manifest_position=manifest_pos, batch_offsets=self._batch_offsets,
                                 page_table_position=page_table_pos)
        meta_pos = self._write_struct(meta)
        self._write(struct.pack("<QHH4s", meta_pos, *WRITE_VERSION, MAGIC))

    def _write_struct(self, msg) -> int:
        body = msg.SerializeToString(deterministic=True)
        return self._write(struct.pack("<I", len(body)) + body)

    def abort(self) -> None:
        """Give up: nothing becomes visible at the URI."""
        self._closed = True
        out, self._out = self._out, None
        if out is None:
            return
        try:
            if hasattr(out, "abort"):
                out.abort()
            elif hasattr(out, "discard"):
                out.discard()
        except (OSError, LanceError):
            pass
        if isinstance(self.store, MemoryStore):
            try:
                self.store.delete(self.uri)
            except (OSError, LanceError):
                pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False

    def __repr__(self):
        state = "closed" if self._closed else "open"
        return f"LegacyFileWriter({self.uri!r}, {state})"


def _with_legacy_encoding(field):
    """A copy of ``field`` with ``encoding`` as pylance's legacy writer sets it."""
    out = file_pb2.Field()
    out.CopyFrom(field)
    out.encoding = _legacy_encoding(field.logical_type)
    return out


def _legacy_encoding(logical_type: str) -> int:
    if logical_type in ("string", "binary", "large_string", "large_binary"):
        return file_pb2.VAR_BINARY
    if logical_type.startswith("dict:"):
        return file_pb2.DICTIONARY
    if logical_type == "struct":
        return file_pb2.NONE
    return file_pb2.PLAIN
