"""Sizes an Arrow IPC file declares, read before pyarrow decodes (and allocates) anything.

A compressed IPC buffer starts with its uncompressed length (int64); pyarrow allocates whatever
that prefix claims. For deletion files the batch must hold at most the fragment's rows of one
uint32 column, so every prefix is checked against that before ``get_batch`` runs. The message
metadata is a flatbuffer (``Message`` -> ``RecordBatch``); only the few fields needed are read,
each offset checked against the metadata's length.
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


def check_ipc_file_sizes(data, max_rows: int, bytes_per_row: int, path=None) -> None:
    """CorruptFileError unless every record batch of the IPC file ``data`` declares at most
    ``max_rows`` rows and no (compressed) buffer claims more than ``bytes_per_row`` bytes for
    each row the batch declares (plus padding) once decompressed."""
    buf = pa.py_buffer(data)
    if buf.size < 8:
        raise CorruptFileError("IPC file too short", path)
    try:
        reader = pa.ipc.MessageReader.open_stream(pa.BufferReader(buf.slice(8)))
        while True:
            try:
                msg = reader.read_next_message()
            except StopIteration:
                break
            if msg.type != "record batch":
                continue
            flat = _Flat(msg.metadata.to_pybytes(), path)
            root = flat.root()
            if flat.scalar(root, 1, "<B") != _RECORD_BATCH:
                raise CorruptFileError("record batch message without a record batch", path)
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
            body = msg.body
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
    except CorruptFileError:
        raise
    except (pa.ArrowException, ValueError, OSError, EOFError) as e:
        raise CorruptFileError(f"unreadable IPC stream: {e}", path) from None
