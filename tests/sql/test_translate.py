"""SQL filter strings evaluate like the equivalent pylance filters."""
import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

from lancefmt.errors import InvalidArgumentError
from lancefmt.sql import parse_filter, referenced_columns, to_expression

TABLE = pa.table({
    "id": pa.array(range(20), pa.int64()),
    "x": pa.array([i * 0.5 for i in range(20)]),
    "name": pa.array([None if i % 5 == 0 else f"n{i}" for i in range(20)]),
    "flag": pa.array([i % 3 == 0 for i in range(20)]),
    "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(20)]),
    "ts": pa.array([dt.datetime(2024, 1, 1, 0, 0, i) for i in range(20)], pa.timestamp("us")),
    "st": pa.array([{"a": i, "b": str(i)} for i in range(20)]),
    "weird name": pa.array(range(20)),
})

CASES = [
    "id < 10 AND name IS NOT NULL",
    "id = 3 OR id == 4",
    "NOT (id >= 5)",
    "id != 7 AND id <> 8",
    "name IS NULL",
    "id IN (1, 2, 3)",
    "id NOT IN (1, 2, 3)",
    "id BETWEEN 3 AND 6",
    "id NOT BETWEEN 3 AND 6",
    "name LIKE 'n1%'",
    "name NOT LIKE '%1'",
    "name ILIKE 'N1_'",
    "x > 2.5",
    "x >= 1e1",
    "id * 2 > 20",
    "id + 1 = 5",
    "-id < -15",
    "id % 3 = 0",
    "flag",
    "flag IS TRUE",
    "flag = false",
    "day > DATE '2024-01-10'",
    "ts >= TIMESTAMP '2024-01-01 00:00:10'",
    "st.a > 15",
    "`weird name` < 2",
    "name = 'n11'",
    "lower(name) = 'n12'",
    "starts_with(name, 'n1')",
    "(id < 3 OR id > 17) AND NOT flag",
]


@pytest.mark.parametrize("sql", CASES)
def test_matches_pylance(sql, tmp_path):
    lance = pytest.importorskip("lance")
    ours = pads.dataset(TABLE).to_table(filter=parse_filter(sql, TABLE.schema))
    uri = str(tmp_path / "ds")
    theirs = lance.write_dataset(TABLE, uri).to_table(filter=sql)
    assert ours.column("id").to_pylist() == theirs.column("id").to_pylist(), sql


def test_string_literals_coerce_to_temporal_columns():
    # pylance refuses these; lancefmt converts the string like DataFusion's SQL does.
    for lenient, strict in [("day > '2024-01-10'", "day > DATE '2024-01-10'"),
                            ("ts < '2024-01-01 00:00:05'", "ts < TIMESTAMP '2024-01-01 00:00:05'")]:
        a = pads.dataset(TABLE).to_table(filter=parse_filter(lenient, TABLE.schema))
        b = pads.dataset(TABLE).to_table(filter=parse_filter(strict, TABLE.schema))
        assert a.equals(b) and 0 < a.num_rows < 20


@pytest.mark.parametrize("bad", ["", "id <", "id = = 3", "nope > 3", "id IN ()", "f(x)", "id LIKE 3",
                                 "'unterminated", "st.zz > 1", "id BETWEEN 1"])
def test_bad_filters_are_clear_errors(bad):
    with pytest.raises(InvalidArgumentError):
        parse_filter(bad, TABLE.schema)


def test_to_expression_passthrough_and_columns():
    e = pc.field("id") > 3
    assert to_expression(e) is e
    assert to_expression(None) is None
    with pytest.raises(InvalidArgumentError):
        to_expression(42)
    assert referenced_columns(parse_filter("id < 3 AND name IS NULL", TABLE.schema), TABLE.schema) == ["id", "name"]
    assert referenced_columns(pc.field("x") > 1, TABLE.schema) == ["x"]


def test_literals_take_the_column_type_and_mismatches_name_the_column():
    e = parse_filter("x > 1", TABLE.schema)  # int literal meets a float column
    assert pads.dataset(TABLE).to_table(filter=e).num_rows == 17
    with pytest.raises(InvalidArgumentError, match="'name'"):
        parse_filter("name > 1", TABLE.schema)
    with pytest.raises(InvalidArgumentError, match="'id'"):
        parse_filter("id = 'x'", TABLE.schema)


def test_in_and_not_in_follow_sql_null_logic():
    ids = lambda sql: pads.dataset(TABLE).to_table(filter=parse_filter(sql, TABLE.schema))["id"].to_pylist()
    nulls = {i for i in range(20) if i % 5 == 0}
    assert ids("name IN ('n1', 'n2')") == [1, 2]
    assert set(ids("name NOT IN ('n1', 'n2')")) == set(range(20)) - {1, 2} - nulls
    assert ids("id IN (1, NULL)") == [1]
    assert ids("id NOT IN (1, NULL)") == []


def test_value_expressions_and_casts():
    from lancefmt.sql import parse_expression
    from lancefmt.sql.translate import parse_typed_expression

    out = pads.dataset(TABLE).to_table(columns={
        "twice": parse_expression("id * 2", TABLE.schema),
        "a": parse_expression("st.a", TABLE.schema),
        "s": parse_expression("CAST(id AS STRING)", TABLE.schema),
        "c": parse_expression("CASE WHEN id < 2 THEN 'low' ELSE 'high' END", TABLE.schema),
    })
    assert out["twice"].to_pylist()[:3] == [0, 2, 4]
    assert out["a"].to_pylist()[:3] == [0, 1, 2]
    assert out["s"].to_pylist()[:2] == ["0", "1"]
    assert out["c"].to_pylist()[:3] == ["low", "low", "high"]
    expr, t, cols = parse_typed_expression("id + x", TABLE.schema)
    assert t == pa.float64() and cols == ["id", "x"]


def test_typed_literals():
    t = pa.table({"b": pa.array([b"\x01\x02", b"\x03"]), "d": pa.array([decimal.Decimal("1.50"),
                                                                       decimal.Decimal("3.25")],
                                                                      pa.decimal128(10, 2))})
    assert t.filter(parse_filter("b = X'0102'", t.schema)).num_rows == 1
    assert t.filter(parse_filter("d > DECIMAL '2.5'", t.schema)).num_rows == 1
    assert t.filter(parse_filter("d > CAST(2.5 AS DECIMAL(10,2))", t.schema)).num_rows == 1


def test_row_id_columns_are_known():
    assert referenced_columns(parse_filter("_rowid < 3 AND id > 1", TABLE.schema), TABLE.schema) == \
        ["id", "_rowid"]
