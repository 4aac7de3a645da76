"""Sizes Arrow IPC data declares, read before pyarrow decodes (and allocates) anything.

A compressed IPC buffer starts with its uncompressed length (int64); pyarrow allocates whatever
that prefix claims. For deletion files the batch must hold at most the fragment's rows of one
uint32 column, so every prefix is checked against that before ``get_batch`` runs
(:func:`check_ipc_file_sizes`). For a stream of any schema (table data sent to the namespace
server), every prefix is checked against what its compressed bytes can decode to
(:func:`check_ipc_stream_sizes`: zstd from its block headers, LZ4 255 times its size). The footer
and the message metadata are flatbuffers (``Footer`` -> ``Block``, ``Message`` ->
``RecordBatch``); only the few fields needed are read, each offset checked against its buffer.
"""
from __future__ import annotations

import struct

import pyarrow as pa

from ..errors import CorruptFileError
from .compression import zstd_output_bound

_DICTIONARY_BATCH, _RECORD_BATCH = 2, 3  # MessageHeader union tags
_ZSTD = 1  # CompressionType (0: LZ4_FRAME)
_LZ4_MAX_RATIO = 255
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


def check_ipc_stream_sizes(data, path=None) -> None:
    """CorruptFileError unless every compressed buffer of the IPC stream ``data`` (record and
    dictionary batches, in stream order as pyarrow's stream reader reads them) claims at most
    what its compressed bytes can decode to."""
    try:
        reader = pa.ipc.MessageReader.open_stream(pa.BufferReader(pa.py_buffer(data)))
        while True:
            try:
                msg = reader.read_next_message()
            except StopIteration:
                break
            if msg.type not in ("record batch", "dictionary"):
                continue
            flat = _Flat(msg.metadata.to_pybytes(), path)
            root = flat.root()
            header = flat.ref(root, 2)
            if header is not None and flat.scalar(root, 1, "<B") == _DICTIONARY_BATCH:
                header = flat.ref(header, 1)  # DictionaryBatch.data
            if header is not None:
                _check_claims(flat, header, msg.body, path)
    except CorruptFileError:
        raise
    except (pa.ArrowException, ValueError, OSError, EOFError) as e:
        raise CorruptFileError(f"unreadable IPC stream: {e}", path) from None


def _check_claims(flat: _Flat, batch: int, body: pa.Buffer, path) -> None:
    compression = flat.ref(batch, 3)
    if compression is None:
        return
    codec = flat.scalar(compression, 0, "<b")
    for offset, size in flat.structs(batch, 2, "<qq"):
        if offset < 0 or size < 0 or offset + size > body.size:
            raise CorruptFileError("IPC buffer outside its message body", path)
        if size < 8:
            continue
        claimed = struct.unpack("<q", body.slice(offset, 8).to_pybytes())[0]
        if claimed == -1:  # stored uncompressed
            continue
        frame = body.slice(offset + 8, size - 8).to_pybytes()
        bound = (zstd_output_bound(frame, 0, path) if codec == _ZSTD
                 else len(frame) * _LZ4_MAX_RATIO)
        if claimed > bound:
            raise CorruptFileError(f"compressed IPC buffer of {len(frame)} bytes claims {claimed} "
                                   f"bytes, at most {bound} possible", path)
