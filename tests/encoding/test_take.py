import numpy as np
import pyarrow as pa

from lancefmt.encoding.take import span_positions, spans, take_chunks


def test_spans_and_positions():
    rows = np.array([1, 2, 3, 5000, 5001, 9000])
    starts, stops = spans(rows, gap=10)
    assert starts.tolist() == [1, 5000, 9000] and stops.tolist() == [4, 5002, 9001]
    assert span_positions(starts, stops, rows).tolist() == [0, 1, 2, 3, 4, 5]
    starts, stops = spans(rows, gap=5000)
    assert starts.tolist() == [1] and stops.tolist() == [9001]


def test_take_chunks_plain_and_nested_fsl():
    t = pa.list_(pa.list_(pa.int8(), 1), 2)
    base = pa.FixedSizeListArray.from_arrays(
        pa.FixedSizeListArray.from_arrays(pa.array(np.arange(10, dtype=np.int8)), 1), 2)
    chunks = [base.slice(1, 2), base.slice(3)]
    got = take_chunks(chunks, t, [3, 0, 3])
    assert got.to_pylist() == [[[8], [9]], [[2], [3]], [[8], [9]]]
    plain = [pa.array([1, 2]), pa.array([3])]
    assert take_chunks(plain, pa.int64(), [2, 0]).to_pylist() == [3, 1]


def test_take_chunks_dictionaries_with_null_items():
    t = pa.dictionary(pa.int32(), pa.string())
    a = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["x", None]))
    b = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(["y", None]))
    got = take_chunks([a, b], t, [3, 1, 2, 0])
    assert got.type == t
    assert got.cast(pa.string()).to_pylist() == ["y", None, None, "x"]
    st = pa.struct([("d", t)])
    sa = pa.StructArray.from_arrays([a], fields=list(st))
    sb = pa.StructArray.from_arrays([b], fields=list(st))
    got = take_chunks([sa, sb], st, [3, 0, 1])
    assert got.cast(pa.struct([("d", pa.string())])).to_pylist() == [{"d": "y"}, {"d": "x"}, {"d": None}]
