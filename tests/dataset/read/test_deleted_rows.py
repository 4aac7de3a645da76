"""Deleted rows dropped from a window's columns: the byte gather equals Arrow's take."""
import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest

from lancefmt.dataset.read._keep_rows import keep_fixed
from lancefmt.dataset.read.deleted_rows import gather_width, keep_rows

N = 1_000


def _columns():
    rng = np.random.default_rng(3)
    nulls = rng.random(N) < 0.1
    return [
        pa.array(rng.integers(-100, 100, N, dtype=np.int8)),
        pa.array(rng.integers(0, 60_000, N, dtype=np.uint16)),
        pa.array(rng.integers(-2**31, 2**31 - 1, N, dtype=np.int32)),
        pa.array(rng.integers(-2**62, 2**62, N, dtype=np.int64)),
        pa.array(rng.random(N)),
        pa.array(rng.random(N).astype(np.float32)),
        pa.array([datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i) for i in range(N)],
                 pa.timestamp("us")),
        pa.array([datetime.date(2026, 1, 1)] * N, pa.date32()),
        pa.array([decimal.Decimal(i) / 100 for i in range(N)], pa.decimal128(12, 2)),
        pa.array(rng.integers(0, 9, N), pa.int64(), mask=nulls),   # nulls: Arrow's take
        pa.array([f"s{i}" for i in range(N)]),                       # variable: Arrow's take
        pa.array([True, False] * (N // 2)),                           # bits: Arrow's take
    ]


@pytest.mark.parametrize("first", [0, 500])
def test_gathered_columns_equal_arrow_take(first):
    rng = np.random.default_rng(4)
    keep = np.flatnonzero(rng.random(N) > 0.3).astype(np.uint32) + np.uint32(first)
    columns = _columns()
    # a window is a slice of the decoded page: offsets must be honoured
    sliced = [c.slice(10, N - 10) for c in columns]
    kept = keep[(keep >= first + 10) & (keep < first + N - 10)]
    for arrays, start in ((columns, first), (sliced, first + 10)):
        widths = [gather_width(a.type) for a in arrays]
        got = keep_rows(arrays, widths, kept if start != first else keep, start)
        ids = (kept if start != first else keep).astype(np.int64) - start
        for a, g in zip(arrays, got):
            assert g.equals(a.take(pa.array(ids))), a.type


def test_widths_are_known_only_for_plain_fixed_width_types():
    assert [gather_width(t) for t in (pa.int8(), pa.float64(), pa.timestamp("ms"),
                                      pa.decimal128(10, 2))] == [1, 8, 8, 16]
    assert [gather_width(t) for t in (pa.bool_(), pa.string(), pa.list_(pa.int32(), 2),
                                      pa.dictionary(pa.int32(), pa.string()),
                                      pa.json_(pa.utf8()))] == [0] * 5


def test_the_kernel_refuses_rows_outside_the_values_or_out_of_order():
    values = np.arange(10, dtype=np.int64).view(np.uint8)
    with pytest.raises(ValueError, match="outside"):
        keep_fixed(values, 8, np.array([3, 10], np.uint32), 0)
    with pytest.raises(ValueError, match="outside"):
        keep_fixed(values, 8, np.array([4], np.uint32), 5)
    with pytest.raises(ValueError, match="do not increase"):
        keep_fixed(values, 8, np.array([1, 5, 5], np.uint32), 0)
    assert keep_fixed(values, 8, np.array([], np.uint32), 0).size == 0
    assert keep_fixed(values, 8, np.array([12, 14], np.uint32), 5).view(np.int64).tolist() == [7, 9]
