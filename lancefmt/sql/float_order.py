"""How pylance compares floats: IEEE 754 total order, with a zero literal made to mean both zeros.

DataFusion evaluates comparisons with arrow-rs' kernels, which order floats by their total order
(``-NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN``) and test equality on the bits: ``x > 0``
keeps the NaN rows, ``x < 5`` the negative-NaN ones, ``x = y`` is false for ``-0.0`` and ``0.0``.
Lance's planner then rewrites a zero *literal* so that a comparison with it treats both zeros as
one number (lance#6236): ``x < 0`` and ``x >= 0`` compare with ``-0.0``, ``x <= 0`` and
``x > 0`` with ``0.0``, ``x = 0`` is ``x IN (-0.0, 0.0)`` and an IN list holding a zero gains the
other one. Arrow C++ (pyarrow) compares floats by IEEE rules instead, so lancefmt's filters map a
float to an integer *order key* (its bits, with the magnitude bits of negative numbers flipped:
an involution that sorts as the total order) and compare keys; index searches use the same keys.
"""
from __future__ import annotations

import math
import struct
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._float_keys import keys16, keys32, keys64

_INT = {16: np.int16, 32: np.int32, 64: np.int64}
_ARROW_INT = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}
_PACK = {16: ("<e", "<h"), 32: ("<f", "<i"), 64: ("<d", "<q")}


def is_float(t: pa.DataType | None) -> bool:
    return t is not None and pa.types.is_floating(t)


def key_type(t: pa.DataType) -> pa.DataType:
    """The Arrow integer type of ``t``'s order keys."""
    return _ARROW_INT[t.bit_width]


_KERNELS = {2: keys16, 4: keys32, 8: keys64}


def bits_to_keys(bits: np.ndarray) -> np.ndarray:
    """Order keys of floats given as their signed-integer bits (a new array, one pass)."""
    bits = np.ascontiguousarray(bits)
    out = np.empty(bits.shape, dtype=bits.dtype)
    if bits.ndim == 1:
        _KERNELS[bits.dtype.itemsize](bits, out)
        return out
    shift = bits.dtype.itemsize * 8 - 1
    return bits ^ ((bits >> shift) & bits.dtype.type(np.iinfo(bits.dtype).max))


def keys_to_bits(keys: np.ndarray) -> np.ndarray:
    """Inverse of :func:`bits_to_keys` (the map is its own inverse)."""
    return bits_to_keys(keys)


