"""Dropping deleted rows from a window's columns.

A fixed-width column without nulls (numbers, temporals, decimals) is gathered by one Cython
pass over the kept row numbers (``_keep_rows.keep_fixed``, without the GIL); any other column
by Arrow's ``take``. Which kind a column is comes from the scan's types, decided once per
fragment read (:func:`gather_width`), not per window.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._keep_rows import keep_fixed


def gather_width(dtype: pa.DataType) -> int:
    """Bytes per value when a column of ``dtype`` can be gathered by bytes, else 0."""
    if isinstance(dtype, pa.BaseExtensionType) or not (
            pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or
            pa.types.is_temporal(dtype) or pa.types.is_decimal(dtype)):
        return 0
    bits = dtype.bit_width
    return bits // 8 if bits >= 8 and bits % 8 == 0 else 0


def keep_rows(arrays: list, widths, kept: np.ndarray, first: int) -> list:
    """``arrays`` (value 0 being physical row ``first``) with only the rows ``kept``
    (sorted physical row numbers); ``widths`` from :func:`gather_width` per array."""
    take = None
    out = []
    for arr, width in zip(arrays, widths):
        if width and arr.null_count == 0 and kept.dtype == np.uint32:
            values = np.frombuffer(arr.buffers()[1], np.uint8, count=len(arr) * width,
                                   offset=arr.offset * width)
            out.append(pa.Array.from_buffers(arr.type, kept.size,
                                             [None, pa.py_buffer(keep_fixed(values, width,
                                                                            kept, first))]))
            continue
        if take is None:
            take = pa.array((kept - first).astype(np.int32))
        out.append(arr.take(take))
    return out
