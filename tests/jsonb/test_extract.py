"""The value at a JSONPath of every JSONB document: the Cython walk for member/index paths
agrees with the general per-document selection, and malformed documents are refused."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import CorruptFileError
from lancefmt.jsonb.codec import encode_array
from lancefmt.jsonb.extract import ARRAY, FLOAT, INT, MISSING, NULL, OBJECT, STRING, TRUE, extract_path, simple_steps
from lancefmt.jsonb.path import parse_path

DOCS = ['{"x": 7, "y": 10}', '{"x": -11}', '{"y": 0}', '{"x": "10é"}', "null", None, '{"x": null}',
        "[1,2]", '{"x": 10.5}', '{"x": true}', '{"x": false}', '{"x": [1]}', '{"x": {"z": 5}}', "7",
        '"s"', '{"x": 18446744073709551615}', '{"x": -9223372036854775808}', '{"x": 300}',
        '{"x": 70000}', '{"x": NaN}', '{"x": Infinity}', '{"x": 0}', '{"a": [5, 6]}',
        '{"x": {"z": [1, {"w": 2}]}}', '{"": 3, "x": 1}']


def general(docs, path):
    """The reference: decode each document and select (lancefmt.jsonb.path)."""
    from lancefmt.jsonb.extract import _general
    return _general(docs, parse_path(path))


@pytest.mark.parametrize("path", ["x", "$.x", "x.z", "a[0]", "$.a[1]", "a[2]", "$", "x.z[1].w",
                                  "y", '$.""', '$."x"'])
def test_the_walk_agrees_with_decoding(path):
    docs = encode_array(pa.array(DOCS))
    assert simple_steps(path) is not None
    got, want = extract_path(docs, path), general(docs, path)
    np.testing.assert_array_equal(got.kinds, want.kinds)
    np.testing.assert_array_equal(got.ints, want.ints)
    np.testing.assert_array_equal(got.floats, want.floats)
    strings = got.kinds == STRING
    assert got.string_array(strings).to_pylist() == want.string_array(strings).to_pylist()


def test_kinds_and_values():
    docs = encode_array(pa.array(DOCS))
    got = extract_path(docs, "x")
    assert got.kinds[:8].tolist() == [INT, INT, MISSING, STRING, MISSING, MISSING, NULL, MISSING]
    assert got.ints[[0, 1, 16, 17, 18]].tolist() == [7, -11, -2**63, 300, 70000]
    assert got.kinds[15] == FLOAT and got.floats[15] == 18446744073709551615.0  # beyond i64
    assert got.kinds[9] == TRUE and got.kinds[11] == ARRAY and got.kinds[12] == OBJECT
    assert np.isnan(got.floats[19]) and got.floats[20] == np.inf
    assert got.string_array(got.kinds == STRING).to_pylist()[3] == "10é"


def test_other_paths_select_one_document_at_a_time():
    docs = encode_array(pa.array(['{"a": [5, 6]}', '{"a": [7]}', '{"a": 1}']))
    assert simple_steps("$.a[*]") is None
    got = extract_path(docs, "$.a[*]")
    assert got.kinds.tolist() == [ARRAY, INT, INT]  # several values: an array, as pylance
    assert extract_path(docs, "$.a[last]").ints.tolist() == [6, 7, 0]


def test_offsets_and_large_or_small_binary():
    docs = encode_array(pa.array(DOCS)).slice(3, 10)
    got = extract_path(docs, "x")
    assert got.kinds.tolist() == general(docs, "x").kinds.tolist()
    small = pa.array(encode_array(pa.array(['{"x": 1}'])).to_pylist(), pa.binary())
    assert extract_path(small, "x").ints.tolist() == [1]


@pytest.mark.parametrize("cut", [1, 3, 6, 9, 14, 20])
def test_malformed_documents_are_corrupt(cut):
    good = encode_array(pa.array(['{"x": {"y": "abc"}, "z": 1}'])).to_pylist()[0]
    docs = pa.array([good, good[:cut]], pa.large_binary())
    with pytest.raises(CorruptFileError, match="row 1"):
        extract_path(docs, "x.y", "somewhere")


def test_damaged_bytes_never_crash_the_walk():
    """Random flips and cuts of real documents: the walk answers (every offset it follows is
    inside the document) or refuses with CorruptFileError, never reads out of bounds."""
    rng = np.random.default_rng(7)
    docs = encode_array(pa.array(DOCS)).to_pylist()
    docs = [d for d in docs if d]
    for _ in range(3000):
        d = bytearray(docs[int(rng.integers(len(docs)))])
        for _ in range(int(rng.integers(1, 4))):
            d[int(rng.integers(len(d)))] ^= 1 << int(rng.integers(8))
        if rng.random() < 0.3:
            d = d[: int(rng.integers(len(d) + 1))]
        arr = pa.array([bytes(d)], pa.large_binary())
        for path in ("x", "x.z", "a[1]", "$", "x.z[1].w"):
            try:
                got = extract_path(arr, path)
            except CorruptFileError:
                continue
            if got.kinds[0] == STRING:
                assert got.starts[0] + got.lengths[0] <= len(d)
