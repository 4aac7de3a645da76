"""A filter's index-answerable terms: columns, typed literals, AND/OR/NOT, the rest OTHER."""
import datetime

import pyarrow as pa

from lancefmt.sql.sargable import (OTHER, All, Any, Contains, Equals, IsIn, IsNull, LabelsAll,
                                   LabelsAny, Like, Negate, Range, Term, sargable, terms)

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("cat", pa.string()),
                    ("d", pa.date32()), ("tags", pa.list_(pa.string())),
                    ("st", pa.struct([("a", pa.int32())]))])


def test_comparisons_become_ranges_with_the_column_type():
    assert sargable("id = 5", SCHEMA) == Term("id", Equals(5, pa.int64()))
    assert sargable("5 < id", SCHEMA) == Term("id", Range(5, False, None, False, pa.int64()))
    assert sargable("id <= 9", SCHEMA) == Term("id", Range(None, False, 9, True, pa.int64()))
    assert sargable("id BETWEEN 1 AND 3", SCHEMA) == Term("id", Range(1, True, 3, True, pa.int64()))
    assert sargable("x = 1", SCHEMA) == Term("x", Equals(1.0, pa.float64()))
    assert sargable("d = '2020-01-02'", SCHEMA) == Term("d", Equals(datetime.date(2020, 1, 2), pa.date32()))
    assert sargable("ID = 7", SCHEMA) == Term("id", Equals(7, pa.int64()))  # as the schema spells it


def test_sets_nulls_lists_and_substrings():
    assert sargable("id IN (1, 2, 3, 4)", SCHEMA) == Term("id", IsIn((1, 2, 3, 4), pa.int64()))
    assert sargable("id IS NULL", SCHEMA) == Term("id", IsNull())
    assert sargable("id IS NOT NULL", SCHEMA) == Negate(Term("id", IsNull()))
    assert sargable("array_has_any(tags, ['a', 'b'])", SCHEMA) == Term("tags", LabelsAny(("a", "b"), pa.string()))
    assert sargable("array_has_all(tags, ['a'])", SCHEMA) == Term("tags", LabelsAll(("a",), pa.string()))
    assert sargable("array_contains(tags, 'a')", SCHEMA) == Term("tags", LabelsAny(("a",), pa.string()))
    assert sargable("contains(cat, 'ab')", SCHEMA) == Term("cat", Contains("ab"))
    assert sargable("cat LIKE 'a%'", SCHEMA) == Term("cat", Like("a%"))
    assert sargable("cat LIKE 'abc'", SCHEMA) == Term("cat", Equals("abc", pa.string()))  # as DataFusion
    assert sargable("regexp_like(cat, 'ab')", SCHEMA) == Term("cat", Like("%ab%"))
    assert sargable("st.a = 1", SCHEMA) == Term("st.a", Equals(1, pa.int32()))


def test_boolean_structure_is_kept_and_flattened():
    tree = sargable("cat = 'c' AND (x > 0.5 OR id < 3) AND NOT id = 4", SCHEMA)
    assert isinstance(tree, All) and len(tree.children) == 3
    assert isinstance(tree.children[1], Any) and isinstance(tree.children[2], Negate)
    assert [t.column for t in terms(tree)] == ["cat", "x", "id", "id"]


def test_what_no_index_answers_is_other():
    for text in ["id + 1 = 3", "id = NULL", "cat NOT LIKE 'a%'", "cat ILIKE 'a%'", "_rowid = 3", "id = x",
                 "id = 1.5", "id < 1.5", "NOT (id + 1 = 3)"]:
        assert sargable(text, SCHEMA) is OTHER, text
    tree = sargable("id = 1 AND id + 1 = 3", SCHEMA)
    assert tree == All((Term("id", Equals(1, pa.int64())), OTHER))


def eq(column, v, t=pa.int64()):
    return Term(column, Equals(v, t))


