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
    assert sargable("id IN (1, 2, NULL)", SCHEMA) == Term("id", IsIn((1, 2), pa.int64()))
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
