"""``arrow_cast(value, 'Type')``: arrow-rs type names, constants cast at parse time, columns
cast in the scan; extension columns (``uuid``) compare as their storage."""
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

from lancefmt.errors import InvalidArgumentError
from lancefmt.sql import parse_expression, parse_filter
from lancefmt.sql.arrow_types import ArrowTypeNameError, parse_arrow_type
from lancefmt.sql.sargable import Equals, Term, sargable


@pytest.mark.parametrize("name, want", [
    ("Int64", pa.int64()), ("UInt16", pa.uint16()), ("Float32", pa.float32()), ("Utf8", pa.string()),
    ("LargeUtf8", pa.large_string()), ("LargeBinary", pa.large_binary()), ("Boolean", pa.bool_()),
    ("FixedSizeBinary(16)", pa.binary(16)), ("Date32", pa.date32()),
    ("Timestamp(Nanosecond, None)", pa.timestamp("ns")), ('Timestamp(Millisecond, Some("UTC"))', pa.timestamp("ms", "UTC")),
    ("Timestamp(ns)", pa.timestamp("ns")), ('Timestamp(µs, "UTC")', pa.timestamp("us", "UTC")),
    ("Time64(Microsecond)", pa.time64("us")), ("Duration(Second)", pa.duration("s")),
    ("Decimal128(10, 2)", pa.decimal128(10, 2)), ("Decimal256(40, 3)", pa.decimal256(40, 3)),
    ("List(Int64)", pa.list_(pa.int64())), ("List(nullable Int64)", pa.list_(pa.int64())),
    ("LargeList(Utf8)", pa.large_list(pa.string())), ("FixedSizeList(3, Float32)", pa.list_(pa.float32(), 3)),
    ("FixedSizeList(3 x Float32)", pa.list_(pa.float32(), 3)), ("Dictionary(Int32, Utf8)", pa.dictionary(pa.int32(), pa.string())),
])
def test_type_names(name, want):
    assert parse_arrow_type(name) == want


@pytest.mark.parametrize("name", ["int64", "Struct(a Int64)", "FixedSizeBinary(x)", "Int64)", "List(Int64"])
def test_unknown_names_are_refused_as_datafusion_does(name):
    with pytest.raises(ArrowTypeNameError, match="Must be a supported arrow type name"):
        parse_arrow_type(name)


def test_constants_and_columns_are_cast():
    schema = pa.schema([("i", pa.int64()), ("s", pa.string())])
    t = pa.table({"i": [1, 2, 3], "s": ["a", "b", "c"]})
    assert t.filter(parse_filter("i = arrow_cast('2', 'Int64')", schema))["i"].to_pylist() == [2]
    assert t.filter(parse_filter("i = arrow_cast(2.7, 'Int64')", schema))["i"].to_pylist() == [2]  # truncates
    assert t.filter(parse_filter("s = arrow_cast(0x61, 'Utf8')", schema))["s"].to_pylist() == ["a"]
    assert t.filter(parse_filter("arrow_cast(i, 'Utf8') = '3'", schema))["i"].to_pylist() == [3]
    expr = parse_expression("arrow_cast(NULL, 'FixedSizeList(2, Float32)')", schema)
    out = pads.dataset(t).to_table(columns={"v": expr}).column("v")
    assert out.type == pa.list_(pa.float32(), 2) and out.to_pylist() == [None] * 3
    with pytest.raises(InvalidArgumentError, match="cannot cast 2 bytes"):
        parse_filter("s = arrow_cast(0x6162, 'FixedSizeBinary(16)')", schema)


def test_uuid_columns_compare_as_fixed_size_binary():
    uuids = pa.array([b"0123012301230123", b"2345234523452345", None], pa.uuid())
    t = pa.table({"uuid": uuids, "i": [0, 1, 2]})
    for text in ["uuid = arrow_cast(0x32333435323334353233343532333435, 'FixedSizeBinary(16)')",
                 "uuid = X'32333435323334353233343532333435'",
                 "uuid IN (X'32333435323334353233343532333435', X'00000000000000000000000000000000')",
                 "uuid > X'30313233303132333031323330313233'"]:
        assert t.filter(parse_filter(text, t.schema))["i"].to_pylist() == [1], text
    term = sargable("uuid = arrow_cast(0x32333435323334353233343532333435, 'FixedSizeBinary(16)')", t.schema)
    assert term == Term("uuid", Equals(b"2345234523452345", pa.binary(16)))
    assert term.describe() == "uuid = 32333435323334353233..."
