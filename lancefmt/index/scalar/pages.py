"""Searching one sorted page of values: numpy for numbers and times, Arrow compute otherwise.

A BTREE keeps its values sorted (nulls first) in pages; the same helpers find the rows of a
page matching an equality, a range or a set. Numbers and temporal values are compared as
numpy arrays with binary searches; strings, binary, decimals and booleans with Arrow compute
kernels over the page (a page is a few thousand values). Floats are compared by their order
keys (:mod:`lancefmt.sql.float_order`): pylance sorts and compares them in IEEE total order.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...sql.float_order import array_keys, key_value, scalar_key


def numpy_kind(t: pa.DataType) -> np.dtype | None:
    """The numpy dtype values of ``t`` compare as, or None when Arrow compute must compare."""
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return np.dtype(t.to_pandas_dtype())
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return np.dtype(np.int32)
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time64(t) \
            or pa.types.is_duration(t):
        return np.dtype(np.int64)
    return None


def as_numpy(values: pa.Array, kind: np.dtype) -> np.ndarray:
    """Non-null values of a numeric/temporal array as ``kind`` (nulls must be absent)."""
    t = values.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return values.to_numpy(zero_copy_only=False).astype(kind, copy=False)
    storage = pa.int32() if kind == np.int32 else pa.int64()
    return values.view(storage).to_numpy(zero_copy_only=False)


def scalar_as(value, t: pa.DataType, kind: np.dtype):
    """A Python value of type ``t`` as a numpy scalar comparable with :func:`as_numpy`'s output
    (numbers directly; dates and times through Arrow's conversion to their integer storage)."""
    if (pa.types.is_integer(t) or pa.types.is_floating(t)) and isinstance(value, (int, float)):
        return kind.type(value)
    arr = pa.array([value], type=t)
    return as_numpy(arr, kind)[0]


def order_kind(t: pa.DataType) -> np.dtype | None:
    """The numpy dtype a BTREE compares values of ``t`` as (floats: their order keys), or
    None when Arrow compute must compare."""
    if pa.types.is_floating(t):
        return np.dtype({16: np.int16, 32: np.int32, 64: np.int64}[t.bit_width])
    return numpy_kind(t)


def order_keys(values: pa.Array, kind: np.dtype) -> np.ndarray:
    """Non-null values as :func:`order_kind` compares them."""
    if pa.types.is_floating(values.type):
        return array_keys(values)
    return as_numpy(values, kind)


def order_scalar(value, t: pa.DataType, kind: np.dtype):
    """One value as :func:`order_kind` compares it."""
    if pa.types.is_floating(t):
        return kind.type(scalar_key(float(value), t))
    return scalar_as(value, t, kind)


def order_values(keys: np.ndarray, t: pa.DataType) -> list:
    """Python values of order keys (the inverse of :func:`order_keys` for floats)."""
    return [key_value(int(k), t) for k in keys] if pa.types.is_floating(t) else keys.tolist()


class SortedPage:
    """One page: ``values`` (sorted, nulls first) and their row ``ids``."""

    __slots__ = ("nulls", "ids", "values", "keys", "kind")

    def __init__(self, values: pa.Array, ids: np.ndarray):
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        self.nulls = values.null_count
        self.ids = ids
        self.values = values.slice(self.nulls)
        if self.values.null_count:
            raise ValueError("a page's nulls are not all before its values")
        self.kind = order_kind(values.type)
        self.keys = order_keys(self.values, self.kind) if self.kind is not None else None

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.values.nbytes +
                   (self.keys.nbytes if self.keys is not None else 0))

    def null_ids(self) -> np.ndarray:
        return self.ids[: self.nulls]

    def _span(self, lo: int, hi: int) -> np.ndarray:
        return self.ids[self.nulls + lo: self.nulls + hi]

    def equal(self, value, t: pa.DataType) -> np.ndarray:
        if self.keys is not None:
            v = order_scalar(value, t, self.kind)
            lo = int(np.searchsorted(self.keys, v, side="left"))
            hi = int(np.searchsorted(self.keys, v, side="right"))
            return self._span(lo, hi)
        mask = pc.equal(self.values, pa.scalar(value, type=t))
        return self.ids[self.nulls:][np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)]

    def range(self, lower, lower_inc: bool, upper, upper_inc: bool, t: pa.DataType) -> np.ndarray:
        if self.keys is not None:
            lo = 0 if lower is None else int(np.searchsorted(
                self.keys, order_scalar(lower, t, self.kind), side="left" if lower_inc else "right"))
            hi = len(self.keys) if upper is None else int(np.searchsorted(
                self.keys, order_scalar(upper, t, self.kind), side="right" if upper_inc else "left"))
            return self._span(lo, hi) if hi > lo else self.ids[:0]
        mask = None
        if lower is not None:
            f = pc.greater_equal if lower_inc else pc.greater
            mask = f(self.values, pa.scalar(lower, type=t))
        if upper is not None:
            f = pc.less_equal if upper_inc else pc.less
            m2 = f(self.values, pa.scalar(upper, type=t))
            mask = m2 if mask is None else pc.and_(mask, m2)
        if mask is None:
            return self.ids[self.nulls:]
        return self.ids[self.nulls:][np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)]

    def isin(self, values: tuple, t: pa.DataType) -> np.ndarray:
        if self.keys is not None:
            if pa.types.is_floating(t):
                wanted = np.array([order_scalar(v, t, self.kind) for v in values], dtype=self.kind)
            elif self.kind.kind in "iu" and all(isinstance(v, (int, np.integer)) for v in values):
                wanted = np.asarray(values, dtype=self.kind)
            else:
                wanted = as_numpy(pa.array(list(values), type=t), self.kind)
            lo = np.searchsorted(self.keys, wanted, side="left")
            hi = np.searchsorted(self.keys, wanted, side="right")
            hit = hi > lo
            if not hit.any():
                return self.ids[:0]
            spans = [self.ids[self.nulls + a: self.nulls + b] for a, b in zip(lo[hit], hi[hit])]
            return spans[0] if len(spans) == 1 else np.concatenate(spans)
        mask = pc.is_in(self.values, value_set=pa.array(list(values), type=t))
        return self.ids[self.nulls:][np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)]
