"""``take_blobs``: open the bytes behind blob v2 descriptors as file-like objects.

A blob v2 column (pylance 14, storage 2.2) stores one descriptor per row: ``kind`` 0 keeps the
bytes inside the row's data file, 1 and 2 in sidecar files next to it
(``data/<data file stem>/<blob_id>.blob``, the id's 32 bits written lowest first), 3 points at
an external URI (not read here). Every descriptor is checked against the size of the file it
names before any byte is read.
"""
from __future__ import annotations

import io

import pyarrow as pa

from ...errors import (CorruptFileError, InvalidArgumentError, NotSupportedError,
                       UnsupportedFeatureError)
from ...file.schema import field_tree
from ..core.blob_layout import (
    KIND_DEDICATED, KIND_EXTERNAL, KIND_INLINE, KIND_PACKED, blob_sidecar_uri,
)
from ..core.files import data_file_uri
from .row_lookup import take_addresses, take_row_ids
from .scan import load_deletions
from .take import take_rows


class BlobFile(io.RawIOBase):
    """Read-only, seekable view of ``size`` bytes at ``position`` of a stored file."""

    def __init__(self, store, uri: str, position: int, size: int):
        super().__init__()
        self._store, self._uri, self._start, self._size = store, uri, position, size
        self._pos = 0

    def __repr__(self):
        return f"<BlobFile size={self._size}>"

    def size(self) -> int:
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}.get(whence)
        if base is None:
            raise InvalidArgumentError(f"bad whence {whence}")
        if base + offset < 0:
            raise InvalidArgumentError("negative seek position")
        self._pos = base + offset
        return self._pos

    def read_range(self, offset: int, size: int) -> bytes:
        """``size`` bytes from ``offset`` (clipped to the blob) without moving the cursor."""
        if offset < 0 or size < 0:
            raise InvalidArgumentError("offset and size must be >= 0")
        stop = min(self._size, offset + size)
        if offset >= stop:
            return b""
        return bytes(self._store.read_range(self._uri, self._start + offset, stop - offset))

    def readinto(self, buf) -> int:
        data = self.read_range(self._pos, len(buf))
        buf[:len(data)] = data
        self._pos += len(data)
        return len(data)

    def readall(self) -> bytes:
        data = self.read_range(self._pos, max(0, self._size - self._pos))
        self._pos += len(data)
        return data


def _selected_rows(snapshot, column: str, ids, addresses, indices) -> tuple[pa.Table, list[int]]:
    given = [x is not None for x in (ids, addresses, indices)]
    if sum(given) != 1:
        raise InvalidArgumentError("exactly one of ids, addresses or indices must be given")
    if indices is not None:
        t = take_rows(snapshot, indices, [column], with_row_address=True)
    elif ids is not None:
        t = take_row_ids(snapshot, ids, [column], with_row_address=True)
        _refuse_deleted(snapshot, t.column("_rowaddr").to_pylist())
    else:
        addrs = [int(a) for a in (addresses.to_pylist() if isinstance(addresses, pa.Array)
                                  else addresses)]
        return take_addresses(snapshot, addrs, [column]), addrs
    return t, t.column("_rowaddr").to_pylist()


def _refuse_deleted(snapshot, addrs) -> None:
    """Blobs of deleted rows are not handed out (pylance refuses them the same way)."""
    pbs = {pb.id: pb for pb in snapshot.fragment_pbs()}
    deleted = {}
    for addr in addrs:
        frag = int(addr) >> 32
        if frag not in deleted:
            pb = pbs.get(frag)
            dv = load_deletions(snapshot.ctx, pb) if pb is not None else None
            deleted[frag] = dv
        dv = deleted[frag]
        if dv is not None and (int(addr) & 0xFFFFFFFF) in dv:
            raise NotSupportedError("A take operation that includes row addresses must not "
                                    f"target deleted rows (row address {addr})")


def _blob_field(snapshot, column: str):
    for root in field_tree(snapshot.lance_fields):
        if root.name == column:
            if not root.is_blob_v2():
                raise InvalidArgumentError(f"column {column!r} is not a blob v2 column")
            return root
    raise InvalidArgumentError(f"no column {column!r} in the dataset")