def array_keys(values: pa.Array) -> np.ndarray:
    """Order keys of a float array (a null slot's key is whatever its bytes say)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    width = values.type.bit_width
    buf = values.buffers()[1]
    if buf is None or not len(values):
        return np.zeros(len(values), dtype=_INT[width])
    bits = np.frombuffer(buf, dtype=_INT[width], count=values.offset + len(values))[values.offset:]
    return bits_to_keys(bits)


def scalar_key(value: float, t: pa.DataType) -> int:
    """The order key of one float of type ``t`` (rounded to ``t`` first)."""
    fmt, ifmt = _PACK[t.bit_width]
    (bits,) = struct.unpack(ifmt, struct.pack(fmt, value))
    return int(bits_to_keys(np.array([bits], dtype=_INT[t.bit_width]))[0])


def key_value(key: int, t: pa.DataType) -> float:
    """The float whose order key is ``key``."""
    fmt, ifmt = _PACK[t.bit_width]
    bits = int(keys_to_bits(np.array([key], dtype=_INT[t.bit_width]))[0])
    return struct.unpack(fmt, struct.pack(ifmt, bits))[0]


def is_zero(value) -> bool:
    return isinstance(value, float) and value == 0.0


def zero_for(op: str) -> float:
    """The zero a comparison ``column <op> 0`` uses after Lance's rewrite: ``-0.0`` for ``<``
    and ``>=`` (neither keeps a zero / both keep both), ``0.0`` for ``<=`` and ``>``."""
    return -0.0 if op in ("lt", "gte") else 0.0


def with_both_zeros(values: list) -> list:
    """An IN list as Lance rewrites it: a zero (either sign) present adds the missing one at
    the end."""
    zeros = [v for v in values if is_zero(v)]
    if not zeros:
        return list(values)
    out = list(values)
    have = {math.copysign(1.0, v) for v in zeros}
    for z in (-0.0, 0.0):
        if math.copysign(1.0, z) not in have:
            out.append(z)
    return out


def compare_keys(keys: np.ndarray, op: str, key: int) -> np.ndarray:
    """``keys <op> key`` as a boolean mask."""
    if op == "eq":
        return keys == key
    if op == "lt":
        return keys < key
    if op == "lte":
        return keys <= key
    if op == "gt":
        return keys > key
    if op == "gte":
        return keys >= key
    return keys != key


# -- the order key as a compute function (filters stay pyarrow Expressions) ------------------
_REGISTERED: set = set()
_LOCK = threading.Lock()


def _udf(width: int):
    out_type = _ARROW_INT[width]

    def fn(ctx, values):
        if isinstance(values, pa.Scalar):
            if not values.is_valid:
                return pa.scalar(None, out_type)
            return pa.scalar(scalar_key(values.as_py(), values.type), out_type)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        n, off = len(values), values.offset
        buf = values.buffers()[1]
        if buf is None or not n:
            return pa.nulls(n, out_type) if values.null_count == n else pa.array(np.zeros(n, _INT[width]), out_type)
        bits = np.frombuffer(buf, dtype=_INT[width], count=off + n)[off:]
        if not values.null_count:
            return pa.Array.from_buffers(out_type, n, [None, pa.py_buffer(bits_to_keys(bits))], 0)
        # keys placed at the input's offset (the slots before it are never touched), so the
        # input's validity bitmap serves unchanged
        keys = np.empty(off + n, dtype=_INT[width])
        _KERNELS[width // 8](bits, keys[off:])
        return pa.Array.from_buffers(out_type, n, [values.buffers()[0], pa.py_buffer(keys)],
                                     values.null_count, off)
    return fn


def order_key_function(t: pa.DataType) -> str:
    """The registered compute function mapping floats of type ``t`` to their order keys."""
    width = t.bit_width
    name = f"lancefmt_float_order_key_{width}"
    with _LOCK:
        if name not in _REGISTERED:
            in_type = {16: pa.float16(), 32: pa.float32(), 64: pa.float64()}[width]
            pc.register_scalar_function(
                _udf(width), name,
                {"summary": "float order key", "description": "IEEE 754 total-order key (lancefmt SQL)"},
                {"values": in_type}, _ARROW_INT[width])
            _REGISTERED.add(name)
    return name


def order_key_expr(expr: pc.Expression, t: pa.DataType) -> pc.Expression:
    return pc.Expression._call(order_key_function(t), [expr])


def common_float(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The type DataFusion compares a float with another number in: float64 when either side
    is float64, else float32 when either is float32 (an integer goes to the float's type)."""
    types = (a, b)
    if any(pa.types.is_float64(t) for t in types):
        return pa.float64()
    if any(pa.types.is_float32(t) for t in types):
        return pa.float32()
    return pa.float16()


# -- printing (how pylance's plans show a float) -----------------------------------------------
def rust_float(value: float, t: pa.DataType | None = None) -> str:
    """``value`` as Rust's ``Display`` prints an f64/f32: the shortest digits that round-trip
    in the value's own width, never an exponent (``1e20`` -> ``100000000000000000000``), ``-0``,
    ``NaN``, ``inf``."""
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if t is not None and pa.types.is_float32(t):
        text = np.format_float_positional(np.float32(value), unique=True, trim="-")
    elif t is not None and pa.types.is_float16(t):
        text = np.format_float_positional(np.float16(value), unique=True, trim="-")
    else:
        text = np.format_float_positional(np.float64(value), unique=True, trim="-")
    return text
