"""``U64Segment``: one run of a row-id (or row-position) sequence, in one of five shapes.

The shape is chosen exactly as Lance does (``U64Segment::from_iter`` in lance-table):

* not sorted (some value below an earlier one) -> ``ARRAY``;
* sorted, empty -> ``RANGE(0..0)``; sorted without holes -> ``RANGE(min..max+1)``;
* otherwise the smallest of ``RANGE_WITH_HOLES`` (24 + 4 * holes bytes), ``RANGE_WITH_BITMAP``
  (24 + ceil(span / 8)) and ``SORTED_ARRAY`` (24 + 2 * count), ties going to holes, then bitmap.

Two inputs Lance cannot represent get a lossless shape instead (row ids never hit them):
repeated values (Lance's hole count underflows) are stored as ``ARRAY``, and a sorted sequence
that reaches ``2**64 - 1`` (no exclusive range end exists) as ``SORTED_ARRAY``.
"""
from __future__ import annotations

import enum

import numpy as np

from .. import _rowids
from .encoded_array import EncodedU64Array

_U64_MAX = (1 << 64) - 1


class SegmentKind(enum.IntEnum):
    """The U64Segment oneof members; the values are their protobuf field numbers."""

    RANGE = 1
    RANGE_WITH_HOLES = 2
    RANGE_WITH_BITMAP = 3
    SORTED_ARRAY = 4
    ARRAY = 5


def sorted_segment_sizes(lo: int, hi: int, count: int) -> tuple[int, int, int]:
    """Lance's size estimates (holes, bitmap, sorted array) for sorted distinct values in lo..=hi."""
    span = hi - lo + 1
    holes = span - count
    return 24 + 4 * holes, 24 + (span + 7) // 8, 24 + 2 * count


