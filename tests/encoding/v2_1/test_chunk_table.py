"""The mini-block chunk table parsed in one Cython pass equals its numpy definition."""
import numpy as np
import pytest

from lancefmt.encoding.v2_1._chunks import chunk_table


def _twin(words, num_items):
    """The chunk table as the format defines it, written with numpy."""
    words = words.astype(np.int64)
    counts = np.left_shift(np.int64(1), words & 0xF)
    sizes = ((words >> 4) + 1) * 8
    if words.size:
        counts[-1] = num_items - counts[:-1].sum()
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return counts, offsets, sizes, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


@pytest.mark.parametrize("wide", [False, True])
def test_matches_the_numpy_definition(wide):
    rng = np.random.default_rng(7)
    logs = rng.integers(0, 13, 300)
    size_words = rng.integers(0, 1 << (8 if not wide else 20), 300)
    words = (logs | (size_words << 4)).astype("<u4" if wide else "<u2")
    num_items = int((1 << logs[:-1]).sum()) + 17
    got = chunk_table(words.view(np.uint8), wide, num_items, 1 << 40)
    for a, b in zip(got, _twin(words, num_items)):
        assert a.dtype == np.int64 and np.array_equal(a, b)


def test_an_empty_page_has_no_chunks():
    counts, offsets, sizes, starts = chunk_table(np.zeros(0, np.uint8), False, 0, 0)
    assert counts.size == sizes.size == 0 and offsets.tolist() == [0] and starts.tolist() == [0]


@pytest.mark.parametrize("meta, wide, items, size, message", [
    (np.zeros(3, np.uint8), False, 5, 100, "chunk metadata of 3 bytes"),
    (np.zeros(0, np.uint8), False, 5, 100, "5 items but no chunks"),
    (np.array([10, 0, 10, 0], np.uint8), False, 1_000, 100, "more than the page's 1000 items"),
    (np.array([0, 1, 0, 0], np.uint8), False, 3, 100, "chunks of 144 bytes in a 100-byte"),
])
def test_bad_tables_are_refused(meta, wide, items, size, message):
    with pytest.raises(ValueError, match=message):
        chunk_table(meta, wide, items, size)
