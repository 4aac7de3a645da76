"""Protobuf bytes <-> segments, for ``RowIdSequence`` and ``RowDatasetVersionSequence``.

Writing follows prost, which Lance uses: fields in number order, proto3 scalars left out when
zero, empty ``bytes`` left out, and a present sub-message always written (even when empty), so
the bytes equal pylance's. Reading goes through the checked Cython scan (``_rowids``): the
segment table it returns is turned into :class:`U64Segment` objects whose payloads are
zero-copy views of the input.
"""
from __future__ import annotations

import numpy as np

from .. import _rowids
from .encoded_array import EncodedU64Array
from .segment import SegmentKind, U64Segment

Col = _rowids.Col
_DTYPES = {16: np.dtype("<u2"), 32: np.dtype("<u4"), 64: np.dtype("<u8")}


# -- writing ----------------------------------------------------------------------------------
def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _uint_field(field: int, value: int) -> bytes:
    if not value:
        return b""
    return _varint(field << 3) + _varint(value)


def _len_field(field: int, payload: bytes, always: bool = True) -> bytes:
    if not payload and not always:
        return b""
    return _varint((field << 3) | 2) + _varint(len(payload)) + payload


def encoded_array_to_bytes(array: EncodedU64Array) -> bytes:
    """An ``EncodedU64Array`` message."""
    payload = array.payload()
    if array.width == 64:
        inner = _len_field(2, payload, always=False)
        return _len_field(3, inner)
    inner = _uint_field(1, array.base) + _len_field(2, payload, always=False)
    return _len_field(1 if array.width == 16 else 2, inner)


def segment_to_bytes(segment: U64Segment) -> bytes:
    """A ``U64Segment`` message."""
    k = segment.kind
    if k in (SegmentKind.SORTED_ARRAY, SegmentKind.ARRAY):
        return _len_field(int(k), encoded_array_to_bytes(segment.array))
    inner = _uint_field(1, segment.start) + _uint_field(2, segment.end)
    if k == SegmentKind.RANGE_WITH_HOLES:
        inner += _len_field(3, encoded_array_to_bytes(segment.array))
    elif k == SegmentKind.RANGE_WITH_BITMAP:
        inner += _len_field(3, bytes(segment.bitmap), always=False)
    return _len_field(int(k), inner)


def sequence_to_bytes(segments) -> bytes:
    """A ``RowIdSequence`` message from its segments."""
    return b"".join(_len_field(1, segment_to_bytes(s)) for s in segments)


def version_runs_to_bytes(runs) -> bytes:
    """A ``RowDatasetVersionSequence`` message from ``(span segment, version)`` runs."""
    return b"".join(
        _len_field(1, _len_field(1, segment_to_bytes(span)) + _uint_field(2, version))
        for span, version in runs)


# -- reading ----------------------------------------------------------------------------------
def _array_from_row(data, row) -> EncodedU64Array:
    width = int(row[Col.WIDTH])
    dtype = _DTYPES[width]
    n = int(row[Col.LENGTH]) // dtype.itemsize
    if n == 0:
        offsets = np.empty(0, dtype=dtype)
    else:
        offsets = np.frombuffer(data, dtype=dtype, count=n, offset=int(row[Col.OFFSET]))
    return EncodedU64Array(width, int(row[Col.BASE]), offsets)


def segment_from_row(data, row) -> U64Segment:
    """One scanned segment-table row -> :class:`U64Segment` (payload viewed, not copied)."""
    kind = SegmentKind(int(row[Col.KIND]))
    count = int(row[Col.COUNT])
    if kind == SegmentKind.RANGE:
        return U64Segment(kind, int(row[Col.START]), int(row[Col.END]), length=count)
    if kind == SegmentKind.RANGE_WITH_BITMAP:
        off, n = int(row[Col.OFFSET]), int(row[Col.LENGTH])
        return U64Segment(kind, int(row[Col.START]), int(row[Col.END]),
                          bitmap=bytes(memoryview(data)[off:off + n]), length=count)
    array = _array_from_row(data, row)
    if kind == SegmentKind.RANGE_WITH_HOLES:
        return U64Segment(kind, int(row[Col.START]), int(row[Col.END]), array=array, length=count)
    return U64Segment(kind, array=array, length=count)


def segments_from_bytes(data, path=None) -> list[U64Segment]:
    """``RowIdSequence`` bytes -> segments (CorruptFileError naming ``path`` when bad)."""
    table, _ = _rowids.scan_row_id_sequence(data, path)
    return [segment_from_row(data, row) for row in table]


def version_runs_from_bytes(data, path=None) -> list[tuple[U64Segment, int]]:
    """``RowDatasetVersionSequence`` bytes -> ``(span, version)`` runs."""
    table, _ = _rowids.scan_version_sequence(data, path)
    return [(segment_from_row(data, row), int(row[Col.VERSION])) for row in table]
