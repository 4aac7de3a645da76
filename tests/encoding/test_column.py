import pyarrow as pa
import pytest

from lancefmt.encoding.column import ColumnInfo, PageInfo, PageSource
from lancefmt.errors import CorruptFileError


def _page(col, i, n, start, offsets=(), sizes=()):
    return PageInfo(col, i, n, start, list(offsets), list(sizes), "", b"")


def test_page_range():
    pages = [_page(0, 0, 10, 0), _page(0, 1, 0, 10), _page(0, 2, 5, 10), _page(0, 3, 5, 15)]
    col = ColumnInfo(0, pages)
    assert col.num_rows == 20
    assert list(col.page_range(0, 20)) == [0, 1, 2, 3]  # zero-row pages inside are harmless
    assert list(col.page_range(9, 11)) == [0, 1, 2]
    assert list(col.page_range(10, 15)) == [2]
    assert list(col.page_range(19, 20)) == [3]
    assert list(col.page_range(5, 5)) == []
    assert list(ColumnInfo(1, []).page_range(0, 0)) == []


def test_page_source_fetches_once_and_caches():
    calls = []

    def fetch(ranges):
        calls.append(list(ranges))
        return [pa.py_buffer(bytes([o % 256]) * s) for o, s in ranges]

    pages = [_page(0, 0, 1, 0, [0, 64], [3, 4]), _page(0, 1, 1, 1, [128], [2])]
    src = PageSource([ColumnInfo(0, pages)], fetch, "f")
    src.prefetch(pages)
    src.prefetch(pages)
    assert calls == [[(0, 3), (64, 4), (128, 2)]]
    assert [b.to_pybytes() for b in src.buffers(pages[0])] == [b"\x00" * 3, b"@" * 4]
    decoded = src.decoded(pages[1], lambda p, bufs: ("decoded", len(bufs)))
    assert src.decoded(pages[1], lambda p, bufs: 1 / 0) == decoded
    assert src.is_decoded(pages[1]) and not src.is_decoded(pages[0])
    src.evict_before(0, 2)
    assert not src.is_decoded(pages[1])
    with pytest.raises(CorruptFileError):
        src.column(5)
