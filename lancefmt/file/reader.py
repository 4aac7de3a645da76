"""LanceFileReader: read a Lance v2 data file (file versions 2.0, 2.1 and 2.2) into pyarrow.

Opening a file costs one ranged read of its tail (the footer, offset tables, FileDescriptor and
column metadata). Reads then fetch only the page buffers of the pages that overlap the requested
rows, coalesced into few large ranged reads, and decode them with the field readers of the
file's version (:mod:`lancefmt.encoding`). Results are ``pa.Table`` s whose columns are chunked
by page; fixed-width pages are zero-copy views of the bytes read.

Decoding runs in Cython ``nogil`` kernels and pyarrow, and reads release the GIL, so several
files (or several readers of one file) can be read from a thread pool concurrently.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..encoding import field_readers_for
from ..encoding.column import PageSource
from ..encoding.take import take_chunks
from ..errors import CorruptFileError, FileError, InvalidArgumentError, LanceError
from .batches import combine_batch, output_table
from .fetch_batch import active as active_batch
from .legacy.format import legacy_footer_version
from .legacy.reader import LegacyFileReader
from .metadata import TAIL_GUESS, FileMetadata, read_metadata
from .projection import Projection, data_file_column_map, make_projection, select_roots
from .schema import field_tree
from .source import ByteSource

DEFAULT_BATCH_SIZE = 8192
# A streaming read of an object store fetches the pages of the windows ahead with the current
# one, up to this many bytes a round (one request at most: the stores' max_iop_size): small
# pages (pylance writes 2.0 pages of ~650 KB) then cost a request per 16 MiB, not several per
# window.
READAHEAD_BYTES = 16 << 20
# A streaming read's first window under 1/this of each page it lies in is read like a take
# (only its mini-block chunks: a limit of 1 does not decode 1M-row pages).
SMALL_READ_SHARE = 16
# Projections whose field readers a reader keeps (the per-projection memo is reset beyond).
READERS_MEMO = 32


class LanceFileReader:
    """A Lance data file opened for reading.

    ``uri_or_file`` is a path or URI (read through :func:`lancefmt.io.open_store` with
    ``storage_options``, or through ``store``) or a seekable binary file object. A known
    ``file_size`` (e.g. ``DataFile.file_size_bytes``) saves the size request.
    """

    def __new__(cls, uri_or_file, storage_options: dict | None = None, *, store=None,
                file_size: int | None = None):
        """A legacy (v0.1) file opens as a :class:`~lancefmt.file.legacy.LegacyFileReader`,
        which reads behind the same interface; the tail read here is not repeated."""
        source = ByteSource(uri_or_file, storage_options, store, file_size)
        tail, size = source.read_tail(TAIL_GUESS)
        if legacy_footer_version(tail) is not None:
            return LegacyFileReader(source, tail, size)
        obj = super().__new__(cls)
        obj._opened = (source, tail, size)
        return obj

    def __init__(self, uri_or_file, storage_options: dict | None = None, *, store=None,
                 file_size: int | None = None):
        self._source, tail, size = self._opened
        del self._opened
        self.path = self._source.path
        self._meta: FileMetadata = read_metadata(self._source.read_range, size, self.path, tail)
        try:
            self._roots = field_tree(self._meta.fields)
        except CorruptFileError as e:
            raise CorruptFileError(f"bad schema: {e.reason}", self.path) from None
        self._readers_factory = field_readers_for(self._meta.version, self.path)
        self._file_projection = None
        self._readers_memo: dict = {}  # id(projection) -> (projection, field readers)

    # -- identity ---------------------------------------------------------------------------
    @property
    def metadata_nbytes(self) -> int:
        """Bytes of the file's metadata this reader holds parsed (its tail from the column
        metadata on): what a cache of opened readers is charged."""
        return int(self._meta.file_size - self._meta.footer.column_meta_start)

    @property
    def num_rows(self) -> int:
        return self._meta.num_rows

    @property
    def version(self) -> tuple[int, int]:
        """The data file version, e.g. ``(2, 0)`` (``DataFile.file_major/minor_version``)."""
        return self._meta.version

    @property
    def fields(self) -> list:
        """The Lance Field messages of the file's FileDescriptor (pre-order)."""
        return list(self._meta.fields)

    @property
    def schema_metadata(self) -> dict:
        return dict(self._meta.schema_metadata)

    @property
    def schema(self) -> pa.Schema:
        return self.projection().schema

    @property
    def metadata(self) -> FileMetadata:
        """The parsed footer, tables, FileDescriptor and column metadata."""
        return self._meta

    @property
    def file_size(self) -> int:
        return self._meta.file_size

    @property
    def num_columns(self) -> int:
        return len(self._meta.columns)

    def read_global_buffer(self, index: int) -> bytes:
        """The raw bytes of global buffer ``index`` (0 is the FileDescriptor)."""
        if not 0 <= index < len(self._meta.global_buffers):
            raise InvalidArgumentError(f"no global buffer {index}")
        pos, size = self._meta.global_buffers[index]
        return self._source.fetch([(pos, size)])[0].to_pybytes()

    # -- projections ------------------------------------------------------------------------
    def projection(self, columns: Sequence[str] | None = None, *, fields=None, field_ids=None,
                   column_indices=None) -> Projection:
        """What to read: top-level ``columns`` of the file by name (all when ``None``), or --
        for datasets -- the dataset's Lance ``fields`` with the DataFile's ``field_ids`` and
        ``column_indices`` (see :mod:`lancefmt.file.projection`)."""
        if fields is not None:
            if field_ids is None or column_indices is None:
                raise InvalidArgumentError("fields= needs field_ids= and column_indices=")
            roots = field_tree(fields)
            if columns is not None:
                roots = select_roots(roots, columns)
            try:
                column_of = data_file_column_map(field_ids, column_indices)
            except CorruptFileError as e:
                raise CorruptFileError(f"manifest column_indices: {e.reason}", self.path) from None
            stored = self._readers_factory.column_field_ids
            missing = [i for r in roots for i in sorted(stored(r)) if i not in column_of]
            if missing:
                raise InvalidArgumentError(
                    f"field id(s) {missing} are not stored in {self.path}")
            return make_projection(roots, column_of)
        if columns is None:
            if self._file_projection is None:
                self._file_projection = self._file_schema_projection(self._roots)
            return self._file_projection
        return self._file_schema_projection(select_roots(self._roots, columns))

    def _file_schema_projection(self, roots) -> Projection:
        """A projection over the file's own schema; schema errors name the file."""
        try:
            return make_projection(roots, self._readers_factory.assign_columns(
                                       self._roots, self._meta.columns, self.path),
                                   self._meta.schema_metadata)
        except FileError as e:
            if e.path is None:
                raise type(e)(f"schema: {e.reason}", self.path) from None
            raise

    def _resolve(self, columns) -> Projection:
        if isinstance(columns, Projection):
            return columns
        return self.projection(columns)

    @property
    def source(self) -> ByteSource:
        """Where the file's bytes come from (ranged reads; a mapping of a local file)."""
        return self._source

    def field_readers(self, proj: Projection):
        """The field readers of ``proj``, built once per projection object (a dataset's
        cached read plan reuses its projection, so repeated takes skip this work)."""
        hit = self._readers_memo.get(id(proj))
        if hit is not None and hit[0] is proj:
            return hit[1]
        readers = self._build_readers(proj)
        if len(self._readers_memo) >= READERS_MEMO:
            self._readers_memo.clear()
        self._readers_memo[id(proj)] = (proj, readers)
        return readers

    def _build_readers(self, proj: Projection):
        columns = self._meta.columns
        readers = []
        for root, field in zip(proj.roots, proj.storage_schema):
            try:
                r = self._readers_factory.build(root, field.type, proj.column_of.get, columns,
                                                self.path)
            except LanceError:
                raise
            except (ValueError, TypeError, KeyError, IndexError) as e:
                raise CorruptFileError(f"field {root.name!r}: {e}", self.path) from None
            if r.num_rows != self.num_rows:
                raise CorruptFileError(
                    f"field {root.name!r} has {r.num_rows} rows, the file has {self.num_rows}",
                    self.path)
            readers.append(r)
        return readers

    def _page_source(self) -> PageSource:
        # a local file is read through its memory map: pages are zero-copy views of the
        # OS page cache (no read syscall, no copy); other stores coalesce ranged reads
        return PageSource(self._meta.columns, self._source.fetch_scattered, self.path,
                          self._meta.data_end)

    # -- reads ----------------------------------------------------------------------------------
    def read_all(self, columns=None) -> pa.Table:
        """Every row of the projected columns."""
        return self.read_range(0, self.num_rows, columns)

    def read_range(self, start: int, stop: int, columns=None) -> pa.Table:
        """Rows ``[start, stop)``; only the pages overlapping the range are read."""
        proj = self._resolve(columns)
        start, stop = int(start), int(stop)
        if not 0 <= start <= stop <= self.num_rows:
            raise InvalidArgumentError(
                f"row range [{start}, {stop}) outside the file's {self.num_rows} rows")
        readers = self.field_readers(proj)
        source = self._page_source()
        return self._read_with(readers, proj, source, start, stop)

    def _read_with(self, readers, proj, source, start, stop) -> pa.Table:
        source.prefetch([p for r in readers for p in r.pages_for(start, stop)])
        arrays = []
        for r, field in zip(readers, proj.storage_schema):
            chunks = self._guard(r.read, source, start, stop)
            arrays.append(pa.chunked_array(chunks, type=field.type))
        return self._guard(output_table, arrays, proj, stop - start)

    def _guard(self, fn, *args):
        """Run a decode step; stray low-level errors on corrupt input become CorruptFileError."""
        try:
            return fn(*args)
        except LanceError:
            raise
        except (pa.ArrowException, ValueError, TypeError, IndexError, OverflowError,
                MemoryError) as e:
            raise CorruptFileError(f"undecodable data ({type(e).__name__}: {e})", self.path) from None

    def take(self, indices, columns=None) -> pa.Table:
        """Rows at ``indices`` (any order, repeats allowed). Only the pages holding them are
        read; from plain fixed-width pages (numbers, vectors...) only the rows' own bytes."""
        proj = self._resolve(columns)
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_rows):
            raise InvalidArgumentError(f"row index out of range for {self.num_rows} rows")
        readers = self.field_readers(proj)
        if idx.size == 0:
            return self._read_with(readers, proj, self._page_source(), 0, 0)
        if idx.size == 1 or bool(np.all(idx[1:] > idx[:-1])):  # sorted, unique: as asked
            uniq, inverse = idx, None
        else:
            uniq, inverse = np.unique(idx, return_inverse=True)
        source = PageSource(self._meta.columns, self._source.fetch_scattered, self.path,
                            self._meta.data_end)
        source.mapped = self._source.mapped()
        in_order = inverse is None

        def column(r, f):
            chunks = self._guard(r.take, source, uniq)
            if in_order:
                return pa.chunked_array(chunks, type=f.type)
            return self._guard(take_chunks, chunks, f.type, pa.array(inverse.reshape(-1)))

        units = [lambda r=r, f=f: column(r, f) for r, f in zip(readers, proj.storage_schema)]
        batch = active_batch()
        if batch is not None and len(units) > 1 and source.mapped is None:
            arrays = batch.fan_out(units)  # the columns' reads go out together
        else:
            arrays = [u() for u in units]
        return self._guard(output_table, arrays, proj, len(idx))

    def read_batches(self, batch_size: int = DEFAULT_BATCH_SIZE, columns=None, *,
                     start: int = 0, stop: int | None = None) -> Iterator[pa.RecordBatch]:
        """Stream rows ``[start, stop)`` as RecordBatches of ``batch_size`` rows (the last may be
        shorter). Each page is fetched and decoded once; memory holds the current pages only."""
        return map(combine_batch, self.read_windows(batch_size, columns, start=start, stop=stop))

    def read_windows(self, window: int, columns=None, *, start: int = 0,
                     stop: int | None = None) -> Iterator[pa.Table]:
        """:meth:`read_batches` as tables whose columns keep one chunk per page they cross
        (zero-copy slices): a scan cuts its batches from them, copying only a batch that
        straddles pages, where one RecordBatch per window copied every window whose rows lie
        on several pages (all of them, for files of small pages)."""
        if window <= 0:
            raise InvalidArgumentError("batch_size must be positive")
        proj = self._resolve(columns)
        stop = self.num_rows if stop is None else int(stop)
        if not 0 <= start <= stop <= self.num_rows:
            raise InvalidArgumentError(f"row range [{start}, {stop}) outside the file")
        readers = self.field_readers(proj)
        source = self._page_source()
        remote = self._source.remote
        ahead = start
        pos = start
        while pos < stop:
            end = min(pos + window, stop)
            if pos == start and self._small_in_pages(readers, pos, end):
                # a few rows of big pages (a limit's): read like a take, only their chunks
                table = self.take(np.arange(pos, end, dtype=np.int64), proj)
                pos = end
                yield table
                continue
            if remote and end > ahead:
                ahead = self._read_ahead(readers, source, pos, end, stop, window)
            table = self._read_with(readers, proj, source, pos, end)
            if end < stop:
                for r in readers:
                    self._guard(r.evict_before, source, end)
            yield table
            pos = end

    @staticmethod
    def _small_in_pages(readers, start, stop) -> bool:
        """Rows ``[start, stop)`` are under a sixteenth of every page they lie in."""
        pages_ = [p for r in readers for p in r.pages_for(start, stop)]
        return bool(pages_) and (stop - start) * SMALL_READ_SHARE <= min(p.num_rows for p in pages_)

    def _read_ahead(self, readers, source, pos, end, stop, window) -> int:
        """Fetch the pages of rows ``[pos, ahead)`` in one round, ``ahead`` (returned) the end
        of the last window whose pages keep the round within READAHEAD_BYTES (at least
        ``end``)."""
        wanted: dict = {}

        def add(lo, hi) -> int:
            for r in readers:
                for p in r.pages_for(lo, hi):
                    wanted.setdefault((p.column, p.index), p)
            return sum(int(s) for p in wanted.values() for s in p.buffer_sizes)

        add(pos, end)
        ahead = end
        while ahead < stop:
            before = dict(wanted)
            if add(ahead, min(ahead + window, stop)) > READAHEAD_BYTES:
                wanted = before
                break
            ahead = min(ahead + window, stop)
        source.prefetch(list(wanted.values()))
        return ahead

    # -- misc -------------------------------------------------------------------------------------
    def __repr__(self):
        return (f"LanceFileReader({self.path!r}, version={self.version[0]}.{self.version[1]}, "
                f"rows={self.num_rows}, columns={len(self._meta.columns)})")
