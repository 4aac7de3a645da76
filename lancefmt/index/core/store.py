"""IndexStore: the directory of one index (``_indices/{uuid}/``) and the Lance files in it.

Every index type keeps its content in Lance files (what pylance 14 writes: file version 2.2),
so an index reuses the file reader's bounds checks and the object-store code. A store writes
files through :class:`~lancefmt.file.writer.LanceFileWriter` (an object appears only when its
writer closes cleanly) and opens each file once (:meth:`reader` is memoized: index files are
immutable).
"""
from __future__ import annotations

import threading

import pyarrow as pa

from ...errors import CorruptFileError, StorageNotFoundError
from ...file.reader import LanceFileReader
from ...file.writer import LanceFileWriter
from ...io import open_store

INDEX_FILE_VERSION = "2.2"


class IndexStore:
    """Files of one index under ``dir_uri`` (no trailing slash)."""

    def __init__(self, dir_uri: str, storage_options: dict | None = None, *, store=None):
        self.dir_uri = dir_uri.rstrip("/")
        self.storage_options = storage_options
        self._store = store
        self._readers: dict = {}
        self._lock = threading.Lock()
        self.written: list = []  # (name, size) of the files this store wrote

    @property
    def store(self):
        if self._store is None:
            self._store = open_store(self.dir_uri, self.storage_options)
        return self._store

    def uri(self, name: str) -> str:
        return f"{self.dir_uri}/{name}"

    # -- writing -----------------------------------------------------------------------------
    def write_table(self, name: str, table: pa.Table, metadata: dict | None = None,
                    global_buffers=()) -> int:
        """Write ``table`` as the Lance file ``name`` (schema metadata ``metadata``, extra
        global buffers in order); returns its size in bytes."""
        schema = table.schema
        if metadata:
            schema = schema.with_metadata({**(schema.metadata or {}),
                                           **{str(k): str(v) for k, v in metadata.items()}})
        writer = LanceFileWriter(self.uri(name), schema.remove_metadata(), INDEX_FILE_VERSION,
                                 store=self.store, schema_metadata=_str_metadata(schema.metadata))
        try:
            for buf in global_buffers:
                writer.add_global_buffer(buf)
            for batch in table.to_batches():
                if batch.num_rows:
                    writer.write_batch(batch.replace_schema_metadata(None))
            writer.close()
        except BaseException:
            writer.abort()
            raise
        self.written.append((name, int(writer.file_size)))
        with self._lock:
            self._readers.pop(name, None)
        return int(writer.file_size)

    def write_bytes(self, name: str, data: bytes) -> int:
        """Write ``name`` as raw bytes (a legacy index file); returns its size."""
        self.store.put(self.uri(name), bytes(data))
        self.written.append((name, len(data)))
        with self._lock:
            self._readers.pop(name, None)
        return len(data)

    # -- reading -----------------------------------------------------------------------------
    def reader(self, name: str) -> LanceFileReader:
        """The opened file ``name`` (once per store)."""
        with self._lock:
            hit = self._readers.get(name)
        if hit is not None:
            return hit
        try:
            reader = LanceFileReader(self.uri(name), store=self.store)
        except StorageNotFoundError:
            raise CorruptFileError(f"index file {name} is missing", self.uri(name)) from None
        with self._lock:
            return self._readers.setdefault(name, reader)

    def read_table(self, name: str, columns=None) -> pa.Table:
        return self.reader(name).read_all(columns)

    def schema_metadata(self, name: str) -> dict:
        return self.reader(name).schema_metadata

    def exists(self, name: str) -> bool:
        return self.store.exists(self.uri(name))

    def delete(self, name: str) -> None:
        self.store.delete(self.uri(name))
        with self._lock:
            self._readers.pop(name, None)

    def list_files(self) -> list:
        """(name, size) of the files in the directory, by name."""
        return sorted((f.name, int(f.size)) for f in self.store.list(self.dir_uri) if not f.is_dir)


def _str_metadata(meta) -> dict:
    if not meta:
        return {}
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in meta.items()}