class U64Segment:
    """A segment: ``kind``, ``start``/``end`` (range kinds), ``array`` (holes for
    RANGE_WITH_HOLES, the values for the array kinds) or ``bitmap`` (LSB-first bytes)."""

    __slots__ = ("kind", "start", "end", "array", "bitmap", "_len")

    def __init__(self, kind: SegmentKind, start: int = 0, end: int = 0,
                 array: EncodedU64Array | None = None, bitmap: bytes | None = None,
                 length: int | None = None):
        self.kind = SegmentKind(kind)
        self.start = int(start)
        self.end = int(end)
        self.array = array
        self.bitmap = bitmap
        if self.kind in (SegmentKind.RANGE, SegmentKind.RANGE_WITH_HOLES,
                         SegmentKind.RANGE_WITH_BITMAP) and self.end < self.start:
            raise ValueError(f"range end {self.end} is below its start {self.start}")
        if self.kind in (SegmentKind.RANGE_WITH_HOLES, SegmentKind.SORTED_ARRAY,
                         SegmentKind.ARRAY) and array is None:
            raise ValueError(f"a {self.kind.name} segment needs an array")
        if self.kind == SegmentKind.RANGE_WITH_BITMAP:
            if bitmap is None or len(bitmap) != (self.end - self.start + 7) // 8:
                raise ValueError("a RANGE_WITH_BITMAP segment needs ceil(span / 8) bitmap bytes")
        self._len = length

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def range(cls, start: int, end: int) -> "U64Segment":
        return cls(SegmentKind.RANGE, start, end)

    @classmethod
    def from_values(cls, values) -> "U64Segment":
        """The shape Lance would choose for these values (see the module docstring)."""
        values = np.ascontiguousarray(values, dtype=np.uint64)
        lo, hi, count, nondecreasing, strict = _rowids.value_stats(values)
        return cls._from_stats(values, lo, hi, count, nondecreasing and strict)

    @classmethod
    def _from_stats(cls, values, lo, hi, count, is_sorted) -> "U64Segment":
        if not is_sorted:
            return cls(SegmentKind.ARRAY, array=EncodedU64Array.from_values(values), length=count)
        if count == 0:
            return cls(SegmentKind.RANGE, 0, 0)
        if hi == _U64_MAX:
            return cls(SegmentKind.SORTED_ARRAY, array=EncodedU64Array.from_values(values),
                       length=count)
        if hi - lo + 1 == count:
            return cls(SegmentKind.RANGE, lo, hi + 1)
        holes, bitmap, sorted_array = sorted_segment_sizes(lo, hi, count)
        best = min(holes, bitmap, sorted_array)
        if best == holes:
            hole_values = _rowids.holes_of(values, lo, hi)
            return cls(SegmentKind.RANGE_WITH_HOLES, lo, hi + 1,
                       array=EncodedU64Array.from_values(hole_values), length=count)
        if best == bitmap:
            return cls(SegmentKind.RANGE_WITH_BITMAP, lo, hi + 1,
                       bitmap=_rowids.bitmap_of(values, lo, hi - lo + 1), length=count)
        return cls(SegmentKind.SORTED_ARRAY, array=EncodedU64Array.from_values(values),
                   length=count)

    # -- reading --------------------------------------------------------------------------
    @property
    def is_sorted(self) -> bool:
        """Whether the shape promises sorted values (every kind but ARRAY)."""
        return self.kind != SegmentKind.ARRAY

    def __len__(self) -> int:
        if self._len is None:
            k = self.kind
            if k == SegmentKind.RANGE:
                self._len = self.end - self.start
            elif k == SegmentKind.RANGE_WITH_HOLES:
                self._len = self.end - self.start - len(self.array)
            elif k == SegmentKind.RANGE_WITH_BITMAP:
                self._len = int(_rowids.bitmap_popcount(self.end - self.start,
                                                        np.frombuffer(self.bitmap, np.uint8)))
            else:
                self._len = len(self.array)
        return self._len

    def to_numpy(self) -> np.ndarray:
        """The values, in order, as a fresh uint64 array."""
        k = self.kind
        if k == SegmentKind.RANGE:
            return np.arange(self.start, self.end, dtype=np.uint64)
        if k == SegmentKind.RANGE_WITH_HOLES:
            return _rowids.expand_holes(self.start, self.end,
                                        np.ascontiguousarray(self.array.to_numpy()))
        if k == SegmentKind.RANGE_WITH_BITMAP:
            return _rowids.expand_bitmap(self.start, self.end - self.start,
                                         np.frombuffer(self.bitmap, np.uint8))
        return self.array.to_numpy()

    def bounds(self) -> tuple[int, int] | None:
        """(min, max) of the values, or None when empty."""
        if len(self) == 0:
            return None
        if self.kind == SegmentKind.RANGE:
            return self.start, self.end - 1
        values = self.to_numpy()
        if self.kind == SegmentKind.ARRAY:
            return int(values.min()), int(values.max())
        return int(values[0]), int(values[-1])

    # -- derived segments (Lance semantics) -----------------------------------------------
    def slice(self, offset: int, length: int) -> "U64Segment":
        """Values [offset, offset + length) re-shaped from scratch (``U64Segment::slice``)."""
        if length == 0:
            return U64Segment.range(0, 0)
        if self.kind == SegmentKind.RANGE:
            return U64Segment.range(self.start + offset, self.start + offset + length)
        return U64Segment.from_values(self.to_numpy()[offset:offset + length])

    def mask(self, positions) -> "U64Segment":
        """Drop the values at sorted local ``positions`` (``U64Segment::mask``).

        Unlike :meth:`from_values`, sortedness comes from the current shape: an ARRAY stays an
        ARRAY even when what is left happens to be sorted.
        """
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size == 0:
            return self
        n = len(self)
        if positions.size >= n:
            return U64Segment.range(0, 0)
        keep = np.ones(n, dtype=bool)
        keep[positions] = False
        values = self.to_numpy()[keep]
        if self.kind == SegmentKind.ARRAY:
            return U64Segment(SegmentKind.ARRAY, array=EncodedU64Array.from_values(values),
                              length=values.size)
        return U64Segment.from_values(values)

    # -- comparison -----------------------------------------------------------------------
    def same_shape(self, other: "U64Segment") -> bool:
        """Equal kind, bounds and payload (what the bytes would show)."""
        return (self.kind == other.kind and self.start == other.start and self.end == other.end
                and self.array == other.array and
                (self.bitmap is None) == (other.bitmap is None) and
                (self.bitmap is None or bytes(self.bitmap) == bytes(other.bitmap)))

    def __eq__(self, other) -> bool:
        if not isinstance(other, U64Segment):
            return NotImplemented
        return self.same_shape(other)

    def __repr__(self) -> str:
        k = self.kind
        if k == SegmentKind.RANGE:
            return f"Range({self.start}..{self.end})"
        if k == SegmentKind.RANGE_WITH_HOLES:
            return f"RangeWithHoles({self.start}..{self.end}, holes={self.array!r})"
        if k == SegmentKind.RANGE_WITH_BITMAP:
            return f"RangeWithBitmap({self.start}..{self.end}, {len(self.bitmap)} bytes)"
        return f"{'SortedArray' if k == SegmentKind.SORTED_ARRAY else 'Array'}({self.array!r})"
