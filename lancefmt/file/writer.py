"""LanceFileWriter: write a Lance v2 data file (file version 2.0, 2.1 or 2.2 -- the default, as
pylance 14's "stable") that pylance reads.

Batches stream through per-field writers (:mod:`lancefmt.encoding`: ``v2_0`` or the structural
``v2_1`` scheme, chosen by version) that buffer about 8 MiB
per column and emit pages as they fill; each page buffer is written at once, 64-byte aligned
and padded with 0x48 like Lance does. ``close`` appends the FileDescriptor (global buffer 0),
the column metadata, the offset tables and the footer. The output goes through
``store.open_output(uri)``, so the object appears only on a clean close (atomic rename for
local files, multipart upload for s3) and a failed write leaves nothing behind.

After ``close`` the writer tells the dataset layer what a ``DataFile`` records: ``field_ids``
and ``column_indices`` (the columns in allocation order), ``version`` (file major/minor),
``file_size`` and ``num_rows``.
"""
from __future__ import annotations

import os

import pyarrow as pa
from google.protobuf import any_pb2

from .._proto import encodings_v2_0_pb2, file2_pb2, file_pb2
from .encode_pool import PageQueue
from ..encoding import field_writers_for
from ..errors import InvalidArgumentError, LanceError
from ..io import open_store
from ..io.store import MemoryStore
from .format import (ALIGNMENT, ARRAY_ENCODING_URL, COLUMN_ENCODING_URL, PAD_BYTE, Footer,
                     footer_version, is_legacy_name, offset_table_bytes, parse_version)
from ..jsonb.arrow import encode_batch, stored_schema
from .schema import (arrow_from_fields, field_tree, fields_from_arrow, schema_metadata_to_proto,
                     storage_schema)

_COLUMN_ENCODING = any_pb2.Any(
    type_url=COLUMN_ENCODING_URL,
    value=encodings_v2_0_pb2.ColumnEncoding(values={}).SerializeToString()).SerializeToString()


class _Sink:
    """What the field writers of :mod:`lancefmt.encoding` write through."""

    def __init__(self, writer: "LanceFileWriter"):
        self.writer = writer

    def emit(self, column, page):
        self.writer._page_queue.emit(column, page)

    def submit(self, column, job):
        """Encode a page (``job()``) on the encoding pool; it is written in submission order."""
        self.writer._page_queue.submit(column, job)

    def write_buffer(self, data):
        self.writer._page_queue.drain()
        return self.writer._write(data)

    def set_column_encoding(self, column, encoding):
        self.writer._column_encodings[column] = any_pb2.Any(
            type_url=COLUMN_ENCODING_URL, value=encoding.SerializeToString()).SerializeToString()


