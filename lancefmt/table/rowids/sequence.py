"""``RowIdSequence``: the stable row ids of one fragment, in row-offset order.

Position ``i`` of a fragment's sequence is the row id of the row at offset ``i`` (row address
``(fragment_id << 32) | i``), deleted rows included. The sequence is a list of
:class:`U64Segment`; new fragments get one ``Range``, updates and compaction produce the other
shapes. The Lance operations that build sequences (``extend``, ``mask``, ``rechunk``) are
reproduced here with the same results, so what lancefmt writes matches what pylance writes.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ...errors import InvalidArgumentError
from .. import _rowids
from .segment import SegmentKind, U64Segment
from .serialization import segment_from_row, sequence_to_bytes

Col = _rowids.Col


def decode_row_ids(data, path=None, expected_len: int | None = None) -> np.ndarray:
    """``RowIdSequence`` bytes -> uint64 row ids, decoded in Cython without per-value Python work.

    Bad bytes raise :class:`~lancefmt.errors.CorruptFileError` naming ``path``; so does a
    sequence whose length differs from ``expected_len`` (pass the fragment's physical rows).
    """
    table, total = _rowids.scan_row_id_sequence(data, path)
    check_length(total, expected_len, path, "row id sequence")
    if total == 0:
        return np.empty(0, dtype=np.uint64)
    return _rowids.fill_values(data, table, total)


def encode_row_ids(values) -> bytes:
    """uint64 row ids -> ``RowIdSequence`` bytes with one segment shaped by Lance's size rule."""
    return RowIdSequence.from_array(values).to_bytes()


def _check_distinct(values: np.ndarray) -> None:
    _, _, _, _, strict = _rowids.value_stats(values)
    if strict:
        return
    uniq, counts = np.unique(values, return_counts=True)
    if uniq.size != values.size:
        raise InvalidArgumentError(
            f"row ids must be distinct; {int(uniq[np.argmax(counts > 1)])} appears more than once")


def check_length(total, expected, path, what):
    if expected is not None and total != expected:
        from ...errors import CorruptFileError

        raise CorruptFileError(f"{what} has {total} values, expected {expected}", path)


class RowIdSequence:
    """An immutable list of :class:`U64Segment` (build new sequences with the methods below)."""

    __slots__ = ("segments", "_data", "_table", "_len")

    def __init__(self, segments: Iterable[U64Segment] = ()):
        self.segments: tuple[U64Segment, ...] = tuple(segments)
        self._data = None
        self._table = None
        self._len = None

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data, path=None) -> "RowIdSequence":
        """Parse ``RowIdSequence`` bytes (checked; CorruptFileError naming ``path``)."""
        data = bytes(data)
        table, total = _rowids.scan_row_id_sequence(data, path)
        seq = cls(segment_from_row(data, row) for row in table)
        seq._data, seq._table, seq._len = data, table, total
        return seq

    @classmethod
    def from_range(cls, start: int, end: int) -> "RowIdSequence":
        """The sequence of a newly written fragment: ``Range(start..end)``."""
        return cls([U64Segment.range(start, end)])

    @classmethod
    def from_array(cls, values) -> "RowIdSequence":
        """One segment shaped by Lance's rule; no segment at all for no values (as pylance's
        ``RowIdSequence``). Row ids must be distinct (InvalidArgumentError otherwise)."""
        values = np.ascontiguousarray(values, dtype=np.uint64)
        if values.size == 0:
            return cls()
        _check_distinct(values)
        return cls([U64Segment.from_values(values)])

    @classmethod
    def from_arrays(cls, arrays: Iterable) -> "RowIdSequence":
        """One segment per non-empty array, adjacent ranges merged as ``extend`` does.

        This is how compaction builds a fragment's sequence from pieces of its sources.
        """
        out = cls()
        for values in arrays:
            out = out.extend(cls.from_array(values))
        return out

    @classmethod
    def concat(cls, sequences: Iterable["RowIdSequence"]) -> "RowIdSequence":
        """``extend`` the sequences one after the other."""
        out = cls()
        for seq in sequences:
            out = out.extend(seq)
        return out

    def extend(self, other: "RowIdSequence") -> "RowIdSequence":
        """``self`` followed by ``other``; a Range ending where the next Range starts is merged."""
        left, right = list(self.segments), list(other.segments)
        if left and right and left[-1].kind == SegmentKind.RANGE and \
                right[0].kind == SegmentKind.RANGE and left[-1].end == right[0].start:
            merged = U64Segment.range(left[-1].start, right[0].end)
            return RowIdSequence(left[:-1] + [merged] + right[1:])
        return RowIdSequence(left + right)

    def mask(self, deleted_positions) -> "RowIdSequence":
        """Drop the rows at sorted ``deleted_positions`` (``RowIdSequence::mask``).

        Segments that lose rows are re-shaped, segments left empty are dropped, untouched
        segments keep their exact shape. Positions past the end are ignored.
        """
        positions = np.unique(np.asarray(deleted_positions, dtype=np.int64))
        if positions.size == 0:
            return self
        out = []
        offset = 0
        for seg in self.segments:
            n = len(seg)
            lo, hi = np.searchsorted(positions, [offset, offset + n])
            if hi > lo:
                seg = seg.mask(positions[lo:hi] - offset)
            if len(seg):
                out.append(seg)
            offset += n
        return RowIdSequence(out)

    # -- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        if self._len is None:
            self._len = sum(len(s) for s in self.segments)
        return self._len

    def to_bytes(self) -> bytes:
        """``RowIdSequence`` bytes (the parsed bytes themselves when read with from_bytes)."""
        if self._data is not None:
            return self._data
        return sequence_to_bytes(self.segments)

    def to_numpy(self) -> np.ndarray:
        """All row ids as a fresh uint64 array."""
        if self._data is not None:
            if self._len == 0:
                return np.empty(0, dtype=np.uint64)
            return _rowids.fill_values(self._data, self._table, self._len)
        if not self.segments:
            return np.empty(0, dtype=np.uint64)
        if len(self.segments) == 1:
            return self.segments[0].to_numpy()
        return np.concatenate([s.to_numpy() for s in self.segments])

    def _segment_ends(self) -> np.ndarray:
        return np.cumsum([len(s) for s in self.segments], dtype=np.int64)

    def select(self, indices) -> np.ndarray:
        """``row_ids[indices]`` (e.g. the kept offsets of a scan); ranges are not decoded."""
        idx = np.asarray(indices)
        if idx.dtype.kind not in "ui":
            raise InvalidArgumentError("row offsets must be integers")
        n = len(self)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise InvalidArgumentError(f"row offset out of range for a sequence of {n} rows")
        if all(s.kind == SegmentKind.RANGE for s in self.segments):
            if not self.segments or idx.size == 0:
                return np.empty(idx.shape, dtype=np.uint64)
            ends = self._segment_ends()
            which = np.searchsorted(ends, idx, side="right")
            firsts = np.concatenate(([0], ends[:-1]))
            starts = np.array([s.start for s in self.segments], dtype=np.uint64)
            return starts[which] + (idx.astype(np.int64) - firsts[which]).astype(np.uint64)
        return self.to_numpy()[idx]

    def filter(self, live) -> np.ndarray:
        """Row ids of the rows where the boolean ``live`` mask (length ``len(self)``) is True."""
        live = np.asarray(live, dtype=bool)
        if live.shape != (len(self),):
            raise InvalidArgumentError(
                f"live mask has {live.shape[0] if live.ndim else 0} entries, sequence has {len(self)}")
        return self.select(np.flatnonzero(live))

    def slice(self, offset: int, length: int) -> np.ndarray:
        """Row ids of rows ``offset .. offset + length``."""
        n = len(self)
        if offset < 0 or length < 0 or offset + length > n:
            raise InvalidArgumentError(f"slice {offset}+{length} outside a sequence of {n} rows")
        return self.select(np.arange(offset, offset + length, dtype=np.int64))

    # -- comparison -----------------------------------------------------------------------
    def __eq__(self, other) -> bool:
        if not isinstance(other, RowIdSequence):
            return NotImplemented
        return len(self.segments) == len(other.segments) and all(
            a.same_shape(b) for a, b in zip(self.segments, other.segments))

    def __repr__(self) -> str:
        shown = ", ".join(repr(s) for s in self.segments[:4])
        more = f", ... {len(self.segments) - 4} more" if len(self.segments) > 4 else ""
        return f"RowIdSequence([{shown}{more}], len={len(self)})"


