"""Manifest files (``_versions/*.manifest``): reading, writing, and a columnar fragment view.

On-disk layout, byte-compatible with Lance (pylance 14.0.2 writes exactly this)::

    [u32 len][IndexSection]      only when the dataset has indices; Manifest.index_section = offset
    [u32 len][Transaction]       inline copy of the committing transaction;
                                 Manifest.transaction_section (field 23) = offset
    [u32 len][Manifest]          always last
    i64 manifest offset, i16 0, i16 2, b"LANC"   (16-byte footer)

Reading follows Lance's ``read_manifest``: fetch the last 64 KiB (a known size saves the HEAD
request; a wrong known size is retried without it), check the magic, the footer offset and the
recorded length, and read the rest of the message only if it did not fit. Everything after that
is checked by the Cython scanner (``_manifest.pyx``), which turns the fragment list into numpy
columns (:class:`FragmentTable`) without a Python object per fragment; the rest of the manifest
(schema, bases, config...) is decoded as a protobuf without its fragments, and the full protobuf
only when asked for (:attr:`ManifestFile.manifest`).
"""
from __future__ import annotations

import struct
from datetime import datetime, timedelta

import numpy as np
from google.protobuf.message import DecodeError

from .._proto import table_pb2, transaction_pb2
from ..errors import CorruptFileError, DatasetNotFoundError, UnsupportedFeatureError
from ..io import open_store
from . import feature_flags as ff
from ._manifest import gather_strings, scan_manifest
from .naming import deletion_file_name

MAGIC = b"LANC"
FOOTER_SIZE = 16
PREFETCH_SIZE = 64 * 1024
# Footer version Lance writes (lance_file::format MAJOR/MINOR); readers ignore it.
FOOTER_VERSION = (0, 2)

_FOOTER = struct.Struct("<qhh4s")
_U32 = struct.Struct("<I")

def _parse(cls, data, what: str, path):
    try:
        return cls.FromString(data)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise CorruptFileError(f"{what} does not decode: {e}", path) from None


# -- the columnar fragment view ---------------------------------------------------------------

