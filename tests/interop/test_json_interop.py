"""JSON columns (``pa.json_()``) against pylance: the JSONB bytes stored, both directions of
reading, and the ``json_*`` functions in filters and projections, at every storage version."""
import json

import hypothesis.strategies as st
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

import lancefmt
from lancefmt.jsonb import codec

lance = pytest.importorskip("lance")

VERSIONS = ["legacy", "2.0", "2.1", "2.2"]

DOCS = [
    {"user": {"name": "Alice", "age": 30, "tags": ["a", "b"]}, "score": 95.5, "ok": True},
    {"user": {"name": "Bob", "age": "25"}, "score": "87.5", "ok": "yes", "n": None},
    [10, -20, 70000, {"a": 1}, [], {}],
    "a string \u00e9 \n \"quoted\"",
    12,
    -3.5,
    None,
    {"big": 18446744073709551615, "neg": -9223372036854775808, "huge": 1e300, "tiny": 5e-324,
     "mixed": [1.0, 1e16, 1e-5, 1e-6, 0.1], "B": 1, "a": 2, "aa": 3},
]


def _json_table(docs=DOCS):
    texts = [None if i == 6 else json.dumps(d) for i, d in enumerate(docs)]
    return pa.table({"id": pa.array(range(len(docs)), pa.int64()),
                     "data": pa.array(texts, pa.json_())})


def _raw_jsonb(uri: str) -> list:
    """The JSONB values as stored, read with pylance's own file reader."""
    ds = lance.dataset(uri)
    out = []
    for frag in ds.get_fragments():
        for f in frag.data_files():
            reader = lance.file.LanceFileReader(f"{uri}/data/{f.path}")
            out += reader.read_all().to_table().column("data").to_pylist()
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_lancefmt_writes_what_pylance_writes(tmp_path, version):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancefmt.write_dataset(_json_table(), ours, data_storage_version=version)
    lance.write_dataset(_json_table(), theirs, data_storage_version=version)
    if version != "legacy":  # pylance's file reader reads 2.x files only
        assert _raw_jsonb(ours) == _raw_jsonb(theirs)
    expected = lance.dataset(theirs).to_table()
    assert lance.dataset(ours).to_table().equals(expected)
    assert lancefmt.dataset(theirs).to_table().equals(expected)
    assert lancefmt.dataset(ours).to_table().equals(expected)
    assert lancefmt.dataset(ours).schema.equals(lance.dataset(theirs).schema)
    ours_fields = [(f.name, f.logical_type, dict(f.metadata), f.extension_name)
                   for f in lancefmt.dataset(ours).lance_fields]
    theirs_fields = [(f.name, f.logical_type, dict(f.metadata), f.extension_name)
                     for f in lancefmt.dataset(theirs).lance_fields]
    assert ours_fields == theirs_fields


def test_json_inside_structs_and_appends(tmp_path):
    inner = pa.ExtensionArray.from_storage(pa.json_(), pa.array(['{"k": [1, 2]}', None, "3"]))
    table = pa.table({"s": pa.StructArray.from_arrays([inner], fields=[pa.field("j", pa.json_())]),
                      "id": [1, 2, 3]})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancefmt.write_dataset(table, ours)
    lance.write_dataset(table, theirs)
    expected = lance.dataset(theirs).to_table()
    assert lancefmt.dataset(ours).to_table().equals(expected)
    assert lance.dataset(ours).to_table().equals(expected)
    # appending rows cast to the dataset's schema (arrow.json again) keeps the column JSON
    more = table.cast(lancefmt.dataset(ours).schema)
    lancefmt.write_dataset(more, ours, mode="append")
    lance.write_dataset(more, theirs, mode="append")
    assert lance.dataset(ours).to_table().equals(lance.dataset(theirs).to_table())


EXPRESSIONS = [
    "json_extract(data, '$.user.name')", "json_extract(data, '$')", "json_extract(data, '$[3]')",
    "json_extract(data, '$.user.tags[*]')", "json_extract(data, '$.*')",
    "json_extract(data, '$.mixed[last - 1]')", "json_extract(data, '$[1 to 2]')",
    "json_extract(data, 'user.name')", "json_extract(data, '$[\"user\"].age')",
    "json_extract(data, '$[*]?(@.a == 1)')", "json_exists(data, '$.user.age')",
    "json_exists(data, '$.n')", "json_get(data, 'user')", "json_get(data, '1')",
    "json_get_string(data, 'score')", "json_get_string(data, 'ok')",
    "json_get_int(json_get(data, 'user'), 'age')", "json_get_float(data, 'score')",
    "json_get_string(json_get(data, 'user'), 'name')", "json_get_int(data, 'neg')",
    "json_array_contains(data, '$.user.tags', 'a')", "json_array_contains(data, '$', '-20')",
    "json_array_length(data, '$')", "json_array_length(data, '$.user.tags')",
    "json_array_length(data, '$.missing')",
]