def live_row_ids(row_ids, deletions=None, path=None) -> np.ndarray:
    """Row ids of a fragment's live rows, in row order (the ``_rowid`` column of a scan).

    ``row_ids`` is RowIdSequence bytes or a :class:`RowIdSequence`; ``deletions`` is None, a
    ``DeletionVector``, deleted offsets, a pyroaring BitMap or a boolean live mask.
    """
    from ..deletion import DeletionVector, as_live_mask

    seq = row_ids if isinstance(row_ids, RowIdSequence) else RowIdSequence.from_bytes(row_ids, path)
    if deletions is None:
        return seq.to_numpy()
    if isinstance(deletions, DeletionVector):
        if not deletions:
            return seq.to_numpy()
        return seq.select(deletions.kept_indices(len(seq)))
    live = as_live_mask(deletions, len(seq))
    return seq.to_numpy() if live is None else seq.filter(live)


def rechunk_sequences(sequences: Iterable[RowIdSequence], chunk_sizes: Sequence[int],
                      allow_incomplete: bool = False) -> list[RowIdSequence]:
    """Cut the concatenated segments of ``sequences`` into chunks of ``chunk_sizes`` rows.

    Each piece of a segment is re-shaped from its values (``U64Segment::slice``) and the pieces
    of one chunk are joined with ``extend``: Lance's ``rechunk_sequences``, used by compaction
    (after :meth:`RowIdSequence.mask` has removed each source's deleted rows). With
    ``allow_incomplete`` the last chunks may come out short; otherwise the totals must match.
    """
    segments = [s for seq in sequences for s in seq.segments]
    out = []
    si, seg_off = 0, 0
    for chunk_index, size in enumerate(chunk_sizes):
        chunk = RowIdSequence()
        remaining = int(size)
        while remaining > 0:
            if si >= len(segments):
                if allow_incomplete:
                    break
                raise InvalidArgumentError(
                    f"too few row ids for chunk {chunk_index}: {remaining} of {size} missing")
            seg = segments[si]
            left = len(seg) - seg_off
            if left == 0:
                si, seg_off = si + 1, 0
                continue
            take = min(left, remaining)
            chunk = chunk.extend(RowIdSequence([seg.slice(seg_off, take)]))
            remaining -= take
            if take == left:
                si, seg_off = si + 1, 0
            else:
                seg_off += take
        out.append(chunk)
    while si < len(segments) and len(segments[si]) - seg_off == 0:
        si, seg_off = si + 1, 0
    if si < len(segments):
        raise InvalidArgumentError(
            f"more row ids than the {len(out)} chunks of {sum(int(c) for c in chunk_sizes)} rows hold")
    return out
