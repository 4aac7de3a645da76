"""Where a reader's bytes come from: an object store URI or an open file object.

All reads are ranged. :meth:`ByteSource.fetch` coalesces the page buffers one read needs into
few large reads (neighbouring buffers are separated only by 64-byte alignment padding, and
pages of one column chunk are usually adjacent), checks that every read came back whole, and
hands out zero-copy :class:`pyarrow.Buffer` slices of the reads.

Local files (the :class:`~lancefmt.io.LocalStore` of :mod:`lancefmt.io`) are read with
``preadv`` straight into buffers of pyarrow's memory pool: the pool recycles its pages, so a
large read costs one copy from the page cache and no page faults (reading into fresh ``bytes``
objects is several times slower for big files), and big reads are split over two threads.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from ..errors import CorruptFileError, LanceError
from ..io import open_store
from ..io.io_stats import record as record_io
from ..io.store import LocalStore
from ..io.uri import split_uri
from .fetch_batch import active as active_batch

# Ranges closer than this are read together (the gap is read and thrown away).
COALESCE_GAP = 256 * 1024
# ... but one read never grows beyond this (keeps remote requests parallel and bounded).
MAX_COALESCED = 64 * 1024 * 1024
# Local reads at least this large are split over a few threads (preadv releases the GIL).
PARALLEL_READ_MIN = 8 * 1024 * 1024
PARALLEL_READ_PIECE = 4 * 1024 * 1024
_READ_THREADS = 2
_HAS_PREADV = hasattr(os, "preadv")

_pool = None
_pool_lock = threading.Lock()


def _read_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(_READ_THREADS, thread_name_prefix="lancefmt-read")
    return _pool


def _forget_pool_after_fork():
    """A forked child (e.g. a PySpark worker) must not wait on its parent's threads."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


_MAX_FILE_SIZE = 1 << 63  # what a file offset (off_t, an HTTP range) can address


