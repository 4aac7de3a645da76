"""Taking rows out of chunked Arrow results (shared by the field readers and the file reader).

Two pyarrow limits are worked around here: ``take`` on a *sliced* fixed-size list of
fixed-size lists returns wrong values (pyarrow 26), and chunks of a dictionary column whose
page dictionaries contain a null item cannot be unified for a chunked ``take``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

# Requested rows closer than this are read as one range when whole pages are decoded anyway.
SPAN_GAP = 1024


def spans(rows: np.ndarray, gap: int = SPAN_GAP):
    """Sorted unique ``rows`` as ``(starts, stops)`` of ranges, merging gaps up to ``gap``."""
    breaks = np.nonzero(np.diff(rows) > gap)[0] + 1
    starts = rows[np.concatenate([[0], breaks])]
    stops = rows[np.concatenate([breaks - 1, [rows.size - 1]])] + 1
    return starts, stops


def span_positions(starts, stops, rows) -> np.ndarray:
    """Where each of ``rows`` sits in the concatenation of the ``[start, stop)`` ranges."""
    lengths = stops - starts
    base = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    which = np.searchsorted(starts, rows, side="right") - 1
    return base[which] + (rows - starts[which])


def _has_nested_fsl(t: pa.DataType, inside_fsl: bool = False) -> bool:
    if pa.types.is_fixed_size_list(t):
        return inside_fsl or _has_nested_fsl(t.value_type, True)
    if pa.types.is_struct(t):
        return any(_has_nested_fsl(t.field(i).type, inside_fsl) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_nested_fsl(t.value_type, inside_fsl)
    return False


def _has_dictionary(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_dictionary(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_dictionary(t.value_type)
    return False


def take_chunks(chunks, dtype: pa.DataType, positions) -> pa.ChunkedArray:
    """``positions`` (any order, repeats allowed) of the concatenated ``chunks``."""
    positions = positions if isinstance(positions, pa.Array) else pa.array(positions, pa.int64())
    if _has_nested_fsl(dtype) and chunks:
        fresh = pa.concat_arrays(list(chunks) + [pa.array([], type=dtype)])
        return pa.chunked_array([fresh.take(positions)], type=dtype)
    if pa.types.is_dictionary(dtype):
        # Page dictionaries hold a null item (as Lance writes them), which pyarrow cannot unify
        # across chunks: take the values, then dictionary-encode the result afresh.
        values = pa.chunked_array(chunks, type=dtype).cast(dtype.value_type).take(positions)
        return values.dictionary_encode().cast(dtype)
    if _has_dictionary(dtype):
        return _take_by_chunk(chunks, dtype, positions)
    return pa.chunked_array(chunks, type=dtype).take(positions)


def _take_by_chunk(chunks, dtype, positions) -> pa.ChunkedArray:
    """Take without concatenating chunks: one output chunk per run of positions that fall in
    the same input chunk (nested dictionaries cannot always be unified)."""
    pos = np.asarray(positions, dtype=np.int64)
    bounds = np.cumsum([0] + [len(c) for c in chunks])
    which = np.searchsorted(bounds, pos, side="right") - 1
    out = []
    if pos.size:
        cuts = np.flatnonzero(np.diff(which)) + 1
        for run in np.split(np.arange(pos.size), cuts):
            k = int(which[run[0]])
            out.append(chunks[k].take(pa.array(pos[run] - bounds[k])))
    return pa.chunked_array(out, type=dtype)