@pytest.fixture(scope="module")
def json_pair(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("json") / "ds")
    lance.write_dataset(_json_table(), uri)
    return lance.dataset(uri), lancefmt.dataset(uri)


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_json_functions_as_pylance(json_pair, expr):
    theirs, ours = json_pair
    expected = theirs.to_table(columns={"x": expr})["x"].to_pylist()
    assert ours.to_table(columns={"x": expr})["x"].to_pylist() == expected


FILTERS = [
    "json_extract(data, '$.user.name') = '\"Alice\"'", "json_exists(data, '$.user')",
    "json_get_string(data, 'ok') = 'true'", "json_get_bool(json_get(data, 'user'), 'x') IS NULL",
    "json_get_int(json_get(data, 'user'), 'age') > 26",
    "json_array_contains(data, '$.user.tags', 'b') AND id < 3",
    "json_array_length(data, '$') > 2", "NOT json_exists(data, '$.score')",
]


@pytest.mark.parametrize("where", FILTERS)
def test_json_filters_as_pylance(json_pair, where):
    theirs, ours = json_pair
    expected = theirs.to_table(filter=where, columns=["id"])["id"].to_pylist()
    assert ours.to_table(filter=where, columns=["id"])["id"].to_pylist() == expected


@pytest.mark.parametrize("expr", ["json_get_int(data, 'ok')", "json_get_bool(data, 'score')",
                                  "json_get_string(data, 'user')", "json_get_int(data, 'big')"])
def test_json_cast_errors_fail_the_query(json_pair, expr):
    theirs, ours = json_pair
    with pytest.raises(ValueError):
        theirs.to_table(columns={"x": expr})
    with pytest.raises(ValueError, match="InvalidCast"):
        ours.to_table(columns={"x": expr})


@pytest.mark.parametrize("path", ["$..name", "bad[", "$[\"a\",\"b\"]"])
def test_bad_json_paths_are_refused(json_pair, path):
    theirs, ours = json_pair
    with pytest.raises(ValueError):
        theirs.to_table(filter=f"json_exists(data, '{path}')")
    with pytest.raises(ValueError, match="Invalid JSONPath"):
        ours.to_table(filter=f"json_exists(data, '{path}')")


def test_bad_json_text_is_refused(tmp_path):
    table = pa.table({"data": pa.array(['{"a": 1, "a": 2}'], pa.json_())})
    with pytest.raises(OSError):
        lance.write_dataset(table, str(tmp_path / "theirs"))
    with pytest.raises(OSError, match="duplicate object attribute"):
        lancefmt.write_dataset(table, str(tmp_path / "ours"))
    assert isinstance(pytest.raises(lancefmt.LanceError, lancefmt.write_dataset,
                                    pa.table({"data": pa.array(["[1"], pa.json_())}),
                                    str(tmp_path / "ours2")).value, ValueError)


def test_corrupt_jsonb_is_a_clean_error():
    for bad in [b"", b"\x80\x00\x00\x05", b"\x20\x00\x00\x00\x20\x00\x00\x09\x60",
                b"\x40\x00\x00\x01\x20\x00\x00\x01\x10\x00\x00\x01\x01a", b"\x70\x00\x00\x00"]:
        with pytest.raises(lancefmt.CorruptFileError):
            codec.decode(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.text(max_size=8)
    | st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
    max_leaves=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(docs=st.lists(json_values, min_size=1, max_size=6))
def test_jsonb_bytes_and_text_match_pylance(tmp_path_factory, docs):
    uri = str(tmp_path_factory.mktemp("hyp") / "ds")
    texts = [json.dumps(d) for d in docs]
    lance.write_dataset(pa.table({"data": pa.array(texts, pa.json_())}), uri)
    stored = _raw_jsonb(uri)
    assert [codec.encode(t) for t in texts] == stored
    assert [codec.decode(b) for b in stored] == lance.dataset(uri).to_table()["data"].to_pylist()
