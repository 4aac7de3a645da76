"""``RowDatasetVersionSequence``: the dataset version each row was created / last updated in.

A fragment may carry two of these (``created_at`` and ``last_updated_at``). Each is a list of
runs ``(span, version)``; a run covers ``len(span)`` consecutive rows and the runs follow row
order. Only the span's *length* matters for the per-row versions: Lance keeps whatever row
positions the span held (after compaction they are the surviving source positions), so spans
are kept as :class:`U64Segment` to write the same bytes back.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ...errors import InvalidArgumentError
from .. import _rowids
from .segment import U64Segment
from .sequence import check_length
from .serialization import segment_from_row, version_runs_to_bytes

Col = _rowids.Col


def decode_versions(data, path=None, expected_len: int | None = None) -> np.ndarray:
    """``RowDatasetVersionSequence`` bytes -> per-row uint64 versions (CorruptFileError if bad)."""
    table, total = _rowids.scan_version_sequence(data, path)
    check_length(total, expected_len, path, "version sequence")
    return np.repeat(table[:, Col.VERSION], table[:, Col.COUNT].astype(np.int64))


def encode_versions(versions) -> bytes:
    """Per-row versions -> ``RowDatasetVersionSequence`` bytes (one Range run per equal stretch)."""
    return RowDatasetVersionSequence.from_versions(versions).to_bytes()


def new_fragment_versions(num_rows: int, version: int) -> bytes:
    """The sequence of a fragment written at ``version``: one run ``Range(0..num_rows)``
    (no runs at all for an empty fragment), as Lance's ``from_uniform_row_count``."""
    return RowDatasetVersionSequence.uniform(num_rows, version).to_bytes()


class RowDatasetVersionSequence:
    """Immutable list of ``(span, version)`` runs."""

    __slots__ = ("runs", "_data")

    def __init__(self, runs: Iterable[tuple[U64Segment, int]] = ()):
        self.runs: tuple[tuple[U64Segment, int], ...] = tuple((s, int(v)) for s, v in runs)
        self._data = None

    @classmethod
    def from_bytes(cls, data, path=None) -> "RowDatasetVersionSequence":
        data = bytes(data)
        table, _ = _rowids.scan_version_sequence(data, path)
        seq = cls((segment_from_row(data, row), int(row[Col.VERSION])) for row in table)
        seq._data = data
        return seq

    @classmethod
    def uniform(cls, num_rows: int, version: int) -> "RowDatasetVersionSequence":
        if num_rows == 0:
            return cls()
        return cls([(U64Segment.range(0, num_rows), version)])

    @classmethod
    def from_versions(cls, versions) -> "RowDatasetVersionSequence":
        """Runs of equal consecutive versions, spans ``Range(first_row..end_row)`` (the form
        Lance writes when an update rewrites some rows of a fragment in place)."""
        v = np.ascontiguousarray(versions, dtype=np.uint64)
        if v.size == 0:
            return cls()
        cuts = np.flatnonzero(v[1:] != v[:-1]) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [v.size]))
        return cls((U64Segment.range(int(s), int(e)), int(v[s])) for s, e in zip(starts, ends))

    def __len__(self) -> int:
        return sum(len(span) for span, _ in self.runs)

    def to_numpy(self) -> np.ndarray:
        """Per-row versions (uint64)."""
        if not self.runs:
            return np.empty(0, dtype=np.uint64)
        lengths = np.array([len(span) for span, _ in self.runs], dtype=np.int64)
        versions = np.array([v for _, v in self.runs], dtype=np.uint64)
        return np.repeat(versions, lengths)

    def version_at(self, index: int) -> int | None:
        offset = 0
        for span, version in self.runs:
            if index < offset + len(span):
                return version
            offset += len(span)
        return None

    def to_bytes(self) -> bytes:
        if self._data is not None:
            return self._data
        return version_runs_to_bytes(self.runs)

    def mask(self, deleted_positions) -> "RowDatasetVersionSequence":
        """Drop the rows at sorted positions (``RowDatasetVersionSequence::mask``): each span
        loses the values at those local positions; emptied runs are dropped."""
        positions = np.unique(np.asarray(deleted_positions, dtype=np.int64))
        if positions.size == 0:
            return self
        out = []
        offset = 0
        for span, version in self.runs:
            n = len(span)
            lo, hi = np.searchsorted(positions, [offset, offset + n])
            if hi > lo:
                span = span.mask(positions[lo:hi] - offset)
            if len(span):
                out.append((span, version))
            offset += n
        return RowDatasetVersionSequence(out)

    def __eq__(self, other) -> bool:
        if not isinstance(other, RowDatasetVersionSequence):
            return NotImplemented
        return len(self.runs) == len(other.runs) and all(
            a.same_shape(b) and va == vb for (a, va), (b, vb) in zip(self.runs, other.runs))

    def __repr__(self) -> str:
        shown = ", ".join(f"{s!r}@v{v}" for s, v in self.runs[:4])
        more = f", ... {len(self.runs) - 4} more" if len(self.runs) > 4 else ""
        return f"RowDatasetVersionSequence([{shown}{more}], len={len(self)})"


def rechunk_version_sequences(sequences: Iterable[RowDatasetVersionSequence],
                              chunk_sizes: Sequence[int],
                              allow_incomplete: bool = False) -> list[RowDatasetVersionSequence]:
    """Cut the concatenated runs into chunks of ``chunk_sizes`` rows; every piece's span is
    re-shaped with ``U64Segment.slice`` and runs are not merged (Lance's
    ``rechunk_version_sequences``)."""
    runs = [r for seq in sequences for r in seq.runs]
    out = []
    ri, off = 0, 0
    for chunk_index, size in enumerate(chunk_sizes):
        chunk = []
        remaining = int(size)
        while remaining > 0:
            if ri >= len(runs):
                if allow_incomplete:
                    break
                raise InvalidArgumentError(
                    f"too few version runs for chunk {chunk_index}: {remaining} of {size} missing")
            span, version = runs[ri]
            left = len(span) - off
            if left == 0:
                ri, off = ri + 1, 0
                continue
            take = min(left, remaining)
            chunk.append((span.slice(off, take), version))
            remaining -= take
            if take == left:
                ri, off = ri + 1, 0
            else:
                off += take
        out.append(RowDatasetVersionSequence(chunk))
    while ri < len(runs) and len(runs[ri][0]) - off == 0:
        ri, off = ri + 1, 0
    if ri < len(runs):
        raise InvalidArgumentError(
            f"more rows in the version runs than the {len(out)} chunks hold")
    return out
