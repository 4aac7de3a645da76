import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lancefmt.encoding._validity import copy_bitmap

from encoding_reference import bits


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=0, max_size=100), st.integers(0, 40), st.integers(0, 100))
def test_copy_bitmap_matches_reference(values, offset, n):
    n = min(n, max(0, len(values) - offset))
    src = np.packbits(np.array(values, dtype=bool), bitorder="little") if values else np.zeros(0, np.uint8)
    out = copy_bitmap(src, offset, n)
    assert len(out) == (n + 7) // 8
    assert bits(out, n) == values[offset:offset + n]
    if n % 8:
        assert out[-1] >> (n % 8) == 0  # bits past the end are cleared


def test_copy_bitmap_refuses_short_source():
    with pytest.raises(ValueError):
        copy_bitmap(b"\xff", 4, 8)
