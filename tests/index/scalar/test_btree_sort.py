"""The BTREE build's stable sort of integer keys (packed key/position pairs when they fit in
64 bits) gives numpy's stable argsort, for every integer width, spans that fit and spans that
do not, ties included."""
import numpy as np
import pytest

from lancefmt.index.scalar.btree import stable_order


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32,
                                   np.uint64])
def test_stable_order_is_numpys_stable_argsort(dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    for lo, hi in ((info.min, info.max), (0, 5), (info.min, info.min + 3), (info.max - 10, info.max)):
        keys = rng.integers(lo, hi, 5000, dtype=dtype, endpoint=True)
        assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))
    assert stable_order(np.array([7], dtype)).tolist() == [0]
    assert stable_order(np.array([], dtype)).tolist() == []
