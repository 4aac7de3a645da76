"""Writing a batch stream into data files: rolling over at the row/byte limits, round-robin
over the target bases, each file written with its base's storage options.

Data is streamed: batches go into the current data file until it holds ``max_rows_per_file``
rows (or about ``max_bytes_per_file`` bytes), so memory stays bounded by the file writer's
page buffers, whatever the input size.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import pyarrow as pa

from ..._proto import table_pb2
from ...errors import InvalidArgumentError
from ...file.format import LEGACY_VERSION_NAME
from ...file.schema import arrow_from_fields
from ...file.writer import LanceFileWriter
from ...io import open_store
from ...io.uri import normalize_uri
from ...table.base_paths import BasePath, BasePathResolver
from ...table.fragment import FragmentMetadata
from ...table.naming import data_file_name
from ..core.base_options import BaseOptions
from ..core.files import delete_files
from .blobs import BlobSidecars, blob_v2_columns
from .plan import WritePlan
from .staging import stage_file

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024 ** 3


@dataclass
class Target:
    """A directory new data files go to, and the storage options they are written with."""

    data_dir: str
    base_id: int | None
    storage_options: dict | None = None


def targets_for(uri: str, bases: list[BasePath], target_bases, storage_options=None,
                base_store_params=None) -> list[Target]:
    """Where new data files go: the dataset root, or the named/numbered bases round-robin
    (each written with its own storage options, see :mod:`..core.base_options`)."""
    resolver = BasePathResolver(uri, bases)
    options = BaseOptions(resolver, storage_options, base_store_params)
    if not target_bases:
        return [Target(resolver.data_dir(None), None, storage_options)]
    if isinstance(target_bases, (str, int)):
        target_bases = [target_bases]
    out = []
    for t in target_bases:
        match = None
        for b in bases:
            if (isinstance(t, int) and b.id == t) or (isinstance(t, str) and (
                    b.name == t or str(b.id) == t or normalize_uri(b.path) == normalize_uri(t))):
                match = b  # by id, name, or the base's path URI (as pylance accepts)
        if match is None:
            raise InvalidArgumentError(f"target base {t!r} not found among the dataset's base "
                                       f"paths (known: {[(b.id, b.name) for b in bases]})")
        data_dir = resolver.data_dir(match.id)
        out.append(Target(data_dir, match.id, options.for_uri(data_dir)))
    return out


class FileRoller:
    """Writes a batch stream into data files, rolling over at the row/byte limits."""

    def __init__(self, schema: pa.Schema, fields, version: str, targets, storage_options,
                 max_rows: int, max_bytes: int, staging: str | None = None,
                 staging_open: bool = False, max_rows_per_group: int | None = None,
                 progress=None, first_fragment_id: int = 0):
        self.schema, self.fields, self.version = schema, fields, version
        # pylance's FragmentWriteProgress: begin() when a file is opened (its name chosen,
        # nothing written), complete() when it is closed; fragments numbered from the first id
        self.progress, self.first_fragment_id = progress, int(first_fragment_id)
        self.staging = staging
        self.staging_open = staging_open
        self.targets = itertools.cycle(targets)
        self.storage_options = storage_options
        self.max_rows, self.max_bytes = max_rows, max_bytes
        # legacy (0.1) files group rows as pylance's writer does; 2.x files have pages instead
        self.writer_options = {"max_rows_per_group": int(max_rows_per_group)} \
            if version == LEGACY_VERSION_NAME and max_rows_per_group else {}
        self.fragments: list[FragmentMetadata] = []
        self.written: list[str] = []
        self.written_options: list = []
        self._writer = None
        self._target = None
        self._bytes = 0
        self.blob_columns = blob_v2_columns(fields)
        self.file_schema = arrow_from_fields(fields, schema.metadata) if self.blob_columns \
            else schema
        self._sidecars = None

    def _open(self):
        self._target = next(self.targets)
        name = data_file_name()
        uri = self._target.data_dir.rstrip("/") + "/" + name
        if self.staging is not None:
            stage_file(self.staging, uri, self.storage_options, require_open=self.staging_open)
        store = open_store(uri, self._target.storage_options)
        self._writer = LanceFileWriter(uri, self.file_schema, self.version, store=store,
                                       fields=self.fields, **self.writer_options)
        if self.progress is not None and hasattr(self.progress, "begin"):
            major, minor = self._writer.version
            opened = table_pb2.DataFile(path=name, file_major_version=major, file_minor_version=minor)
            if self._target.base_id is not None:
                opened.base_id = self._target.base_id
            self.progress.begin(FragmentMetadata.new(
                [opened], 0, id=self.first_fragment_id + len(self.fragments)))
        if self.blob_columns:
            self._sidecars = BlobSidecars(store, uri, self.blob_columns)
        self._name, self._uri, self._bytes = name, uri, 0

    def _close(self):
        w = self._writer
        self._writer = None
        if self._sidecars is not None:
            sidecars, self._sidecars = self._sidecars, None
            for side in sidecars.close(wait=False):
                self.written.append(side)
                self.written_options.append(self._target.storage_options)
        rows = w.close(wait=False)  # the upload overlaps the next file; the commit waits
        self.written.append(self._uri)
        self.written_options.append(self._target.storage_options)
        df = data_file_pb(self._name, w, self._target.base_id)
        self.fragments.append(FragmentMetadata.new([df], rows))
        if self.progress is not None and hasattr(self.progress, "complete"):
            done = self.fragments[-1].copy()
            done.id = self.first_fragment_id + len(self.fragments) - 1
            self.progress.complete(done)

    def write(self, batch: pa.RecordBatch):
        offset = 0
        while offset < batch.num_rows:
            if self._writer is None:
                self._open()
            room = self.max_rows - self._writer.num_rows
            piece = batch.slice(offset, room) if batch.num_rows - offset > room else \
                (batch.slice(offset) if offset else batch)
            nbytes = piece.nbytes
            if self._sidecars is not None:
                piece = self._sidecars.convert(piece, self.file_schema)
            self._writer.write_batch(piece)
            self._bytes += nbytes
            offset += piece.num_rows
            if self._writer.num_rows >= self.max_rows or self._bytes >= self.max_bytes:
                self._close()

    def finish(self) -> list[FragmentMetadata]:
        if self._writer is not None:
            if self._writer.num_rows:
                self._close()
            else:
                self.abort_open_file()
        return self.fragments

    def abort_open_file(self):
        if self._sidecars is not None:
            self._sidecars.abort()
            for side in self._sidecars.uris:
                delete_files([side], self._target.storage_options)
            self._sidecars = None
        self._writer.abort()
        self._writer = None

    def abort(self):
        if self._sidecars is not None:
            self._sidecars.abort()
            for side in self._sidecars.uris:
                delete_files([side], self._target.storage_options)
            self._sidecars = None
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        for uri, options in zip(self.written, self.written_options):
            delete_files([uri], options)


def data_file_pb(name: str, writer: LanceFileWriter, base_id):
    """The ``DataFile`` protobuf of a data file ``writer`` has closed."""
    major, minor = writer.version
    df = table_pb2.DataFile(path=name, fields=writer.field_ids, column_indices=writer.column_indices,
                            file_major_version=major, file_minor_version=minor,
                            file_size_bytes=writer.file_size or 0)
    if base_id is not None:
        df.base_id = base_id
    return df


def write_files(plan: WritePlan, target_bases, max_rows_per_file, max_bytes_per_file,
                storage_options, base_store_params=None, target_offset: int = 0,
                staging: str | None = None, staging_open: bool = False,
                max_rows_per_group: int | None = None, progress=None, first_fragment_id: int = 0):
    """Write ``plan``'s input as data files: (fragments, [(uri, storage options)] written).
    A failure removes every file written so far. ``progress`` is told of each file as it is
    opened and closed (:class:`FileRoller`)."""
    if int(max_rows_per_file) <= 0:
        raise InvalidArgumentError("max_rows_per_file must be positive")
    targets = targets_for(plan.uri, plan.bases, target_bases, storage_options, base_store_params)
    shift = int(target_offset) % len(targets)
    targets = targets[shift:] + targets[:shift]
    roller = FileRoller(plan.schema, plan.fields, plan.storage_version, targets, storage_options,
                        int(max_rows_per_file), int(max_bytes_per_file), staging, staging_open,
                        max_rows_per_group, progress, first_fragment_id)
    try:
        for batch in plan.reader:
            roller.write(batch)
        return roller.finish(), list(zip(roller.written, roller.written_options))
    except BaseException:
        roller.abort()
        raise


