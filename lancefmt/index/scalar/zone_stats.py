"""Per-zone minimum, maximum, null and NaN counts, as pylance 14's zone maps record them.

Zones are consecutive groups of an array (``bounds``: each group's first row, then the length).
``min`` is the least value that is neither null nor NaN, in Arrow's total order (so ``-0.0``
is below ``0.0``), null when the zone has none; ``max`` is NaN when the zone holds a NaN (its
finite maximum is then unknown), else the greatest such value, else null. Nested and
fixed-size binary columns keep null counts only (``min``/``max`` are null), as pylance 14 does. Numbers and times are reduced with numpy over the
value buffer; other types (strings, binary, decimals, booleans) with Arrow's grouped min/max.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .pages import numpy_kind


@dataclass
class Stats:
    min: pa.Array
    max: pa.Array
    null_count: np.ndarray     # int64
    nan_count: np.ndarray      # int64


def is_nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t)


def fixed_values(values: pa.Array, kind: np.dtype) -> np.ndarray:
    """The value buffer of a fixed-width array as ``kind`` (null slots hold whatever bytes)."""
    buf = values.buffers()[1]
    n, off = len(values), values.offset
    if buf is None:
        return np.zeros(n, dtype=kind)
    return np.frombuffer(buf, dtype=kind, count=off + n)[off:]


def valid_mask(values: pa.Array) -> np.ndarray:
    if not values.null_count:
        return np.ones(len(values), dtype=bool)
    return np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _sums(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    return np.add.reduceat(mask.astype(np.int64), bounds[:-1]) if bounds.size > 1 else \
        np.zeros(0, dtype=np.int64)


def group_stats(values: pa.Array, bounds: np.ndarray) -> Stats:
    """See module docstring; every group must hold at least one row."""
    t = values.type
    k = bounds.size - 1
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], t)
    valid = valid_mask(values)
    nulls = _sums(~valid, bounds)
    if k <= 0:
        return Stats(pa.array([], t), pa.array([], t), np.zeros(0, np.int64), np.zeros(0, np.int64))
    if is_nested(t) or pa.types.is_fixed_size_binary(t):  # pylance 14 keeps no bounds for these
        return Stats(pa.nulls(k, t), pa.nulls(k, t), nulls, np.zeros(k, np.int64))
    kind = numpy_kind(t)
    if kind is not None and pa.types.is_floating(t):
        return _float_stats(values, bounds, valid, nulls, kind)
    if kind is not None:
        return _int_stats(values, bounds, valid, nulls, kind)
    return _arrow_stats(values, bounds, nulls)


_TOTAL = {2: np.int16, 4: np.int32, 8: np.int64}


def total_order_keys(vals: np.ndarray) -> np.ndarray:
    """Floats as signed integers that sort in IEEE total order (an involution on the bits)."""
    it = _TOTAL[vals.dtype.itemsize]
    bits = vals.view(it)
    return bits ^ ((bits >> (8 * vals.dtype.itemsize - 1)) & it(np.iinfo(it).max))


def _float_stats(values, bounds, valid, nulls, kind) -> Stats:
    vals = fixed_values(values, kind)
    nan = np.isnan(vals) & valid
    finite = valid & ~nan
    nans = _sums(nan, bounds)
    has = _sums(finite, bounds) > 0
    keys = total_order_keys(vals)
    it = keys.dtype.type
    lo = np.minimum.reduceat(np.where(finite, keys, it(np.iinfo(it).max)), bounds[:-1])
    hi = np.maximum.reduceat(np.where(finite, keys, it(np.iinfo(it).min)), bounds[:-1])
    lo = total_order_keys(lo.view(kind)).view(kind)  # the key map is its own inverse
    hi = total_order_keys(hi.view(kind)).view(kind).copy()
    hi[nans > 0] = np.nan
    t = values.type
    return Stats(pa.array(lo, t, mask=~has), pa.array(hi, t, mask=~(has | (nans > 0))), nulls, nans)


def _int_stats(values, bounds, valid, nulls, kind) -> Stats:
    t = values.type
    vals = fixed_values(values, kind)
    info = np.iinfo(kind)
    has = _sums(valid, bounds) > 0
    lo = np.minimum.reduceat(np.where(valid, vals, kind.type(info.max)), bounds[:-1])
    hi = np.maximum.reduceat(np.where(valid, vals, kind.type(info.min)), bounds[:-1])
    if pa.types.is_integer(t):
        return Stats(pa.array(lo, t, mask=~has), pa.array(hi, t, mask=~has), nulls,
                     np.zeros(lo.size, np.int64))
    storage = pa.int32() if kind == np.int32 else pa.int64()
    return Stats(pa.array(lo, storage, mask=~has).view(t), pa.array(hi, storage, mask=~has).view(t),
                 nulls, np.zeros(lo.size, np.int64))


def _arrow_stats(values, bounds, nulls) -> Stats:
    t = values.type
    k = bounds.size - 1
    group = np.repeat(np.arange(k, dtype=np.int64), np.diff(bounds))
    agg = pa.table({"g": group, "v": values}).group_by("g", use_threads=False) \
        .aggregate([("v", "min"), ("v", "max")])
    agg = agg.take(pc.sort_indices(agg.column("g")))
    lo = agg.column("v_min").combine_chunks().cast(t)
    hi = agg.column("v_max").combine_chunks().cast(t)
    return Stats(lo, hi, nulls, np.zeros(k, np.int64))
