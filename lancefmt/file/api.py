"""pylance's ``lance.file`` API: ``LanceFileReader`` / ``LanceFileWriter`` / ``ReaderResults``.

These wrap lancefmt's own reader and writer (:mod:`lancefmt.file.reader`,
:mod:`lancefmt.file.writer`, which the dataset layer uses directly) with pylance's names,
signatures and return types: reads return a :class:`ReaderResults` (``.to_table()``,
``.to_batches()``), ``metadata()`` / ``num_rows()`` are methods.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError
from ..io import open_store
from .format import storage_version_name
from .reader import LanceFileReader as _Reader
from .writer import LanceFileWriter as _Writer

DEFAULT_BATCH_SIZE = 1024


class ReaderResults:
    """Rows read from a file, as a RecordBatchReader or a Table."""

    def __init__(self, reader: pa.RecordBatchReader):
        self.reader = reader

    def to_batches(self) -> pa.RecordBatchReader:
        return self.reader

    def to_table(self) -> pa.Table:
        return self.reader.read_all()


@dataclass
class LanceBufferDescriptor:
    position: int
    size: int


@dataclass
class LancePageMetadata:
    buffers: list
    encoding: str


@dataclass
class LanceColumnMetadata:
    column_buffers: list
    pages: list


@dataclass
class LanceFileMetadata:
    schema: pa.Schema
    num_rows: int
    num_data_bytes: int
    num_column_metadata_bytes: int
    num_global_buffer_bytes: int
    global_buffers: list
    columns: list
    major_version: int
    minor_version: int


@dataclass
class ColumnStatistics:
    num_pages: int
    size_bytes: int


@dataclass
class LanceFileStatistics:
    columns: list


class LanceFileReader:
    """A Lance data file opened for reading (pylance's ``lance.file.LanceFileReader``)."""

    def __init__(self, path, storage_options: dict | None = None, columns=None, **kwargs):
        for k in ("namespace_client", "table_id", "_inner_reader"):
            kwargs.pop(k, None)
        if kwargs:
            raise InvalidArgumentError(f"unexpected arguments {sorted(kwargs)}")
        self._reader = _Reader(os.fspath(path), storage_options)
        self._columns = list(columns) if columns is not None else None
        self._projection = self._reader.projection(self._columns)

    def _results(self, batches) -> ReaderResults:
        return ReaderResults(pa.RecordBatchReader.from_batches(self._projection.schema, batches))

    def read_all(self, *, batch_size: int = DEFAULT_BATCH_SIZE, batch_readahead=16) -> ReaderResults:
        return self._results(self._reader.read_batches(batch_size, self._projection))

    def read_range(self, start: int, num_rows: int, *, batch_size: int = DEFAULT_BATCH_SIZE,
                   batch_readahead=16) -> ReaderResults:
        start, num_rows = int(start), int(num_rows)
        if start < 0 or num_rows < 0 or start + num_rows > self._reader.num_rows:
            raise InvalidArgumentError(
                f"range [{start}, {start + num_rows}) outside the file's {self._reader.num_rows} rows")
        return self._results(self._reader.read_batches(batch_size, self._projection, start=start,
                                                       stop=start + num_rows))

    def take_rows(self, indices, *, batch_size: int = DEFAULT_BATCH_SIZE, batch_readahead=16) -> ReaderResults:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size > 1 and np.any(idx[1:] < idx[:-1]):
            raise InvalidArgumentError("Indices must be sorted in ascending order for file API")
        table = self._reader.take(idx, self._projection)
        return self._results(table.to_batches(max_chunksize=batch_size))

    def metadata(self) -> LanceFileMetadata:
        m = self._reader.metadata
        cols = []
        for c in m.columns:
            pages = [LancePageMetadata([LanceBufferDescriptor(int(o), int(s))
                                        for o, s in zip(p.buffer_offsets, p.buffer_sizes)],
                                       str(getattr(p, "encoding_type", ""))) for p in c.pages]
            cols.append(LanceColumnMetadata([LanceBufferDescriptor(int(o), int(s)) for o, s in
                                             zip(c.buffer_offsets, c.buffer_sizes)], pages))
        gb = [LanceBufferDescriptor(int(p), int(s)) for p, s in m.global_buffers]
        f = m.footer
        return LanceFileMetadata(
            schema=self._reader.schema, num_rows=m.num_rows,
            num_data_bytes=min([int(f.column_meta_start)] + [int(p) for p, _ in m.global_buffers]),
            num_column_metadata_bytes=int(f.cmo_offset - f.column_meta_start),
            num_global_buffer_bytes=sum(s for _, s in m.global_buffers),
            global_buffers=gb, columns=cols, major_version=int(f.major), minor_version=int(f.minor))  # raw footer numbers, as pylance

    def file_statistics(self) -> LanceFileStatistics:
        return LanceFileStatistics([ColumnStatistics(len(c.pages), sum(sum(p.buffer_sizes) for p in c.pages))
                                    for c in self._reader.metadata.columns])

    def read_global_buffer(self, index: int) -> bytes:
        return self._reader.read_global_buffer(index)

    def num_rows(self) -> int:
        return self._reader.num_rows

    def __repr__(self):
        return f"lancefmt.file.{self._reader!r}"


class LanceFileWriter(_Writer):
    """pylance's ``lance.file.LanceFileWriter``: ``write_batch``, ``add_schema_metadata``,
    ``close()``, context manager. ``version``: "2.0", "2.1", "2.2" (None / "stable": 2.2)."""

    def __init__(self, path, schema: pa.Schema | None = None, *, version: str | None = None,
                 storage_options: dict | None = None, max_page_bytes: int | None = None,
                 data_cache_bytes: int | None = None, **kwargs):
        for k in ("keep_original_array", "namespace_client", "table_id", "_inner_writer"):
            kwargs.pop(k, None)
        if kwargs:
            raise InvalidArgumentError(f"unexpected arguments {sorted(kwargs)}")
        v = storage_version_name(version)
        super().__init__(os.fspath(path), schema, v, storage_options, max_page_bytes=max_page_bytes,
                         page_buffer_bytes=data_cache_bytes)
        self._api_lock = threading.RLock()  # write_batch(Table) calls it per batch

    def write_batch(self, data) -> None:
        """Append a batch or table; safe to call from several threads (each call's rows stay
        together, as pylance's writer serialises them)."""
        with self._api_lock:
            super().write_batch(data)

    def add_schema_metadata(self, key: str, value: str) -> None:
        """Schema metadata written into the file's descriptor at close."""
        self._extra_metadata[key] = value


def stable_version() -> str:
    """The file format version written when none is asked for (pylance's "stable")."""
    return storage_version_name("stable")


class LanceFileSession:
    """pylance's ``LanceFileSession``: readers and writers opened by paths relative to one
    base path, sharing its storage options."""

    def __init__(self, base_path, storage_options: dict | None = None, **kwargs):
        for k in ("namespace_client", "table_id"):
            kwargs.pop(k, None)
        if kwargs:
            raise InvalidArgumentError(f"unexpected arguments {sorted(kwargs)}")
        self._base = os.fspath(base_path).rstrip("/")
        self._storage_options = storage_options

    def _path(self, path: str) -> str:
        return f"{self._base}/{str(path).lstrip('/')}"

    def open_reader(self, path: str, columns=None) -> LanceFileReader:
        return LanceFileReader(self._path(path), self._storage_options, columns=columns)

    def open_writer(self, path: str, *, schema: pa.Schema | None = None, **kwargs) -> LanceFileWriter:
        return LanceFileWriter(self._path(path), schema, storage_options=self._storage_options,
                               **kwargs)

    def contains(self, path: str) -> bool:
        return open_store(self._path(path), self._storage_options).exists(self._path(path))
