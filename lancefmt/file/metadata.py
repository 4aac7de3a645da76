"""The metadata of a Lance v2 data file: footer, offset tables, FileDescriptor, columns.

Everything after the page data is read with one ranged read of the file's tail (two when the
tail is larger than the first guess), parsed, and checked: every position and size must lie
inside the file, the FileDescriptor must sit right before the column metadata (as Lance's own
reader assumes), and every page buffer must lie in the data region.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError

from .._proto import file2_pb2, file_pb2
from ..encoding.column import ColumnInfo, PageInfo
from ..errors import CorruptFileError, UnsupportedFeatureError
from .format import FOOTER_SIZE, Footer, file_version, parse_offset_table

# First guess for the tail read: enough for the metadata of most files.
TAIL_GUESS = 64 * 1024


@dataclass
class FileMetadata:
    footer: Footer
    version: tuple[int, int]
    num_rows: int
    fields: list            # lance.file.Field messages (FileDescriptor schema)
    schema_metadata: dict   # str -> bytes
    columns: list[ColumnInfo]
    global_buffers: list[tuple[int, int]]
    file_size: int

    @property
    def data_end(self) -> int:
        """Page buffers must end at or before this offset."""
        return self.footer.column_meta_start


def _parse(msg, data, what: str, path):
    try:
        msg.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError) as e:
        raise CorruptFileError(f"undecodable {what} ({e})", path) from None
    return msg


def _unpack_any(encoding: file2_pb2.Encoding, what: str, path) -> tuple[str, bytes]:
    which = encoding.WhichOneof("location")
    if which == "direct":
        a = _parse(any_pb2.Any(), encoding.direct.encoding, f"{what} encoding", path)
        return a.type_url, a.value
    if which == "indirect":
        raise UnsupportedFeatureError(f"{what}: deferred (indirect) encodings", path)
    return "", b""


def read_metadata(read_range, file_size: int, path: str | None = None,
                  tail: bytes | None = None) -> FileMetadata:
    """Parse a file's metadata. ``read_range(start, length) -> bytes``; ``tail`` may hold the
    file's last bytes already (saves a read)."""
    if file_size < FOOTER_SIZE:
        raise CorruptFileError(f"file of {file_size} bytes is too small for a Lance file", path)
    if tail is None:
        n = min(TAIL_GUESS, file_size)
        tail = read_range(file_size - n, n)
    if len(tail) < FOOTER_SIZE:
        raise CorruptFileError("short read of the file footer", path)
    tail_start = file_size - len(tail)
    footer = Footer.parse(tail, file_size, path)
    version = file_version(footer.major, footer.minor, path)

    def region(start, end):
        nonlocal tail, tail_start
        if start < tail_start:
            more = read_range(start, tail_start - start)
            if len(more) != tail_start - start:
                raise CorruptFileError("short read of the file metadata", path)
            tail = more + tail
            tail_start = start
        return memoryview(tail)[start - tail_start:end - tail_start]

    gbo_pos, gbo_size = parse_offset_table(
        region(footer.gbo_offset, file_size - FOOTER_SIZE), footer.num_global_buffers,
        footer.gbo_offset, "global buffer", path)
    cmo_pos, cmo_size = parse_offset_table(
        region(footer.cmo_offset, footer.gbo_offset), footer.num_columns,
        footer.cmo_offset, "column metadata", path)
    if footer.num_columns and (np.any(cmo_pos < footer.column_meta_start)):
        raise CorruptFileError("column metadata lies before the column metadata region", path)

    fd_pos, fd_size = int(gbo_pos[0]), int(gbo_size[0])
    if fd_pos + fd_size > footer.column_meta_start:
        raise CorruptFileError("the FileDescriptor overlaps the column metadata", path)
    meta_start = min(fd_pos, footer.column_meta_start)
    blob = region(meta_start, footer.cmo_offset)
    fd = _parse(file_pb2.FileDescriptor(), blob[fd_pos - meta_start:fd_pos - meta_start + fd_size],
                "FileDescriptor", path)

    columns = []
    data_end = footer.column_meta_start
    for ci in range(footer.num_columns):
        p, s = int(cmo_pos[ci]), int(cmo_size[ci])
        cm = _parse(file2_pb2.ColumnMetadata(), blob[p - meta_start:p - meta_start + s],
                    f"metadata of column {ci}", path)
        ctype, cenc = _unpack_any(cm.encoding, f"column {ci}", path)
        pages = []
        row = 0
        for pi, pg in enumerate(cm.pages):
            offs, sizes = list(pg.buffer_offsets), list(pg.buffer_sizes)
            if len(offs) != len(sizes):
                raise CorruptFileError(f"column {ci} page {pi}: {len(offs)} buffer offsets but "
                                       f"{len(sizes)} sizes", path)
            for o, s2 in zip(offs, sizes):
                if o > data_end or s2 > data_end - o:
                    raise CorruptFileError(
                        f"column {ci} page {pi}: buffer at {o} of {s2} bytes lies outside the "
                        f"data region (ends at {data_end})", path)
            ptype, penc = _unpack_any(pg.encoding, f"column {ci} page {pi}", path)
            pages.append(PageInfo(ci, pi, int(pg.length), row, offs, sizes, ptype, penc,
                                  int(pg.priority)))
            row += int(pg.length)
        cbo, cbs = list(cm.buffer_offsets), list(cm.buffer_sizes)
        if len(cbo) != len(cbs) or any(o > data_end or s2 > data_end - o for o, s2 in zip(cbo, cbs)):
            raise CorruptFileError(f"column {ci}: bad column buffers", path)
        columns.append(ColumnInfo(ci, pages, ctype, cenc, cbo, cbs))

    return FileMetadata(
        footer=footer, version=version, num_rows=int(fd.length),
        fields=list(fd.schema.fields), schema_metadata=dict(fd.schema.metadata),
        columns=columns,
        global_buffers=[(int(p), int(s)) for p, s in zip(gbo_pos, gbo_size)],
        file_size=file_size)