class ByteSource:
    """Ranged reads of one file, by URI (through :mod:`lancefmt.io`) or from a file object."""

    def __init__(self, uri_or_file, storage_options=None, store=None, file_size=None):
        self._file = None
        self._lock = None
        if isinstance(uri_or_file, (str, os.PathLike)):
            self.uri = os.fspath(uri_or_file)
            self.store = store if store is not None else open_store(self.uri, storage_options)
            self.path = self.uri
            self._local = (split_uri(self.uri).path
                           if isinstance(self.store, LocalStore) and _HAS_PREADV else None)
        elif hasattr(uri_or_file, "read") and hasattr(uri_or_file, "seek"):
            self.uri = None
            self.store = None
            self._file = uri_or_file
            self._local = None
            self._lock = threading.Lock()
            self.path = getattr(uri_or_file, "name", None) or repr(uri_or_file)
            if not isinstance(self.path, str):
                self.path = repr(uri_or_file)
        else:
            raise TypeError(f"expected a URI, a path or a binary file object, got {uri_or_file!r}")
        self._size = int(file_size) if file_size is not None else None
        if self._size is not None and not 0 <= self._size < _MAX_FILE_SIZE:
            # a size a manifest declares: no store holds a file that large
            raise CorruptFileError(f"declared file size {self._size} is impossible", self.path)
        self._mapped = None  # the whole local file, memory-mapped by fetch_scattered
        # the whole file, when the tail read at open covered it (small files: compaction reads
        # thousands of them); page reads are then slices of it, without a request each
        self._whole = None

    def _wrap(self, fn, *args):
        try:
            return fn(*args)
        except FileNotFoundError as e:  # a StorageNotFoundError too: a missing data file
            raise CorruptFileError(f"file not found ({e})", self.path) from None
        except LanceError:
            raise
        except OSError as e:
            raise CorruptFileError(f"read failed ({e})", self.path) from None

    @property
    def size(self) -> int:
        if self._size is None:
            if self._file is not None:
                with self._lock:
                    self._size = self._file.seek(0, os.SEEK_END)
            else:
                self._size = self._wrap(self.store.size, self.uri)
        return self._size

    def read_range(self, start: int, length: int) -> bytes:
        record_io(1, length)
        if self._file is not None:
            with self._lock:
                self._file.seek(start)
                return self._file.read(length)
        return self._wrap(self.store.read_range, self.uri, start, length)

    def read_tail(self, n: int) -> tuple[bytes, int]:
        """The last ``n`` bytes (or the whole file) and the file size, in one request."""
        if self._file is None and self._size is None:
            data, size = self._wrap(self.store.read_tail, self.uri, n)
            record_io(1, len(data))
            self._size = size
            if len(data) == size:
                self._whole = pa.py_buffer(data)
            return data, size
        size = self.size
        start = max(0, size - n)
        data = self.read_range(start, size - start)
        if start == 0 and len(data) == size and self._file is None:
            self._whole = pa.py_buffer(data)
        return data, size

    def _read_many(self, ranges) -> list[pa.Buffer]:
        if self._file is not None:
            return [pa.py_buffer(self.read_range(s, n)) for s, n in ranges]
        record_io(len(ranges), sum(n for _, n in ranges))
        if self._local is not None:
            return self._wrap(self._read_local, ranges)
        return [pa.py_buffer(d) for d in self._wrap(self.store.read_ranges, self.uri, ranges)]

    def _read_local(self, ranges) -> list[pa.Buffer]:
        """``preadv`` into pool buffers; big reads are cut into pieces read by two threads."""
        fd = os.open(self._local, os.O_RDONLY)
        try:
            bufs = [pa.allocate_buffer(n) for _, n in ranges]
            pieces = []
            for (start, n), buf in zip(ranges, bufs):
                step = PARALLEL_READ_PIECE if n >= PARALLEL_READ_MIN else max(n, 1)
                for off in range(0, n, step):
                    pieces.append((buf, off, start + off, min(step, n - off)))

            def read(piece):
                buf, off, pos, n = piece
                view = memoryview(buf)[off:off + n]
                got = 0
                while got < n:
                    k = os.preadv(fd, [view[got:]], pos + got)
                    if k <= 0:
                        break
                    got += k
                return got == n

            total = sum(n for _, n in ranges)
            if total >= PARALLEL_READ_MIN and len(pieces) > 1:
                ok = list(_read_pool().map(read, pieces))
            else:
                ok = [read(p) for p in pieces]
            if not all(ok):
                raise CorruptFileError("short read (file truncated?)", self.path)
            return bufs
        finally:
            os.close(fd)

    def mapped(self) -> pa.Buffer | None:
        """The whole local file memory-mapped (once) as one zero-copy buffer; None for other
        stores. Random access gathers rows straight from it."""
        if self._local is None:
            return None
        mapped = self._mapped
        if mapped is None:
            try:
                mapped = self._mapped = pa.memory_map(self._local).read_buffer()
            except OSError as e:
                raise CorruptFileError(f"cannot map the file ({e})", self.path) from None
        return mapped

    def fetch_scattered(self, ranges: list[tuple[int, int]]) -> list[pa.Buffer]:
        """Like :meth:`fetch`, for random access (many small ranges far apart). A local file
        is memory-mapped once and each range is a zero-copy slice of the map: no syscall and
        no copy per range, and only the OS pages holding the rows are touched. Other sources
        coalesce as :meth:`fetch` does."""
        if self._whole is not None:
            return self._slices(self._whole, ranges)
        mapped = self.mapped()
        if mapped is None:
            return self.fetch(ranges)
        record_io(len(ranges), sum(n for _, n in ranges))  # the pages these slices touch
        return self._slices(mapped, ranges)

    def _slices(self, whole: pa.Buffer, ranges) -> list[pa.Buffer]:
        """Zero-copy slices of ``whole`` (the file's bytes), each range checked against it."""
        size = whole.size
        out = []
        for start, n in ranges:
            if start < 0 or n < 0 or start + n > size:
                raise CorruptFileError(f"short read: {n} bytes at {start} of a {size}-byte file "
                                       f"(file truncated?)", self.path)
            out.append(whole.slice(start, n))
        return out

    def fetch(self, ranges: list[tuple[int, int]]) -> list[pa.Buffer]:
        """The bytes of each ``(offset, size)`` range as zero-copy buffers, via coalesced reads.
        Inside a :class:`~.fetch_batch.FetchBatch` the reads of an object store go out with
        those of the batch's other units."""
        if not ranges:
            return []
        if self._whole is not None:
            return self._slices(self._whole, ranges)
        if self._local is None and self._file is None:
            batch = active_batch()
            if batch is not None:
                return batch.fetch(self, ranges)
        return self.fetch_now(ranges)

    def fetch_now(self, ranges: list[tuple[int, int]]) -> list[pa.Buffer]:
        """:meth:`fetch`, issued at once."""
        if not ranges:
            return []
        if self._whole is not None:
            return self._slices(self._whole, ranges)
        order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
        groups: list[list] = []  # [start, end, [range indices]]
        for i in order:
            s, n = ranges[i]
            e = s + n
            if groups and s <= groups[-1][1] + COALESCE_GAP and e - groups[-1][0] <= MAX_COALESCED:
                g = groups[-1]
                if e > g[1]:
                    g[1] = e
                g[2].append(i)
            else:
                groups.append([s, e, [i]])
        reads = [(g[0], g[1] - g[0]) for g in groups]
        datas = self._read_many(reads)
        out: list = [None] * len(ranges)
        for (gs, ge, members), data in zip(groups, datas):
            if data.size != ge - gs:
                raise CorruptFileError(f"short read: {data.size} of {ge - gs} bytes at {gs} "
                                       f"(file truncated?)", self.path)
            for i in members:
                s, n = ranges[i]
                out[i] = data.slice(s - gs, n)
        return out
