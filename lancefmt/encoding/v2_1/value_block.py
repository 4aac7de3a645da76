"""A leaf's visible values as the bytes 2.1 pages are made of.

* :class:`FixedBlock` -- ``bits`` per value (1 for booleans as a bitmap, else a byte multiple),
  ``data`` the values back to back; fixed-size lists add the item count and an item-validity
  bitmap (``fsl_dims`` outer first, one optional bitmap per FSL layer).
* :class:`VariableBlock` -- int64 ``offsets`` (n + 1, from 0) into ``data``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ...errors import UnsupportedFeatureError
from .._validity import copy_bitmap
from ..pool_memory import pool_empty


@dataclass
class FixedBlock:
    bits: int
    data: np.ndarray           # uint8
    n: int
    fsl_dims: tuple = ()       # outer first
    fsl_validity: list = field(default_factory=list)  # per FSL layer: bool array or None

    @property
    def value_bytes(self) -> int:
        return self.bits * int(np.prod(self.fsl_dims or (1,))) // 8


@dataclass
class VariableBlock:
    offsets: np.ndarray        # int64, n + 1, starting at 0
    data: np.ndarray           # uint8
    n: int
    large: bool = False        # 64-bit offsets (large_string / large_binary)

    @property
    def max_len(self) -> int:
        from ._chunk_writer import max_length

        return int(max_length(np.ascontiguousarray(self.offsets, np.int64))) if self.n else 0


@dataclass
class DictBlock:
    """Dictionary page values: u32 ``indices`` (a FixedBlock) into ``items`` (a block)."""

    indices: FixedBlock
    items: object
    n: int

    @property
    def max_len(self) -> int:
        return 4


def is_variable(t) -> bool:
    return (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t) or pa.types.is_string_view(t)
            or pa.types.is_binary_view(t))


def _u8(buf, start, size) -> np.ndarray:
    if size == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(buf, dtype=np.uint8, count=size, offset=start)


def fixed_bits(t) -> int | None:
    if pa.types.is_boolean(t):
        return 1
    try:
        return t.bit_width
    except ValueError:
        return None


def value_block(a: pa.Array):
    """The block of ``a`` (a leaf's visible values)."""
    t = a.type
    n = len(a)
    if isinstance(t, pa.BaseExtensionType):
        return value_block(a.storage)
    if pa.types.is_dictionary(t):
        idx = a.indices.fill_null(0).cast(pa.uint32())
        items = a.dictionary
        if len(items) == 0:
            items = pa.array([""] if is_variable(items.type) else [0], items.type)
        if items.null_count:
            items = items.fill_null("" if is_variable(items.type) else 0)
        return DictBlock(value_block(idx), value_block(items), n)
    if pa.types.is_null(t):
        return FixedBlock(8, np.zeros(n, np.uint8), n)
    if is_variable(t):
        if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
            a = a.cast(pa.large_binary())
        large = pa.types.is_large_string(a.type) or pa.types.is_large_binary(a.type)
        bufs = a.buffers()
        odt = np.int64 if large else np.int32
        offs = np.frombuffer(bufs[1], dtype=odt, count=n + 1, offset=a.offset * odt().itemsize) \
            if n else np.zeros(1, dtype=odt)
        first, last = int(offs[0]), int(offs[-1])
        data = _u8(bufs[2], first, last - first) if bufs[2] is not None else np.zeros(0, np.uint8)
        # rebased and widened in one pass, into pool memory (a fresh array of a page's
        # offsets faults in every page of it: a tenth of a Spark task's encoding CPU)
        offs = np.subtract(offs, first, out=pool_empty(offs.size, np.int64), dtype=np.int64)
        if a.null_count:
            # null slots may point at bytes: give them length 0
            lens = np.diff(offs)
            lens[~a.is_valid().to_numpy(zero_copy_only=False)] = 0
            if int(lens.sum()) != len(data):
                keep = np.repeat(a.is_valid().to_numpy(zero_copy_only=False), np.diff(offs))
                data = data[keep]
            offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        return VariableBlock(offs, np.ascontiguousarray(data), n, large)
    if pa.types.is_fixed_size_list(t):
        dims = []
        validity = []
        cur = a
        while pa.types.is_fixed_size_list(cur.type):
            d = cur.type.list_size
            dims.append(d)
            cur = _fsl_items(cur)
            # bitmap of this layer's items (rows x cumulative dim), outer layer first
            validity.append(cur.is_valid().to_numpy(zero_copy_only=False)
                            if cur.null_count else None)
        inner = value_block(cur)
        if not isinstance(inner, FixedBlock) or inner.fsl_dims:
            raise UnsupportedFeatureError(f"fixed-size list of {cur.type} (2.1 writer stores "
                                          f"fixed-size lists of fixed-width values)")
        return FixedBlock(inner.bits, inner.data, n, tuple(dims), validity)
    bits = fixed_bits(t)
    if bits is None:
        raise UnsupportedFeatureError(f"writing {t} in Lance 2.1/2.2")
    buf = a.buffers()[1]
    if bits == 1:
        data = copy_bitmap(buf, a.offset, n) if n else np.zeros(0, np.uint8)
        return FixedBlock(1, np.asarray(data, dtype=np.uint8), n)
    if bits % 8:
        raise UnsupportedFeatureError(f"writing {t} ({bits}-bit values) in Lance 2.1/2.2")
    w = bits // 8
    return FixedBlock(bits, _u8(buf, a.offset * w, n * w) if n else np.zeros(0, np.uint8), n)


def _fsl_items(a):
    """Every item slot of a fixed-size list array (null rows' slots included)."""
    d = a.type.list_size
    return a.values.slice(a.offset * d, len(a) * d)


def _inner_fsl_nulls(a) -> bool:
    cur = _fsl_items(a)
    while pa.types.is_fixed_size_list(cur.type):
        if cur.null_count:
            return True
        cur = _fsl_items(cur)
    return False