def test_in_lists_are_planned_as_pylance_plans_them():
    # up to three distinct values: an OR chain (DataFusion's rewrite), duplicates dropped
    assert sargable("id IN (1, 2, 3)", SCHEMA) == Any((Any((eq("id", 1), eq("id", 2))), eq("id", 3)))
    assert sargable("id IN (1, 1, 2)", SCHEMA) == Any((eq("id", 1), eq("id", 2)))
    assert sargable("id IN (7)", SCHEMA) == eq("id", 7)
    # NOT IN: NOT pushed inside (De Morgan)
    assert sargable("id NOT IN (1, 2)", SCHEMA) == All((Negate(eq("id", 1)), Negate(eq("id", 2))))
    # a NULL in the list: pylance answers it without an index
    assert sargable("id IN (1, 2, NULL)", SCHEMA) is OTHER
    assert sargable("id IN (1, 2, 3, 4)", SCHEMA).describe() == "id IN [1,2,3,4]"


def test_not_is_pushed_to_the_leaves():
    assert sargable("id != 3", SCHEMA) == Negate(eq("id", 3))
    assert sargable("NOT id > 3", SCHEMA) == Term("id", Range(None, False, 3, True, pa.int64()))
    assert sargable("NOT NOT id = 3", SCHEMA) == eq("id", 3)
    assert sargable("NOT (id = 1 OR cat = 'a')", SCHEMA) == All((Negate(eq("id", 1)),
                                                                 Negate(eq("cat", "a", pa.string()))))
    assert sargable("NOT (id = 1 AND cat = 'a')", SCHEMA) == Any((Negate(eq("id", 1)),
                                                                  Negate(eq("cat", "a", pa.string()))))
    assert sargable("id NOT BETWEEN 1 AND 5", SCHEMA) == Any((
        Term("id", Range(None, False, 1, False, pa.int64())), Term("id", Range(5, False, None, False, pa.int64()))))


def test_or_stays_binary_as_written():
    a, b, c = eq("id", 1), eq("id", 2), eq("id", 3)
    assert sargable("id = 1 OR id = 2 OR id = 3", SCHEMA) == Any((Any((a, b)), c))
    assert sargable("id = 1 OR (id = 2 OR id = 3)", SCHEMA) == Any((a, Any((b, c))))


def test_float_zero_literals_mean_both_zeros():
    f = pa.float64()
    assert sargable("x = 0", SCHEMA) == Term("x", IsIn((-0.0, 0.0), f))
    for text, want in [("x < 0", Range(None, False, -0.0, False, f)), ("x >= 0", Range(-0.0, True, None, False, f)),
                       ("x <= -0.0", Range(None, False, 0.0, True, f)), ("x > -0.0", Range(0.0, False, None, False, f)),
                       ("x BETWEEN 0 AND 0", Range(-0.0, True, 0.0, True, f))]:
        got = sargable(text, SCHEMA).query
        assert got == want and [str(v) for v in (got.lower, got.upper)] == [str(v) for v in (want.lower, want.upper)], text
    assert sargable("x IN (1, 0, 2, 3)", SCHEMA).query.values == (1.0, 0.0, 2.0, 3.0, -0.0)
    assert sargable("x IN (1, 0, 2, 3)", SCHEMA).describe() == "x IN [1,0,2,3,-0]"
    # a tighter bound in total order: x > 0 excludes -0.0, x >= 0 keeps it
    assert str(sargable("x >= 0 AND x > 0", SCHEMA).query.lower) == "0.0"
    assert sargable("x = cast('NaN' as double)", SCHEMA) is OTHER  # NaN is left to the scan


def test_values_print_as_pylance_prints_them():
    schema = pa.schema([("b", pa.bool_()), ("bin", pa.binary()), ("ts", pa.timestamp("us")),
                        ("dec", pa.decimal128(10, 2)), ("f", pa.float32()), ("x", pa.float64())])
    assert sargable("b", schema).describe() == "b = true"
    assert sargable("b IS TRUE", schema).describe() == "b = true"
    assert sargable("bin = X'30313233343536373839616263646566'", schema).describe() == \
        "bin = 30313233343536373839..."
    assert sargable("bin = X'0001'", schema).describe() == "bin = 0001"
    assert sargable("ts > timestamp '2020-01-01 00:00:00'", schema).describe() == "ts > 1577836800000000"
    assert sargable("dec > 1", schema).describe() == "dec > Some(100),10,2"
    assert sargable("f = 0.1", schema).describe() == "f = 0.1"
    assert sargable("x > 1e20", schema).describe() == "x > 100000000000000000000"
    assert sargable("x < -0.5", schema).describe() == "x < -0.5"