class LanceFileWriter:
    """Writes one Lance data file.

    ``schema`` (pyarrow) may be omitted and is then taken from the first batch. ``fields``
    passes a pre-assigned Lance Field list (the dataset's field ids), which then ends up in the
    FileDescriptor and in :attr:`field_ids`. ``max_page_bytes`` caps pages (32 MiB, Lance's 2.0
    default); ``page_buffer_bytes`` is how much a column buffers before it writes (8 MiB).
    ``version`` is "2.0", "2.1" or "2.2" (also "stable" = 2.2), or "legacy" (see ``__new__``).
    """

    def __new__(cls, uri, schema: pa.Schema | None = None, version="2.2", *args, **kwargs):
        """``version="legacy"`` (or "0.1"/"0.2") gives a
        :class:`~lancefmt.file.legacy.writer.LegacyFileWriter`, with the same interface."""
        if is_legacy_name(version):
            from .legacy.writer import LegacyFileWriter

            return LegacyFileWriter(uri, schema, version, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, uri, schema: pa.Schema | None = None, version="2.2",
                 storage_options: dict | None = None, *, store=None, fields=None,
                 max_page_bytes: int | None = None, page_buffer_bytes: int | None = None,
                 schema_metadata: dict | None = None):
        self.version = parse_version(version)
        self._scheme = field_writers_for(self.version)
        self.uri = os.fspath(uri)
        self.store = store if store is not None else open_store(self.uri, storage_options)
        self.max_page_bytes = int(max_page_bytes or self._scheme.default_max_page_bytes)
        self.page_buffer_bytes = int(page_buffer_bytes or self._scheme.default_page_buffer_bytes)
        if self.max_page_bytes <= 0 or self.page_buffer_bytes <= 0:
            raise InvalidArgumentError("page sizes must be positive")
        self._extra_metadata = dict(schema_metadata or {})
        self._user_buffers: list[bytes] = []  # global buffers 1.. (0 is the descriptor)
        self._fields_arg = list(fields) if fields is not None else None
        self._out = None
        self._pos = 0
        self._closed = False
        self._failed = False
        self.num_rows = 0
        self.file_size = None
        self.schema = None
        self.fields = None
        self._writers = None
        self._page_queue = PageQueue(self._emit)
        if schema is not None:
            self._init_schema(schema)
        elif fields is not None:
            self._init_schema(arrow_from_fields(fields))

    # -- setup ------------------------------------------------------------------------------------
    def _init_schema(self, schema: pa.Schema):
        schema = stored_schema(schema)  # arrow.json columns are written as JSONB
        storage = storage_schema(schema)
        if self._fields_arg is None:
            fields = fields_from_arrow(schema)
        else:
            fields = self._fields_arg
            expected = storage_schema(arrow_from_fields(fields))
            if len(expected) != len(storage) or any(
                    a.name != b.name or not a.type.equals(b.type) for a, b in zip(expected, storage)):
                raise InvalidArgumentError(
                    f"fields= describe {expected} but the schema is {storage}")
        roots = field_tree(fields)
        allocation = self._scheme.column_allocation(roots)
        column_of = dict(allocation)
        self.schema = schema
        self._storage_schema = storage
        self.fields = list(fields)
        self.field_ids = [f for f, _ in allocation]
        self.column_indices = [c for _, c in allocation]
        self._pages = [[] for _ in allocation]
        self._column_encodings = [_COLUMN_ENCODING] * len(allocation)
        self._writers = [self._scheme.build(root, f, column_of, _Sink(self), self.page_buffer_bytes,
                                            self.max_page_bytes)
                         for root, f in zip(roots, storage)]

    # -- writing ----------------------------------------------------------------------------------
    def _output(self):
        if self._out is None:
            self._out = self.store.open_output(self.uri)
        return self._out

    def _write(self, data) -> tuple[int, int]:
        """Write one page buffer at the current (aligned) position; pad after it."""
        view = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        size = len(view)
        pos = self._pos
        if size:
            out = self._output()
            out.write(view)
            pad = (-size) % ALIGNMENT
            if pad:
                out.write(PAD_BYTE * pad)
            self._pos += size + pad
        return pos, size

    def _emit(self, column: int, page) -> None:
        offsets, sizes = [], []
        for buf in page.buffers:
            pos, size = self._write(buf)
            offsets.append(pos)
            sizes.append(size)
        self._pages[column].append((offsets, sizes, page.num_rows, page.encoding))

    def write_batch(self, data) -> None:
        """Append a ``pa.RecordBatch`` or ``pa.Table`` (its schema must match the writer's)."""
        if self._closed:
            raise InvalidArgumentError("the writer is closed")
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            data = encode_batch(data)
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
        try:
            for writer, col in zip(self._writers, data.columns):
                if isinstance(col.type, pa.BaseExtensionType):
                    col = col.storage
                writer.append(col)
            self._page_queue.drain(block=False)
        except BaseException:
            self._failed = True
            raise
        self.num_rows += data.num_rows

    def _check_schema(self, schema: pa.Schema):
        if schema is self.schema or schema.equals(self.schema):
            return
        storage = storage_schema(schema)
        mine = self._storage_schema
        if len(storage) != len(mine) or any(
                a.name != b.name or not a.type.equals(b.type) for a, b in zip(storage, mine)):
            raise InvalidArgumentError(f"batch schema {schema} does not match the writer's {self.schema}")

    def add_global_buffer(self, data) -> int:
        """Store ``data`` as a global buffer of the file (written at close, after the file
        descriptor, which is buffer 0); returns its index, as Lance's writer does."""
        if self._closed:
            raise InvalidArgumentError("the writer is closed")
        self._user_buffers.append(bytes(data))
        return len(self._user_buffers)

    # -- closing ----------------------------------------------------------------------------------
    def close(self, wait: bool = True) -> int:
        """Finish the file; returns the number of rows written. ``wait=False``: an object-store
        upload may still be finishing in the background when this returns (a dataset write,
        whose commit waits for it: ``io.wait_durable``)."""
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
            for w in self._writers:
                w.flush()
            self._page_queue.drain()
            for w in self._writers:
                w.finish()
            self._page_queue.drain()
            self._write_metadata()
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

    def _write_metadata(self):
        out = self._output()
        md = schema_metadata_to_proto(self.schema.metadata)
        md.update(schema_metadata_to_proto(self._extra_metadata))
        fd = file_pb2.FileDescriptor(length=self.num_rows)
        fd.schema.fields.extend(self.fields)
        for k, v in md.items():
            fd.schema.metadata[k] = v
        blobs = [fd.SerializeToString(deterministic=True)]
        gbo = [(self._pos, len(blobs[0]))]
        pos = self._pos + len(blobs[0])
        for extra in self._user_buffers:  # Lance reads them only at 64-byte boundaries
            pad = -pos % 64
            blobs.append(b"\0" * pad)
            pos += pad
            gbo.append((pos, len(extra)))
            blobs.append(extra)
            pos += len(extra)
        column_meta_start = pos
        cmo = []
        for pages, column_encoding in zip(self._pages, self._column_encodings):
            cm = file2_pb2.ColumnMetadata()
            cm.encoding.direct.encoding = column_encoding
            for offsets, sizes, num_rows, encoding in pages:
                p = cm.pages.add()
                p.buffer_offsets.extend(offsets)
                p.buffer_sizes.extend(sizes)
                p.length = num_rows
                p.encoding.direct.encoding = any_pb2.Any(
                    type_url=self._scheme.page_encoding_url, value=encoding.SerializeToString()
                ).SerializeToString()
            b = cm.SerializeToString()
            cmo.append((pos, len(b)))
            blobs.append(b)
            pos += len(b)
        cmo_offset = pos
        blobs.append(offset_table_bytes(cmo))
        pos += 16 * len(cmo)
        gbo_offset = pos
        blobs.append(offset_table_bytes(gbo))
        pos += 16 * len(gbo)
        major, minor = footer_version(self.version)
        blobs.append(Footer(column_meta_start, cmo_offset, gbo_offset, len(gbo), len(cmo),
                            major, minor).to_bytes())
        for b in blobs:
            out.write(b)
        self._pos = pos + 40

    def abort(self) -> None:
        """Give up: nothing becomes visible at the URI."""
        self._closed = True
        self._page_queue.cancel()
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
        if isinstance(self.store, MemoryStore):  # memory "files" are visible from open()
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
        return f"LanceFileWriter({self.uri!r}, version={self.version[0]}.{self.version[1]}, {state})"
