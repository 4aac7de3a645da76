"""Filters parsed once per shape (``lancefmt.sql.templates``): the tree of every text equals
sqlglot's own parse of it, whether its literals were put into a shared parse or the text was
parsed directly; a new value of a shape already seen costs no parse."""
import pytest
import sqlglot
from call_count import CallCounter

from lancefmt.sql import templates
from lancefmt.sql.translate import LanceSpark, _parse_tree

TEXTS = [
    "id = 5", "id = 7", "id = -0.25", "id IN (1, 2.5, -3)", "id IN (4, 5.5, -6)",
    "cat = 'c7'", "cat = ''", "x BETWEEN 1 AND 2", "x NOT BETWEEN 3 AND 4.5",
    "c7 = 5 AND NOT (y > 2.25 OR z LIKE 'ab%')", "x[0] = 3", "a.b = 1",
    "CAST(x AS DECIMAL(10, 2)) > 1.5", "array_has_any(tags, ['a', 'b'])", "contains(s, 'abc')",
    # literals a word gives meaning to, or a tokenizer reads differently: kept in the shape
    "d = DATE '2020-01-01'", "t > TIMESTAMP '2020-01-01 10:00:00'", "s = 'a''b'", "s = 'a\\'b'",
    "x = 1e5", "x = 1.", "x IS NULL", "b = X'AB'",
    # user literals that look like placeholders
    "x = 98765000001", "x = 9876500000", "s = '\u00a70\u00a7'",
    "d = DATE '\u00a70\u00a7' AND x = 5", "n = 9876500000 AND s = '\u00a70\u00a7' AND m = 3",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_shared_parse_is_the_texts_own(text):
    _parse_tree.cache_clear()
    got = _parse_tree(text)
    want = sqlglot.parse_one(text, read=LanceSpark)
    assert got == want and got.sql() == want.sql()


def test_literals_a_word_reads_stay_in_the_shape():
    assert templates.shape_of("d = DATE '2020-01-01'") is None
    assert templates.shape_of("x IS NULL") is None
    shape, values = templates.shape_of("id IN (1, 'a') AND x BETWEEN 2 AND 3")
    assert [v for _, v in values] == ["1", "a", "2", "3"]
    assert shape == "id IN (9876500000, '\u00a71\u00a7') AND x BETWEEN 9876500002 AND 9876500003"


def test_a_new_value_of_a_known_shape_is_not_parsed():
    _parse_tree("id IN (11, 12, 13) AND cat = 'q'")
    with CallCounter() as calls:
        tree = _parse_tree("id IN (21, 22, 23) AND cat = 'r'")
    assert calls.matching("parser.py") == 0 and calls.matching("tokenizer_core.py") == 0
    assert tree == sqlglot.parse_one("id IN (21, 22, 23) AND cat = 'r'", read=LanceSpark)


def test_a_bad_filter_raises_the_texts_own_error():
    with pytest.raises(sqlglot.errors.ParseError):
        _parse_tree("id = = 5")