class FragmentTable:
    """The fragments of one manifest as numpy columns, in manifest order.

    Per fragment (length ``len(self)``): ``ids`` (uint64), ``physical_rows`` (uint64, deleted
    rows included; 0 = unknown in legacy manifests), ``num_deleted_rows`` (uint64; 0 without a
    deletion file, and also 0 when a deletion file does not record its count - see
    ``deletion_count_known``), ``has_deletion_file`` (bool), ``deletion_file_type`` (int32,
    -1 none, 0 arrow, 1 bitmap), ``deletion_read_version``/``deletion_id`` (uint64),
    ``deletion_base_id`` (int64, -1 = absent), ``num_data_files`` (int64), ``base_id`` (int64,
    base of the first data file, -1 = absent or no file), ``has_row_ids`` (bool),
    ``num_overlays`` (uint32), ``byte_offsets``/``byte_lengths`` (int64: the fragment's
    protobuf inside :attr:`ManifestFile.manifest_bytes`).

    Per data file, flattened in fragment order (fragment ``i`` owns
    ``data_file_offsets[i]:data_file_offsets[i+1]``): ``file_fragment_index``,
    ``file_base_id`` (-1 = absent), ``file_size_bytes``, ``file_major_version``,
    ``file_minor_version``; :meth:`data_file_paths` gives the names as one Arrow string array.
    """

    def __init__(self, cols: dict, buf, msg_start: int, path=None):
        self._buf = buf
        self._msg_start = msg_start
        self.path = path
        self.ids = cols["id"]
        self.physical_rows = cols["physical_rows"]
        self.num_deleted_rows = cols["num_deleted_rows"]
        self.has_deletion_file = cols["has_deletion_file"]
        self.deletion_file_type = cols["deletion_file_type"]
        self.deletion_read_version = cols["deletion_read_version"]
        self.deletion_id = cols["deletion_id"]
        self.deletion_base_id = cols["deletion_base_id"]
        self.data_file_offsets = cols["file_offsets"]
        self.num_data_files = np.diff(self.data_file_offsets)
        self.base_id = cols["base_id"]
        self.has_row_ids = cols["has_row_ids"]
        self.num_overlays = cols["num_overlays"]
        self.byte_offsets = cols["offset"]
        self.byte_lengths = cols["length"]
        self.file_base_id = cols["file_base_id"]
        self.file_size_bytes = cols["file_size_bytes"]
        self.file_major_version = cols["file_major_version"]
        self.file_minor_version = cols["file_minor_version"]
        self._path_offset = cols["path_offset"]
        self._path_length = cols["path_length"]
        self._file_fragment_index = None
        self._paths = None
        self._index = None
        self._row_counts: dict = {}
        # Releases before 0.8.1 wrote no writer_version and could record physical_rows wrongly
        # (0.8.0 stored the live count); Lance reads their data files instead (lance#1531).
        self.row_counts_trusted = True

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self):
        return (f"FragmentTable({len(self)} fragments, {self.num_files} data files, "
                f"{self.total_live_rows} live rows)")

    # -- totals ---------------------------------------------------------------------------
    @property
    def num_files(self) -> int:
        return len(self.file_base_id)

    @property
    def num_rows(self) -> np.ndarray:
        """Live rows per fragment (physical minus deleted)."""
        return self.physical_rows - self.num_deleted_rows

    @property
    def deletion_count_known(self) -> np.ndarray:
        """False where a deletion file does not record how many rows it deletes (its count
        then has to be read from the file)."""
        return ~self.has_deletion_file | (self.num_deleted_rows > 0)

    @property
    def total_physical_rows(self) -> int:
        return int(self.physical_rows.sum(dtype=np.uint64))

    @property
    def total_deleted_rows(self) -> int:
        return int(self.num_deleted_rows.sum(dtype=np.uint64))

    @property
    def total_live_rows(self) -> int:
        return self.total_physical_rows - self.total_deleted_rows

    @property
    def num_deletion_files(self) -> int:
        return int(self.has_deletion_file.sum())

    def summary(self) -> dict:
        """The version summary pylance reports in ``versions()[i]["metadata"]`` (Lance's
        ``Manifest::summary``), as strings."""
        known = (self.physical_rows > 0) & self.deletion_count_known
        total_rows = int(self.num_rows[known].sum(dtype=np.uint64))
        deleted = self.total_deleted_rows
        return {
            "total_data_file_rows": str(total_rows + deleted),
            "total_data_files": str(self.num_files),
            "total_deletion_file_rows": str(deleted),
            "total_deletion_files": str(self.num_deletion_files),
            "total_files_size": str(int(self.file_size_bytes.sum(dtype=np.uint64))),
            "total_fragments": str(len(self)),
            "total_rows": str(total_rows),
        }

    # -- per data file --------------------------------------------------------------------
    @property
    def file_fragment_index(self) -> np.ndarray:
        """For each data file, the position of its fragment."""
        if self._file_fragment_index is None:
            self._file_fragment_index = np.repeat(
                np.arange(len(self), dtype=np.int64), self.num_data_files)
        return self._file_fragment_index

    def data_file_paths(self):
        """Every ``DataFile.path`` (flattened, in fragment order) as a ``pyarrow`` string array."""
        if self._paths is None:
            import pyarrow as pa

            values, offsets = gather_strings(self._buf, self._msg_start, self._path_offset,
                                             self._path_length)
            typ = pa.string() if offsets.dtype == np.int32 else pa.large_string()
            self._paths = pa.Array.from_buffers(
                typ, len(self._path_offset), [None, pa.py_buffer(offsets), pa.py_buffer(values)])
        return self._paths

    def deletion_file_names(self) -> list:
        """Deletion file name per fragment (None without one), see ``naming``."""
        names = [None] * len(self)
        for i in np.flatnonzero(self.has_deletion_file):
            t = int(self.deletion_file_type[i])
            names[i] = deletion_file_name(int(self.ids[i]), int(self.deletion_read_version[i]),
                                          int(self.deletion_id[i]), t)
        return names

    # -- single fragments -----------------------------------------------------------------
    def position(self, fragment_id: int) -> int:
        """Position of the fragment with id ``fragment_id`` (KeyError if absent)."""
        fid = int(fragment_id)
        if self._index is None:
            ids = self.ids
            # Lance keeps fragments sorted by id: binary search; otherwise a dict, built once.
            self._index = True if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()) else \
                {int(f): i for i, f in enumerate(ids.tolist())}
        if self._index is True:
            if 0 <= fid < (1 << 64):
                i = int(np.searchsorted(self.ids, np.uint64(fid)))
                if i < len(self.ids) and int(self.ids[i]) == fid:
                    return i
        elif fid in self._index:
            return self._index[fid]
        raise KeyError(f"no fragment with id {fragment_id}")

    def fragment_bytes(self, i: int) -> memoryview:
        """The serialized ``DataFragment`` at position ``i``."""
        i = int(i)
        if not -len(self) <= i < len(self):
            raise IndexError(f"fragment position {i} out of range")
        start = self._msg_start + int(self.byte_offsets[i])
        return memoryview(self._buf)[start:start + int(self.byte_lengths[i])]

    def fragment(self, i: int) -> "table_pb2.DataFragment":
        """Decode the fragment at position ``i`` (with its row count resolved, see
        :meth:`ManifestFile.set_row_counts`)."""
        pb = _parse(table_pb2.DataFragment, self.fragment_bytes(i), "fragment", self.path)
        if self._row_counts:
            n = self._row_counts.get(int(i) % len(self))
            if n is not None:
                pb.physical_rows = n
        return pb

    def unknown_row_counts(self) -> np.ndarray:
        """Positions of fragments with data files whose ``physical_rows`` is 0 (legacy manifests
        leave it unset: the data file has the count), or every fragment with data files when
        the manifest's counts are not to be trusted (no writer_version, as Lance decides)."""
        if not self.row_counts_trusted:
            return np.flatnonzero(self.num_data_files > 0)
        return np.flatnonzero((self.physical_rows == 0) & (self.num_data_files > 0))

    def fragment_by_id(self, fragment_id: int) -> "table_pb2.DataFragment":
        return self.fragment(self.position(fragment_id))

    def to_arrow(self):
        """One row per fragment: id, physical_rows, num_deleted_rows, num_rows, num_data_files,
        base_id (null = dataset root), has_deletion_file, deletion_base_id."""
        import pyarrow as pa

        def nullable(a):
            return pa.array(a, mask=a < 0, type=pa.int64())

        return pa.table({
            "id": self.ids, "physical_rows": self.physical_rows,
            "num_deleted_rows": self.num_deleted_rows, "num_rows": self.num_rows,
            "num_data_files": self.num_data_files, "base_id": nullable(self.base_id),
            "has_deletion_file": self.has_deletion_file,
            "deletion_base_id": nullable(self.deletion_base_id),
        })