def take_blobs(snapshot, blob_column: str, ids=None, addresses=None, indices=None) -> list:
    """One :class:`BlobFile` per selected row (``None`` for a null blob)."""
    field_id = _blob_field(snapshot, blob_column).id
    table, addrs = _selected_rows(snapshot, blob_column, ids, addresses, indices)
    files = {}
    for pb in snapshot.fragment_pbs():
        for df in pb.files:
            if field_id in df.fields:
                files[pb.id] = data_file_uri(snapshot.ctx.resolver, df)
    stores: dict = {}
    sizes: dict[str, int] = {}
    out = []
    for desc, addr in zip(table.column(blob_column).to_pylist(), addrs):
        if desc is None:
            out.append(None)
            continue
        data_uri = files.get(int(addr) >> 32)
        if data_uri is None:
            raise CorruptFileError(f"no data file holds blob column {blob_column!r} for row "
                                   f"address {addr}")
        kind, pos, size = desc["kind"], desc["position"], desc["size"]
        if kind == KIND_INLINE:
            uri = data_uri
        elif kind in (KIND_PACKED, KIND_DEDICATED):
            uri = blob_sidecar_uri(data_uri, desc["blob_id"])
        elif kind == KIND_EXTERNAL:
            raise UnsupportedFeatureError(f"external blob {desc['blob_uri']!r} is not read yet",
                                          data_uri)
        else:
            raise CorruptFileError(f"unknown blob kind {kind}", data_uri)
        if uri not in sizes:
            stores[uri] = snapshot.ctx.store_for(uri)
            sizes[uri] = stores[uri].size(uri)
        if pos + size > sizes[uri]:
            raise CorruptFileError(f"blob at {pos}+{size} runs past the end of the file "
                                   f"({sizes[uri]} bytes)", uri)
        out.append(BlobFile(stores[uri], uri, pos, size))
    return out


class BlobColumn:
    """pylance's ``BlobColumn``: the values of a binary column as file-like objects (None for
    nulls), for APIs that read from files."""

    def __init__(self, blob_column):
        if not isinstance(blob_column, (pa.Array, pa.ChunkedArray)):
            raise InvalidArgumentError(
                f"Expected a pyarrow.Array or pyarrow.ChunkedArray, got {type(blob_column)}")
        if not (pa.types.is_binary(blob_column.type) or
                pa.types.is_large_binary(blob_column.type)):
            raise InvalidArgumentError(f"Expected a binary array, got {blob_column.type}")
        self.blob_column = blob_column

    def __iter__(self):
        for value in self.blob_column:
            yield None if not value.is_valid else io.BytesIO(value.as_py())


def live_addresses(snapshot, pbs) -> list:
    """Row addresses of the live rows of ``pbs``, in order."""
    out = []
    for pb in pbs:
        dv = load_deletions(snapshot.ctx, pb)
        offsets = dv.kept_indices(pb.physical_rows) if dv is not None and len(dv) else \
            range(pb.physical_rows)
        base = int(pb.id) << 32
        out.extend(base | int(o) for o in offsets)
    return out


def with_blob_bytes(snapshot, pbs, table: pa.Table) -> pa.Table:
    """``table`` (the live rows of ``pbs``, in order) with each blob v2 column's descriptors
    replaced by the blobs' bytes, as a writer takes them (``large_binary`` marked as a blob):
    what compaction rewrites. The group's blobs are held in memory."""
    blob_columns = [r.name for r in field_tree(snapshot.lance_fields) if r.is_blob_v2()]
    if not blob_columns:
        return table
    addrs = live_addresses(snapshot, pbs)
    for name in blob_columns:
        files = take_blobs(snapshot, name, addresses=addrs)
        values = pa.array([None if f is None else f.readall() for f in files], pa.large_binary())
        i = table.schema.get_field_index(name)
        old = table.schema.field(i)
        table = table.set_column(i, pa.field(name, pa.large_binary(), old.nullable,
                                             {"lance-encoding:blob": "true"}), values)
    return table
