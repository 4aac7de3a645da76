"""Index terms bound into a shape's extraction equal the text's own extraction, for every
filter: shapes that bind, shapes that must not (merged bounds, duplicates, out-of-range values,
floats, strings, negative numbers), and texts of a bound shape whose values must not bind."""
import pyarrow as pa
import pytest
from call_count import CallCounter

from lancefmt.sql.sargable import sargable
from lancefmt.sql.sargable_shapes import shaped_sargable

SCHEMA = pa.schema([("id", pa.int64()), ("u", pa.uint64()), ("i32", pa.int32()), ("i8", pa.int8()),
                    ("x", pa.float64()), ("s", pa.string()), ("b", pa.bool_()),
                    ("d", pa.date32()), ("tags", pa.list_(pa.int64()))])

SHAPES = [
    "id = {0}", "{0} = id", "id != {0}", "id < {0}", "id >= {0}", "{0} > id",
    "id BETWEEN {0} AND {1}", "id NOT BETWEEN {0} AND {1}", "NOT id > {0}",
    "id >= {0} AND id < {1}", "id > {0} AND id > {1}", "id >= {0} AND id <= {1} AND id < {2}",
    "id IN ({0}, {1})", "id IN ({0}, {1}, {2})", "id IN ({0}, {1}, {2}, {3})",
    "id NOT IN ({0}, {1}, {2}, {3})", "id = {0} OR u = {1}", "(id = {0} AND x > 0.5) OR i32 = {1}",
    "u = {0}", "u IN ({0}, {1}, {2}, {3})", "i32 = {0}", "i32 BETWEEN {0} AND {1}", "i8 = {0}",
    "x = {0}", "x > {0}", "s = '{0}'", "id = {0} AND s = '{1}'", "id = -{0}", "id = {0} + 1",
    "array_has_any(tags, [{0}, {1}])", "id = {0} AND b", "id IS NULL OR id = {0}",
    "id = {0} AND d > DATE '2020-01-01'", "id IN ({0}, NULL, {1}, {2}, {3})",
]
VALUES = [["5", "17", "9", "300"], ["5", "5", "9", "300"], ["0", "1", "2", "3"],
          ["007", "1", "2", "3"], ["1.5", "2", "3", "4"], ["128", "40000", "3000000000", "4"],
          ["9223372036854775807", "9223372036854775808", "18446744073709551616", "1"],
          ["9876500000", "9876500001", "2", "3"], ["300", "200", "100", "50"]]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_bound_shape_is_the_texts_own_extraction(shape):
    for vals in VALUES:
        text = shape.format(*vals)
        try:
            want = sargable(text, SCHEMA)
        except Exception as e:  # the same error either way
            with pytest.raises(type(e)):
                shaped_sargable(text, SCHEMA)
            continue
        assert shaped_sargable(text, SCHEMA) == want, text
        assert shaped_sargable(text, SCHEMA) == want, text  # the shape's second text


def test_a_new_value_of_a_known_shape_is_not_extracted_again():
    shaped_sargable("id BETWEEN 10 AND 20", SCHEMA)
    with CallCounter() as calls:
        got = shaped_sargable("id BETWEEN 1000 AND 2000", SCHEMA)
    assert got == sargable("id BETWEEN 1000 AND 2000", SCHEMA)
    assert calls.matching("sargable.py", "sargable") == 0
    assert calls.matching("translate.py") == 0
