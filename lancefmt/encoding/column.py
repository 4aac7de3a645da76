"""What the decoders see of a file: columns, their pages, and a source of page bytes.

The file layer parses ColumnMetadata into :class:`ColumnInfo` / :class:`PageInfo` (plain data,
shared by every file version) and hands the field readers a :class:`PageSource` that fetches
page buffers (coalesced ranged reads) and caches decoded pages for the duration of one read.
"""
from __future__ import annotations

import bisect

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError


@dataclass
class PageInfo:
    """One page of one column: where its buffers are and how it is encoded."""

    column: int
    index: int
    num_rows: int                 # ``Page.length``: rows (items, for 2.0 list item columns)
    row_start: int                # rows of this column before the page
    buffer_offsets: Sequence[int]
    buffer_sizes: Sequence[int]
    type_url: str                 # the Any type URL of the page encoding
    encoding: bytes               # the Any payload (an ArrayEncoding for 2.0)
    priority: int = 0
    # Caches filled by the decoders (the page description never changes once parsed).
    parsed: object = None         # the parsed page encoding
    row_layout: object = None     # bits per row of each buffer (False: not sliceable)

    @property
    def row_stop(self) -> int:
        return self.row_start + self.num_rows

    def describe(self) -> str:
        return f"column {self.column} page {self.index}"


@dataclass
class ColumnInfo:
    """One column: its pages (in row order) and column-level buffers."""

    index: int
    pages: list[PageInfo]
    type_url: str = ""
    encoding: bytes = b""
    buffer_offsets: Sequence[int] = ()
    buffer_sizes: Sequence[int] = ()

    def __post_init__(self):
        starts = np.zeros(len(self.pages) + 1, dtype=np.int64)
        if self.pages:
            np.cumsum([p.num_rows for p in self.pages], out=starts[1:])
        self.page_starts = starts
        self._starts = starts.tolist()  # page_range bisects this (numpy costs ~4 us a call)

    @property
    def num_rows(self) -> int:
        return int(self.page_starts[-1])

    def page_range(self, start: int, stop: int) -> range:
        """Indices of the pages holding rows ``[start, stop)`` (none when the range is empty;
        zero-row pages lying between them are included and decode to nothing)."""
        if stop <= start:
            return range(0)
        first = bisect.bisect_right(self._starts, start) - 1
        last = bisect.bisect_left(self._starts, stop)
        return range(max(first, 0), min(last, len(self.pages)))


class PageSource:
    """Page buffers and decoded pages for one read (or one streaming scan).

    ``fetch_ranges(list[(offset, size)]) -> list[pa.Buffer]`` does the I/O (the file layer
    coalesces and checks ranges). Decoded pages are cached by (column, page) until
    :meth:`evict_before` drops the ones a streaming scan has passed.
    """

    def __init__(self, columns: Sequence[ColumnInfo], fetch_ranges: Callable, path: str | None,
                 data_end: int | None = None):
        self.columns = columns
        self.path = path
        self.data_end = data_end  # bytes referenced from page data must lie before this
        self._fetch_ranges = fetch_ranges
        # the whole file as one memory-mapped buffer when random access may gather from it
        self.mapped: pa.Buffer | None = None
        self._raw: dict[tuple[int, int], list[pa.Buffer]] = {}
        self._decoded: dict[tuple[int, int], object] = {}

    def column(self, index: int) -> ColumnInfo:
        if not 0 <= index < len(self.columns):
            raise CorruptFileError(f"column {index} does not exist ({len(self.columns)} columns)",
                                   self.path)
        return self.columns[index]

    def prefetch(self, pages: Sequence[PageInfo]) -> None:
        """Fetch the buffers of all ``pages`` not yet fetched or decoded, in one batch."""
        todo = []
        seen = set()
        for p in pages:
            key = (p.column, p.index)
            if key in self._raw or key in self._decoded or key in seen:
                continue
            seen.add(key)
            todo.append(p)
        if not todo:
            return
        ranges = [(int(o), int(s)) for p in todo for o, s in zip(p.buffer_offsets, p.buffer_sizes)]
        bufs = self._fetch_ranges(ranges) if ranges else []
        i = 0
        for p in todo:
            k = len(p.buffer_offsets)
            self._raw[(p.column, p.index)] = bufs[i:i + k]
            i += k

    def fetch(self, ranges) -> list[pa.Buffer]:
        """Raw ``(offset, size)`` ranges of the file (coalesced by the file layer)."""
        return self._fetch_ranges(ranges) if ranges else []

    def is_decoded(self, page: PageInfo) -> bool:
        return (page.column, page.index) in self._decoded

    def buffers(self, page: PageInfo) -> list[pa.Buffer]:
        key = (page.column, page.index)
        if key not in self._raw:
            self.prefetch([page])
        return self._raw[key]

    def decoded(self, page: PageInfo, decode: Callable):
        """``decode(page, buffers)``, computed once per page and cached."""
        key = (page.column, page.index)
        hit = self._decoded.get(key)
        if hit is None:
            hit = decode(page, self.buffers(page))
            self._decoded[key] = hit
            self._raw.pop(key, None)
        return hit

    def evict_before(self, column: int, page_index: int) -> None:
        """Forget cached pages of ``column`` before ``page_index`` (a scan moved past them)."""
        for key in [k for k in self._decoded if k[0] == column and k[1] < page_index]:
            del self._decoded[key]
        for key in [k for k in self._raw if k[0] == column and k[1] < page_index]:
            del self._raw[key]