STABLE_VERSION = "2.2"  # what pylance 14 calls "stable" (lancefmt.file.format.DEFAULT_WRITE_VERSION)


def storage_version_of_file(major: int, minor: int) -> str:
    """The data storage version a ``DataFile``'s file version means: (0, 0..2) legacy "0.1"
    (0.10-era files say (0, 0)), (0, 3) "2.0" (how pylance 0.13-0.16 recorded 2.0 files),
    else "major.minor"."""
    if major == 0:
        return "0.1" if minor < 3 else "2.0"
    return f"{major}.{minor}"


# -- reading ----------------------------------------------------------------------------------

class ManifestFile:
    """One manifest file as read: the header (everything but the fragments, as a
    ``table_pb2.Manifest`` with no fragments), the :class:`FragmentTable`, and on request the
    full protobuf, the inline transaction and the index section."""

    def __init__(self, uri, size, buf: bytes, buf_start: int, msg_start: int, msg_end: int,
                 footer_version, store=None):
        self.uri = uri
        self.size = size
        self.footer_version = footer_version
        self._buf = buf
        self._buf_start = buf_start
        self._msg_start = msg_start
        self._msg_end = msg_end
        self._store = store
        self._manifest = None
        cols = scan_manifest(buf, msg_start, msg_end, uri)
        spans = cols["spans"]
        mv = memoryview(buf)
        header = b"".join(mv[msg_start + int(spans[j]):msg_start + int(spans[j + 1])]
                          for j in range(0, len(spans), 2))
        self.header = _parse(table_pb2.Manifest, header, "manifest", uri)
        self.fragments = FragmentTable(cols, buf, msg_start, uri)
        self.fragments.row_counts_trusted = self.header.HasField("writer_version")
        self._validate()

    def _validate(self):
        frags = self.fragments
        bad = frags.has_deletion_file & ((frags.deletion_file_type < 0) | (frags.deletion_file_type > 1))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise UnsupportedFeatureError(
                f"fragment {int(frags.ids[i])} has a deletion file of unknown type "
                f"{int(frags.deletion_file_type[i])}", self.uri)
        if self.header.reader_feature_flags & ff.FLAG_STABLE_ROW_IDS and not frags.has_row_ids.all():
            i = int(np.flatnonzero(~frags.has_row_ids)[0])
            raise CorruptFileError(
                f"the manifest uses stable row ids but fragment {int(frags.ids[i])} has no row ids",
                self.uri)

    # -- header fields ----------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self.header.version

    @property
    def reader_feature_flags(self) -> int:
        return self.header.reader_feature_flags

    @property
    def writer_feature_flags(self) -> int:
        return self.header.writer_feature_flags

    @property
    def timestamp_ns(self) -> int:
        ts = self.header.timestamp
        return ts.seconds * 1_000_000_000 + ts.nanos

    @property
    def timestamp(self) -> datetime:
        """Commit time as pylance's ``versions()`` shows it (naive local time, microseconds)."""
        ns = self.timestamp_ns
        try:
            return timestamp_to_datetime(ns)
        except (OverflowError, OSError, ValueError):  # beyond what a datetime can hold
            raise CorruptFileError(f"commit time {ns} ns since the epoch is out of range",
                                   self.uri) from None

    @property
    def data_storage_version(self) -> str:
        """The data file format version (``"2.0"``, ``"2.1"``, ...), inferred as Lance does for
        old manifests without ``data_format``."""
        h = self.header
        if h.HasField("data_format"):
            return h.data_format.version
        f = self.fragments
        if f.num_files:
            major, minor = int(f.file_major_version[0]), int(f.file_minor_version[0])
            return storage_version_of_file(major, minor)
        # no files: the deprecated v2 flag meant "the stable format", which pylance 14 resolves
        # to its stable version
        return STABLE_VERSION if h.writer_feature_flags & ff.FLAG_USE_V2_FORMAT_DEPRECATED \
            else "0.1"

    @property
    def manifest_bytes(self) -> memoryview:
        """The serialized Manifest message."""
        return memoryview(self._buf)[self._msg_start:self._msg_end]

    @property
    def manifest(self) -> "table_pb2.Manifest":
        """The whole ``table_pb2.Manifest`` (decoded on first use; unknown fields are kept)."""
        if self._manifest is None:
            self._manifest = _parse(table_pb2.Manifest, self.manifest_bytes, "manifest", self.uri)
            for i, n in self.fragments._row_counts.items():
                self._manifest.fragments[i].physical_rows = n
        return self._manifest

    def set_row_counts(self, counts: dict) -> None:
        """Fill in the row counts (position -> rows, read from the data files) of fragments
        whose ``physical_rows`` the manifest leaves 0, as pylance does; every view of the
        fragments (columns, decoded fragments, the full protobuf) then has them."""
        frags = self.fragments
        rows = frags.physical_rows.copy()
        for i, n in counts.items():
            rows[int(i)] = int(n)
            frags._row_counts[int(i)] = int(n)
            if self._manifest is not None:
                self._manifest.fragments[int(i)].physical_rows = int(n)
        frags.physical_rows = rows

    def check_readable(self) -> None:
        """Refuse (UnsupportedFeatureError / CorruptFileError) a version lancefmt cannot read."""
        ff.check_paired_flags(self.reader_feature_flags, self.writer_feature_flags, self.uri)
        ff.check_reader_flags(self.reader_feature_flags, self.uri)

    def check_writable(self) -> None:
        """Refuse to commit on top of a version whose writer flags lancefmt does not know."""
        ff.check_paired_flags(self.reader_feature_flags, self.writer_feature_flags, self.uri)
        ff.check_writer_flags(self.writer_feature_flags, self.uri)

    # -- sections before the manifest -------------------------------------------------------
    def _section(self, pos: int, what: str) -> memoryview:
        limit = self._buf_start + self._msg_start - 4  # sections precede the Manifest
        if pos < 0 or pos + 4 > limit:
            raise CorruptFileError(f"{what} offset {pos} is outside the file", self.uri)
        if pos < self._buf_start:
            store = self._store or open_store(self.uri)
            extra = store.read_range(self.uri, pos, self._buf_start - pos)
            if len(extra) != self._buf_start - pos:
                raise CorruptFileError(f"short read of the {what}", self.uri)
            self._buf = extra + self._buf
            self._msg_start += len(extra)
            self._msg_end += len(extra)
            self._buf_start = pos
            self.fragments._buf = self._buf
            self.fragments._msg_start = self._msg_start
        local = pos - self._buf_start
        (length,) = _U32.unpack_from(self._buf, local)
        if pos + 4 + length > limit:
            raise CorruptFileError(f"{what} at offset {pos} runs past the manifest", self.uri)
        return memoryview(self._buf)[local + 4:local + 4 + length]

    def read_bytes(self, pos: int, length: int) -> bytes:
        """``length`` bytes at ``pos`` of the part of the file before the manifest (where
        legacy dictionary values live); fetched from storage when not read yet."""
        limit = self._buf_start + self._msg_start - 4
        if pos < 0 or length < 0 or pos + length > limit:
            raise CorruptFileError(f"{length} bytes at {pos} are not before the manifest", self.uri)
        if pos < self._buf_start:
            store = self._store or open_store(self.uri)
            extra = store.read_range(self.uri, pos, self._buf_start - pos)
            if len(extra) != self._buf_start - pos:
                raise CorruptFileError("short read before the manifest", self.uri)
            self._buf = extra + self._buf
            self._msg_start += len(extra)
            self._msg_end += len(extra)
            self._buf_start = pos
            self.fragments._buf = self._buf
            self.fragments._msg_start = self._msg_start
        local = pos - self._buf_start
        return bytes(memoryview(self._buf)[local:local + length])

    def dictionary_values(self) -> dict:
        """{field id: pa.Array} of the legacy dictionary values this file holds (see
        :mod:`lancefmt.table.legacy_dictionaries`)."""
        from .legacy_dictionaries import dictionary_fields, read_values

        limit = self._buf_start + self._msg_start - 4
        return {f.id: read_values(self.read_bytes, f, limit, self.uri)
                for f in dictionary_fields(self.header.fields) if f.HasField("dictionary")}

    @property
    def transaction_offset(self):
        """Offset of the inline transaction: field 23, or the older field 21 (None if absent)."""
        h = self.header
        if h.HasField("transaction_section"):
            return h.transaction_section
        if h.HasField("transaction_section_deprecated"):
            return h.transaction_section_deprecated
        return None

    def transaction(self):
        """The inline ``transaction_pb2.Transaction``, or None if the manifest has none."""
        pos = self.transaction_offset
        if pos is None:
            return None
        return _parse(transaction_pb2.Transaction, self._section(pos, "inline transaction"),
                      "inline transaction", self.uri)

    def index_section(self):
        """The ``table_pb2.IndexSection``, or None when the version has no indices."""
        if not self.header.HasField("index_section"):
            return None
        pos = self.header.index_section
        return _parse(table_pb2.IndexSection, self._section(pos, "index section"),
                      "index section", self.uri)

    @property
    def indices(self) -> list:
        sec = self.index_section()
        return list(sec.indices) if sec is not None else []

    def __repr__(self):
        return f"ManifestFile({self.uri!r}, version={self.version}, {len(self.fragments)} fragments)"


