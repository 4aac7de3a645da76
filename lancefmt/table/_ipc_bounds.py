"""Sizes an Arrow IPC file declares, read before pyarrow decodes (and allocates) anything.

A compressed IPC buffer starts with its uncompressed length (int64); pyarrow allocates whatever
that prefix claims. For deletion files the batch must hold at most the fragment's rows of one
uint32 column, so every prefix is checked against that before ``get_batch`` runs. The footer
and the message metadata are flatbuffers (``Footer`` -> ``Block``, ``Message`` ->
``RecordBatch``); only the few fields needed are read, each offset checked against its buffer.
"""
from __future__ import annotations

import struct

import pyarrow as pa

from ..errors import CorruptFileError

_RECORD_BATCH = 3  # MessageHeader union tag
_STRUCTS: dict = {}  # compiled formats (a deletion file is checked with a few dozen reads)


class _Flat:
    """Bounds-checked reads of one flatbuffer."""

    def __init__(self, buf: bytes, path):
        self.buf, self.path = buf, path

    def _u(self, fmt: str, pos: int) -> int:
        st = _STRUCTS.get(fmt)
        if st is None:
            st = _STRUCTS[fmt] = struct.Struct(fmt)
        if pos < 0 or pos + st.size > len(self.buf):
            raise CorruptFileError("IPC message metadata points outside itself", self.path)
        return st.unpack_from(self.buf, pos)[0]

    def root(self) -> int:
        return self._u("<I", 0)

    def field(self, table: int, index: int) -> int | None:
        """Absolute position of field ``index`` of the table at ``table`` (None if absent)."""
        vtable = table - self._u("<i", table)
        vt_size = self._u("<H", vtable)
        slot = 4 + 2 * index
        if slot + 2 > vt_size:
            return None
        off = self._u("<H", vtable + slot)
        return None if off == 0 else table + off

    def scalar(self, table: int, index: int, fmt: str, default=0):
        pos = self.field(table, index)
        return default if pos is None else self._u(fmt, pos)

    def ref(self, table: int, index: int) -> int | None:
        pos = self.field(table, index)
        return None if pos is None else pos + self._u("<I", pos)

    def structs(self, table: int, index: int, fmt: str) -> list:
        """A vector of structs of layout ``fmt``."""
        vec = self.ref(table, index)
        if vec is None:
            return []
        n = self._u("<I", vec)
        size = struct.calcsize(fmt)
        if vec + 4 + n * size > len(self.buf):
            raise CorruptFileError("IPC vector runs past its message metadata", self.path)
        return [struct.unpack_from(fmt, self.buf, vec + 4 + i * size) for i in range(n)]


_FOOTER_TAIL = 10  # int32 footer length + "ARROW1"
_BLOCK = struct.Struct("<qi4xq")  # Block: offset, metaDataLength, (padding), bodyLength
_CONTINUATION = 0xFFFFFFFF


def check_ipc_file_sizes(data, max_rows: int, bytes_per_row: int, path=None) -> None:
    """CorruptFileError unless every record batch of the IPC file ``data`` declares at most
    ``max_rows`` rows and no (compressed) buffer claims more than ``bytes_per_row`` bytes for
    each row the batch declares (plus padding) once decompressed.

    The batches checked are the ones pyarrow's file reader reads: those the footer's blocks
    point at, not the ones a walk of the stream after the magic finds (a footer may point past
    the end-of-stream marker, at a message no stream walk sees). A file with dictionary
    batches is refused: no file this check guards has dictionary columns."""
    buf = pa.py_buffer(data)
    size = buf.size
    if size < 8 + _FOOTER_TAIL:
        raise CorruptFileError("IPC file too short", path)
    footer_len = struct.unpack_from("<i", buf, size - _FOOTER_TAIL)[0]
    footer_start = size - _FOOTER_TAIL - footer_len
    if footer_len <= 0 or footer_start < 8:
        raise CorruptFileError(f"IPC footer of {footer_len} bytes does not fit the file", path)
    footer = _Flat(buf.slice(footer_start, footer_len).to_pybytes(), path)
    root = footer.root()
    if footer.structs(root, 2, _BLOCK.format):
        raise CorruptFileError("IPC file holds dictionary batches", path)
    for offset, meta_len, body_len in footer.structs(root, 3, _BLOCK.format):
        if (offset < 8 or meta_len < 8 or body_len < 0
                or offset + meta_len + body_len > footer_start):
            raise CorruptFileError("IPC record batch block outside the file", path)
        flat, body = _block_message(buf, offset, meta_len, body_len, path)
        _check_batch(flat, body, max_rows, bytes_per_row, path)


def _block_message(buf: pa.Buffer, offset: int, meta_len: int, body_len: int, path):
    """The message metadata and body a footer block points at; CorruptFileError unless the
    message agrees with the block (its own length prefix and body length)."""
    head = buf.slice(offset, meta_len).to_pybytes()
    prefix = 8 if struct.unpack_from("<I", head)[0] == _CONTINUATION else 4
    flat_len = struct.unpack_from("<i", head, prefix - 4)[0]
    if flat_len <= 0 or prefix + flat_len > meta_len:
        raise CorruptFileError(
            f"IPC message metadata of {flat_len} bytes in a block of {meta_len}", path)
    flat = _Flat(head[prefix:prefix + flat_len], path)
    declared = flat.scalar(flat.root(), 3, "<q")
    if declared != body_len:
        raise CorruptFileError(
            f"IPC message body of {declared} bytes, its block says {body_len}", path)
    return flat, buf.slice(offset + meta_len, body_len)


def _check_batch(flat: _Flat, body: pa.Buffer, max_rows: int, bytes_per_row: int, path) -> None:
    root = flat.root()
    if flat.scalar(root, 1, "<B") != _RECORD_BATCH:
        raise CorruptFileError("record batch block without a record batch message", path)
    batch = flat.ref(root, 2)
    if batch is None:
        raise CorruptFileError("record batch message without a header", path)
    length = flat.scalar(batch, 0, "<q")
    if not 0 <= length <= max_rows:
        raise CorruptFileError(f"record batch declares {length} rows, at most "
                               f"{max_rows} are possible", path)
    cap = length * bytes_per_row + 64  # what the batch's own row count allows
    for node_len, _nulls in flat.structs(batch, 1, "<qq"):
        if not 0 <= node_len <= max_rows:
            raise CorruptFileError(f"array declares {node_len} rows", path)
    compressed = flat.ref(batch, 3) is not None
    for offset, size in flat.structs(batch, 2, "<qq"):
        if offset < 0 or size < 0 or offset + size > body.size:
            raise CorruptFileError("IPC buffer outside its message body", path)
        if size > cap:
            raise CorruptFileError(f"IPC buffer of {size} bytes for {length} rows", path)
        if compressed and size >= 8:
            claimed = struct.unpack("<q", body.slice(offset, 8).to_pybytes())[0]
            if claimed > cap:
                raise CorruptFileError(
                    f"compressed IPC buffer claims {claimed} bytes, at most {cap} fit "
                    f"{length} rows", path)
