"""ANDed ranges on one column become one Range term, as pylance plans them (``[x >= 1 && x <
2]``): an index answers both bounds in one look-up instead of intersecting two half-tables."""
import pyarrow as pa

from lancefmt.sql.sargable import All, Any, Equals, Range, Term, sargable

SCHEMA = pa.schema([("x", pa.float64()), ("y", pa.int64()), ("s", pa.string())])


def test_two_bounds_become_one_range():
    t = sargable("x >= 1 AND x < 2", SCHEMA)
    assert t == Term("x", Range(1.0, True, 2.0, False, pa.float64()))
    assert t.describe() == "x >= 1 && x < 2"  # floats as Rust prints them


def test_tighter_bound_wins_and_exclusive_wins_a_tie():
    assert sargable("x > 1 AND x >= 1 AND x <= 5 AND x < 7", SCHEMA) == \
        Term("x", Range(1.0, False, 5.0, True, pa.float64()))
    assert sargable("x BETWEEN 1 AND 5 AND x < 3", SCHEMA) == Term("x", Range(1.0, True, 3.0, False, pa.float64()))


def test_other_terms_and_columns_stay_apart():
    t = sargable("x > 1 AND y = 3 AND x <= 5 AND y > 0", SCHEMA)
    assert t == All((Term("x", Range(1.0, False, 5.0, True, pa.float64())),
                     Term("y", Equals(3, pa.int64())), Term("y", Range(0, False, None, False, pa.int64()))))
    t = sargable("s > 'a' AND s < 'b' OR y = 2", SCHEMA)
    assert isinstance(t, Any) and t.children[0] == Term("s", Range("a", False, "b", False, pa.string()))


def test_an_empty_range_stays_a_range():
    assert sargable("x < 1 AND x > 2", SCHEMA) == Term("x", Range(2.0, False, 1.0, False, pa.float64()))
