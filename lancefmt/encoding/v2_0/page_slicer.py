"""Reading some rows of a 2.0 page without reading the page.

A page made only of ``nullable``, uncompressed ``flat`` and ``fixed_size_list`` nodes (every
fixed-width column: numbers, temporals, bools, vectors...) stores a fixed number of bits per
row in each of its buffers. For a handful of rows, the bytes those rows occupy are fetched and
packed into smaller buffers that form a valid page of just those rows, which the ordinary
:class:`~.page_decoder.PageDecoder` then decodes. This is what makes ``take`` on a file with
32 MiB pages read kilobytes instead of pages.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._proto import encodings_v2_0_pb2 as pb
from .._validity import copy_bitmap


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


def runs(rows: np.ndarray):
    """Sorted unique ``rows`` as ``(starts, stops)`` of consecutive runs."""
    breaks = np.nonzero(np.diff(rows) != 1)[0] + 1
    starts = rows[np.concatenate([[0], breaks])]
    stops = rows[np.concatenate([breaks - 1, [rows.size - 1]])] + 1
    return starts, stops


def byte_ranges(offsets, sizes, layout, starts, stops):
    """The ``(offset, size)`` ranges each buffer of ``layout`` needs for the row runs, and
    where each run's bits begin inside its first byte; ranges are clipped to the buffers."""
    out = []
    for index, bits in layout:
        base, size = int(offsets[index]), int(sizes[index])
        first_bit = starts * bits
        last_bit = stops * bits
        lo = first_bit // 8
        hi = np.minimum((last_bit + 7) // 8, size)
        lo = np.minimum(lo, hi)
        out.append((index, bits, [(base + int(a), int(b - a)) for a, b in zip(lo, hi)],
                    first_bit % 8))
    return out


def assemble(pieces, bits: int, starts, stops, shifts) -> pa.Buffer:
    """Pack the fetched pieces of one buffer into the buffer of a page holding only the runs."""
    lengths = (stops - starts) * bits
    if bits % 8 == 0:
        parts = [np.frombuffer(p, dtype=np.uint8, count=int(n) // 8) for p, n in zip(pieces, lengths)]
        return pa.py_buffer(np.concatenate(parts) if len(parts) > 1 else parts[0].copy())
    masks = [np.unpackbits(copy_bitmap(p, int(s), int(n)), count=int(n), bitorder="little")
             for p, s, n in zip(pieces, shifts, lengths)]
    return pa.py_buffer(np.packbits(np.concatenate(masks), bitorder="little"))
