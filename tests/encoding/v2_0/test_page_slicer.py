import numpy as np
import pyarrow as pa
import pytest

from lancefmt._proto import encodings_v2_0_pb2 as pb
from lancefmt.encoding.v2_0 import page_slicer
from lancefmt.encoding.v2_0.page_decoder import PageDecoder
from lancefmt.encoding.v2_0.page_encoder import encode_page

ARRAYS = [
    pa.array([None if i % 3 == 0 else i for i in range(100)], pa.int32()),
    pa.array([None if i % 5 == 0 else bool(i % 2) for i in range(100)]),
    pa.FixedSizeListArray.from_arrays(
        pa.array([None if i % 7 == 0 else float(i) for i in range(300)], pa.float32()), 3,
        mask=pa.array([i % 4 == 0 for i in range(100)])),
    pa.nulls(100, pa.int64()),
    pa.array(np.arange(100, dtype=np.float64)),
]


@pytest.mark.parametrize("k", range(len(ARRAYS)))
@pytest.mark.parametrize("rows", [[0], [1, 2, 3], [7, 50, 51, 99], list(range(0, 100, 9))])
@pytest.mark.parametrize("gap", [0, 1024])
def test_sliced_page_equals_take(k, rows, gap, monkeypatch):
    monkeypatch.setattr(page_slicer, "SPAN_GAP", gap)  # one span per run, or all rows in one
    arr = ARRAYS[k]
    page = encode_page(arr)
    layout = page_slicer.row_layout(page.encoding)
    assert layout is not None
    rows = np.array(rows)
    bufs = [b if isinstance(b, pa.Buffer) else pa.py_buffer(b) for b in page.buffers]
    offsets = np.cumsum([0] + [b.size for b in bufs])[:-1]
    file = pa.py_buffer(b"".join(b.to_pybytes() for b in bufs))
    new = [None] * len(bufs)
    for gather in page_slicer.gather_plan(offsets, [b.size for b in bufs], layout, rows):
        pieces = [file.slice(o, s) for o, s in gather.ranges]
        new[gather.index] = gather.finish(pieces)
    got = PageDecoder(new, None, "p").decode(page.encoding, rows.size, arr.type)
    assert got.equals(arr.take(pa.array(rows)))
    # the same rows gathered straight from the (mapped) file bytes
    direct = [None] * len(bufs)
    for gather in page_slicer.gather_plan(offsets, [b.size for b in bufs], layout, rows):
        direct[gather.index] = gather.gather_mapped(file)
    got = PageDecoder(direct, None, "p").decode(page.encoding, rows.size, arr.type)
    assert got.equals(arr.take(pa.array(rows)))


def test_gather_past_the_mapped_file_is_corrupt():
    from lancefmt.errors import CorruptFileError

    gather = page_slicer.BufferGather(0, 64, 40, 80, np.array([3, 9]), "f.lance")
    with pytest.raises(CorruptFileError, match="f.lance"):
        gather.gather_mapped(pa.py_buffer(bytes(100)))


def test_layouts():
    assert page_slicer.row_layout(encode_page(ARRAYS[2]).encoding) == [(0, 1), (1, 3), (2, 96)]
    assert page_slicer.row_layout(encode_page(pa.array(["a"])).encoding) is None
    compressed = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=8, compression=pb.Compression(
        scheme="zstd")))
    assert page_slicer.row_layout(compressed) is None
    assert page_slicer.row_layout(encode_page(pa.nulls(3, pa.int8())).encoding) == []


def test_buffer_shorter_than_rows_is_corrupt():
    from lancefmt.errors import CorruptFileError

    with pytest.raises(CorruptFileError):
        page_slicer.BufferGather(0, 64, 0, 80, np.array([3, 10]), "f.lance")
