"""Reading some rows of a 2.0 page without reading the page.

A page made only of ``nullable``, uncompressed ``flat`` and ``fixed_size_list`` nodes (every
fixed-width column: numbers, temporals, bools, vectors...) stores a fixed number of bits per
row in each of its buffers. For a handful of rows, the bytes those rows occupy are packed into
smaller buffers that form a valid page of just those rows, which the ordinary
:class:`~.page_decoder.PageDecoder` then decodes. From a memory-mapped local file the rows are
gathered straight from the map (one vectorised gather per buffer); from other stores the spans
holding them are fetched first. This is what makes ``take`` on a file with 32 MiB pages read
kilobytes instead of pages.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._proto import encodings_v2_0_pb2 as pb
from ...errors import CorruptFileError


def row_layout(enc: pb.ArrayEncoding, per_row: int = 1):
    """``[(buffer index, bits per row), ...]`` of a plain fixed-width page, else ``None``."""
    kind = enc.WhichOneof("array_encoding")
    if kind == "nullable":
        which = enc.nullable.WhichOneof("nullability")
        if which == "all_nulls":
            return []
        if which == "no_nulls":
            return row_layout(enc.nullable.no_nulls.values, per_row)
        if which == "some_nulls":
            validity = row_layout(enc.nullable.some_nulls.validity, per_row)
            values = row_layout(enc.nullable.some_nulls.values, per_row)
            if validity is None or values is None:
                return None
            return validity + values
        return None
    if kind == "flat":
        flat = enc.flat
        if flat.HasField("compression") and flat.compression.scheme not in ("", "none"):
            return None
        if flat.buffer.buffer_type != pb.Buffer.page or flat.bits_per_value == 0:
            return None
        return [(flat.buffer.buffer_index, flat.bits_per_value * per_row)]
    if kind == "fixed_size_list":
        return row_layout(enc.fixed_size_list.items, per_row * enc.fixed_size_list.dimension)
    return None


# Wanted rows whose bytes are closer than this are read as one span (the gap is read and
# dropped; under an OS page, so at most one extra page-cache page). The byte source then
# coalesces spans further for remote stores.
SPAN_GAP = 1024


class BufferGather:
    """How to read the wanted rows of one fixed-width page buffer: the byte ``ranges`` to
    fetch, and :meth:`finish` to pack the fetched pieces into a buffer of just those rows.

    Everything is vectorised over the rows (numpy): no Python work per row.
    """

    def __init__(self, index: int, bits: int, base: int, size: int, rows: np.ndarray, path=None):
        self.index = index
        self.bits = bits
        self.rows = rows
        self.base = base
        self.path = path
        self._ranges = None
        if rows.size == 0:
            self._ranges = []
            self.needed = 0
            return
        end_bit = (int(rows[-1]) + 1) * bits
        self.needed = (end_bit + 7) // 8
        if self.needed > size:
            raise CorruptFileError(f"page buffer {index} holds {size} bytes, row {int(rows[-1])} "
                                   f"needs {self.needed}", path)

    @property
    def ranges(self) -> list:
        """The byte ranges to fetch (spans of nearby rows), computed on first use: a mapped
        file is gathered from directly (:meth:`gather_mapped`) and never needs them."""
        if self._ranges is None:
            self._plan_spans()
        return self._ranges

    def _plan_spans(self):
        rows, bits, base = self.rows, self.bits, self.base
        if bits % 8 == 0:
            w = bits // 8
            breaks = np.flatnonzero((np.diff(rows) - 1) * w > SPAN_GAP) + 1
            first = rows[np.concatenate(([0], breaks))]
            last = rows[np.concatenate((breaks - 1, [rows.size - 1]))] + 1
            span_rows = last - first
            counts = np.diff(np.concatenate(([0], breaks, [rows.size])))
            before = np.cumsum(span_rows) - span_rows
            self.positions = rows + np.repeat(before - first, counts)
            self._ranges = list(zip((base + first * w).tolist(), (span_rows * w).tolist()))
        else:  # bit-packed (validity bitmaps, booleans): spans of whole bytes
            lo = rows * bits // 8
            hi = ((rows + 1) * bits + 7) // 8
            breaks = np.flatnonzero(lo[1:] - hi[:-1] > SPAN_GAP) + 1
            first = lo[np.concatenate(([0], breaks))]
            last = hi[np.concatenate((breaks - 1, [rows.size - 1]))]
            span_bytes = last - first
            counts = np.diff(np.concatenate(([0], breaks, [rows.size])))
            before = np.cumsum(span_bytes) - span_bytes
            self.bit_starts = rows * bits + np.repeat((before - first) * 8, counts)
            self._ranges = list(zip((base + first).tolist(), span_bytes.tolist()))

    def gather_mapped(self, mapped: pa.Buffer) -> pa.Buffer:
        """The wanted rows' bits straight from a memory-mapped file: one vectorised gather
        over a zero-copy view of the buffer (only the OS pages holding the rows are touched;
        no per-span slices to fetch and concatenate)."""
        rows, bits = self.rows, self.bits
        if rows.size == 0:
            return pa.py_buffer(b"")
        if self.base < 0 or self.base + self.needed > mapped.size:
            raise CorruptFileError(f"page buffer {self.index} at {self.base} runs past the end "
                                   f"of the {mapped.size}-byte file (file truncated?)", self.path)
        if bits % 8 == 0:
            w = bits // 8
            n = int(rows[-1]) + 1
            if w in (1, 2, 4, 8):
                values = np.frombuffer(mapped, dtype=f"<u{w}", count=n, offset=self.base)
            else:
                values = np.frombuffer(mapped, dtype=np.uint8, count=n * w,
                                       offset=self.base).reshape(n, w)
            return pa.py_buffer(values[rows])
        data = np.frombuffer(mapped, dtype=np.uint8, count=self.needed, offset=self.base)
        bit = rows * bits if bits == 1 else (rows[:, None] * bits + np.arange(bits)).reshape(-1)
        got = (data[bit >> 3] >> (bit & 7).astype(np.uint8)) & 1
        return pa.py_buffer(np.packbits(got, bitorder="little"))

    def finish(self, pieces) -> pa.Buffer:
        if not self.ranges:
            return pa.py_buffer(b"")
        bits = self.bits
        if bits % 8 == 0:
            w = bits // 8
            data = pieces[0] if len(pieces) == 1 else pa.py_buffer(
                np.concatenate([np.frombuffer(p, dtype=np.uint8) for p in pieces]))
            if w in (1, 2, 4, 8):
                values = np.frombuffer(data, dtype=f"<u{w}")
            else:
                values = np.frombuffer(data, dtype=np.uint8).reshape(-1, w)
            return pa.py_buffer(np.ascontiguousarray(values[self.positions]))
        data = np.concatenate([np.frombuffer(p, dtype=np.uint8) for p in pieces])
        unpacked = np.unpackbits(data, bitorder="little")
        idx = self.bit_starts if bits == 1 else \
            (self.bit_starts[:, None] + np.arange(bits)).reshape(-1)
        return pa.py_buffer(np.packbits(unpacked[idx], bitorder="little"))


def gather_plan(offsets, sizes, layout, rows: np.ndarray, path=None) -> list[BufferGather]:
    """One :class:`BufferGather` per buffer of ``layout`` for sorted, distinct ``rows``."""
    return [BufferGather(index, bits, int(offsets[index]), int(sizes[index]), rows, path)
            for index, bits in layout]
