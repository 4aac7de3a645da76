"""Float comparisons in filters: IEEE total order with a zero literal meaning both zeros (what
pylance's DataFusion and Lance's planner do), through the order-key compute function."""
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancefmt.sql import parse_filter
from lancefmt.sql.float_order import (array_keys, key_value, order_key_function, rust_float,
                                      scalar_key, with_both_zeros)

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
VALUES = [1.0, NEG_NAN, float("inf"), float("-inf"), 2.0, float("nan"), -0.0, 0.0, None, -1.5]


def total(v: float) -> int:
    """A reference for the total order, written apart from the module under test."""
    bits = struct.unpack("<q", struct.pack("<d", v))[0]
    return bits ^ ((bits >> 63) & (2**63 - 1))


def kept(text: str, t=pa.float64()) -> list:
    tbl = pa.table({"x": pa.array(VALUES, t), "i": list(range(len(VALUES)))})
    return tbl.filter(parse_filter(text, tbl.schema))["i"].to_pylist()


def reference(op: str, v: float) -> list:
    if v == 0.0:
        v = -0.0 if op in ("<", ">=") else 0.0
    out = []
    for i, x in enumerate(VALUES):
        if x is None:
            continue
        a, b = total(x), total(v)
        hit = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
               "=": (x == v) if v == 0.0 else a == b}[op]
        if hit:
            out.append(i)
    return out


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "="])
@pytest.mark.parametrize("v", [0.0, -0.0, 1.0, -1.5, 5.0, float("inf"), float("-inf")])
def test_comparisons_follow_total_order(op, v):
    assert kept(f"x {op} cast('{v}' as double)") == reference(op, v)


def test_nan_and_zero_rows_as_pylance_keeps_them():
    assert kept("x > 0") == [0, 2, 4, 5]          # NaN is above every number
    assert kept("x < 5") == [0, 1, 3, 4, 6, 7, 9]  # negative NaN below; both zeros
    assert kept("x = 0") == [6, 7]
    assert kept("x IN (0, 1)") == [0, 6, 7]
    assert kept("x NOT IN (0, 1)") == [1, 2, 3, 4, 5, 9]
    assert kept("x BETWEEN -1 AND 0") == [6, 7]
    assert kept("x = cast('NaN' as double)") == [5]
    assert kept("x = x") == [0, 1, 2, 3, 4, 5, 6, 7, 9]  # NaN equals itself (bitwise)
    assert kept("x > 0", pa.float32()) == [0, 2, 4, 5]


def test_order_keys_sort_as_total_order_and_invert():
    vals = [v for v in VALUES if v is not None]
    keys = array_keys(pa.array(vals, pa.float64()))
    assert sorted(range(len(vals)), key=lambda i: keys[i]) == sorted(range(len(vals)), key=lambda i: total(vals[i]))
    for v in vals:
        back = key_value(scalar_key(v, pa.float64()), pa.float64())
        assert struct.pack("<d", back) == struct.pack("<d", v)
    assert scalar_key(0.1, pa.float32()) == int(array_keys(pa.array([0.1], pa.float32()))[0])


def test_the_compute_function_keeps_nulls_and_offsets():
    arr = pa.array(VALUES, pa.float64()).slice(3, 6)
    got = pc.call_function(order_key_function(pa.float64()), [arr])
    assert got.type == pa.int64() and got.null_count == arr.null_count
    want = [None if v is None else total(v) for v in arr.to_pylist()]
    assert got.to_pylist() == want
    assert pc.call_function(order_key_function(pa.float32()), [pa.array([None, 1.0], pa.float32())]).to_pylist() == \
        [None, int(array_keys(pa.array([1.0], pa.float32()))[0])]


def test_in_lists_gain_the_other_zero_and_floats_print_as_rust():
    assert [str(v) for v in with_both_zeros([1.0, 0.0, 2.0])] == ["1.0", "0.0", "2.0", "-0.0"]
    assert with_both_zeros([1.0]) == [1.0]
    assert [rust_float(v) for v in (0.0, -0.0, 1.0, 1e20, 1e-7, float("nan"), float("-inf"))] == \
        ["0", "-0", "1", "100000000000000000000", "0.0000001", "NaN", "-inf"]
    assert rust_float(np.float32(0.1).item(), pa.float32()) == "0.1"