def timestamp_to_datetime(ns: int) -> datetime:
    """Nanoseconds since the epoch -> the naive local datetime pylance's ``versions()`` returns.

    Uses pylance's own float arithmetic (``ns % 1e9`` loses the last digits of a 19-digit
    integer), so both give the same microsecond; :attr:`ManifestFile.timestamp_ns` is exact."""
    return datetime.fromtimestamp(ns // 1e9) + timedelta(microseconds=(ns % 1e9) // 1e3)


def read_manifest(uri: str, *, size: int | None = None, store=None,
                  storage_options: dict | None = None) -> ManifestFile:
    """Read and check the manifest file at ``uri`` (``size``: its length if already known, e.g.
    from a listing). A missing file raises :class:`DatasetNotFoundError`; anything malformed a
    :class:`CorruptFileError` naming the file."""
    store = store or open_store(uri, storage_options)
    try:
        tail, file_size = store.read_tail(uri, PREFETCH_SIZE, size)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise DatasetNotFoundError(f"manifest {uri} does not exist") from None
    expected = min(PREFETCH_SIZE, file_size)
    if size is not None and (len(tail) != expected or len(tail) < FOOTER_SIZE
                             or not tail.endswith(MAGIC)):
        # A wrong known size: retry with the real one, as Lance does.
        return read_manifest(uri, store=store)
    if len(tail) != expected:
        raise CorruptFileError(f"short read: got {len(tail)} of {expected} bytes", uri)
    if file_size < FOOTER_SIZE:
        raise CorruptFileError(f"file size {file_size} is smaller than the 16-byte footer", uri)
    if not tail.endswith(MAGIC):
        raise CorruptFileError("bad magic: the file does not end with LANC", uri)
    pos, major, minor, _ = _FOOTER.unpack_from(tail, len(tail) - FOOTER_SIZE)
    if pos < 0 or pos + 4 + FOOTER_SIZE > file_size:
        raise CorruptFileError(f"manifest offset {pos} in the footer is outside the file "
                               f"({file_size} bytes)", uri)
    tail_start = file_size - len(tail)
    if pos < tail_start:
        head = store.read_range(uri, pos, tail_start - pos)
        if len(head) != tail_start - pos:
            raise CorruptFileError("short read of the manifest", uri)
        buf = head + tail
        buf_start = pos
    else:
        buf = tail
        buf_start = tail_start
    local = pos - buf_start
    (recorded,) = _U32.unpack_from(buf, local)
    actual = file_size - pos - 4 - FOOTER_SIZE
    if recorded != actual:
        raise CorruptFileError(f"manifest length does not match: recorded {recorded}, "
                               f"file holds {actual}", uri)
    return ManifestFile(uri, file_size, buf, buf_start, local + 4, local + 4 + actual,
                        (major, minor), store)


def parse_manifest_file(data: bytes, uri: str | None = None) -> ManifestFile:
    """A :class:`ManifestFile` from the complete bytes of a manifest file (no storage I/O)."""
    data = bytes(data)
    size = len(data)
    if size < FOOTER_SIZE:
        raise CorruptFileError(f"file size {size} is smaller than the 16-byte footer", uri)
    if not data.endswith(MAGIC):
        raise CorruptFileError("bad magic: the file does not end with LANC", uri)
    pos, major, minor, _ = _FOOTER.unpack_from(data, size - FOOTER_SIZE)
    if pos < 0 or pos + 4 + FOOTER_SIZE > size:
        raise CorruptFileError(f"manifest offset {pos} in the footer is outside the file", uri)
    (recorded,) = _U32.unpack_from(data, pos)
    actual = size - pos - 4 - FOOTER_SIZE
    if recorded != actual:
        raise CorruptFileError(f"manifest length does not match: recorded {recorded}, "
                               f"file holds {actual}", uri)
    return ManifestFile(uri, size, data, 0, pos + 4, pos + 4 + actual, (major, minor), None)


# -- writing ----------------------------------------------------------------------------------

def encode_manifest_file(manifest: "table_pb2.Manifest", transaction=None, indices=None,
                         dictionaries: dict | None = None) -> bytes:
    """The bytes of a manifest file in Lance's layout.

    ``transaction``: the inline ``transaction_pb2.Transaction`` (or None); ``indices``: a
    ``table_pb2.IndexSection``, a list of ``IndexMetadata``, or None. ``manifest`` is updated in
    place: ``index_section`` and ``transaction_section`` (field 23, as pylance 14 writes) get the
    offsets of the sections, and the deprecated field 21 is cleared. ``dictionaries``
    ({field id: pa.Array}, legacy datasets) are written first and their Fields pointed at them.
    """
    parts = []
    pos = 0
    if dictionaries:
        pos = _write_dictionaries(manifest, dictionaries, parts)
    if indices is not None and not isinstance(indices, table_pb2.IndexSection):
        indices = table_pb2.IndexSection(indices=list(indices))
    if indices is not None and len(indices.indices):
        body = indices.SerializeToString()
        parts += [_U32.pack(len(body)), body]
        manifest.index_section = pos
        pos += 4 + len(body)
    else:
        manifest.ClearField("index_section")
    manifest.ClearField("transaction_section_deprecated")
    if transaction is not None:
        body = transaction.SerializeToString()
        parts += [_U32.pack(len(body)), body]
        manifest.transaction_section = pos
        pos += 4 + len(body)
    else:
        manifest.ClearField("transaction_section")
    body = manifest.SerializeToString()
    parts += [_U32.pack(len(body)), body, _FOOTER.pack(pos, FOOTER_VERSION[0], FOOTER_VERSION[1], MAGIC)]
    return b"".join(parts)


def _write_dictionaries(manifest, dictionaries: dict, parts: list) -> int:
    """Legacy dictionary values at the start of the file, as pylance's ``write_manifest`` lays
    them out; returns the position after them."""
    from ..encoding.legacy.encode import PageEncoder

    pos = 0

    def write(data) -> int:
        nonlocal pos
        start = pos
        b = bytes(data)
        parts.append(b)
        pos += len(b)
        return start

    enc = PageEncoder(write, lambda: pos)
    for f in manifest.fields:
        values = dictionaries.get(f.id)
        if values is not None:
            f.dictionary.offset = enc.write_dictionary(values)
            f.dictionary.length = len(values)
    return pos


def write_manifest_file(uri: str, manifest: "table_pb2.Manifest", transaction=None, indices=None,
                        *, store=None, storage_options: dict | None = None,
                        overwrite: bool = False):
    """Write a manifest file at ``uri`` (see :func:`encode_manifest_file`).

    By default the file is created atomically only if nothing is at ``uri`` (the commit
    primitive); returns the number of bytes written, or None if ``uri`` already existed (nothing
    was written). ``overwrite=True`` replaces whatever is there.
    """
    data = encode_manifest_file(manifest, transaction, indices)
    store = store or open_store(uri, storage_options)
    if overwrite:
        store.put(uri, data)
        return len(data)
    return len(data) if store.put_if_absent(uri, data) else None
