"""JSON indices (a scalar index over the values at one path of a JSON column) both ways with
pylance 14: the same files and details, the same answers as a full scan whichever library
built them, pylance's type inference and errors, and the index kept valid by appends,
optimize and compaction."""
import os

import pyarrow as pa
import pytest

import lancefmt

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader  # noqa: E402
from lance.indices import IndexConfig  # noqa: E402


def doc(i: int):
    if i % 17 == 0:
        return None
    if i % 13 == 0:
        return "[1, 2]" if i % 2 else "null"
    if i % 11 == 0:
        return '{"y": 1}'
    return (f'{{"x": {i % 23 - 5}, "s": "word{i % 7}", "f": {i * 0.25}, "b": {str(i % 3 == 0).lower()}, '
            f'"x2": {"null" if i % 5 == 0 else i}}}')


def table(n=120, start=0) -> pa.Table:
    return pa.table({"j": pa.array([doc(i) for i in range(start, start + n)], pa.json_()),
                     "i": list(range(start, start + n))})


CASES = {  # target, path, filters answered from the index (the first one's plan is checked)
    "btree": ("btree", "x", ["json_get_int(j, 'x') = 3", "json_get_int(j, 'x') > 10",
                             "json_get_int(j, 'x') IS NULL", "json_get_int(j, 'x') IS NOT NULL",
                             "json_get_int(j, 'x') IN (1, 2, 3, 4)", "json_get_int(j, 'x') BETWEEN -2 AND 2",
                             "NOT json_get_int(j, 'x') = 0", "json_get_int(j, 'x') < 0 AND i > 50"]),
    "bitmap": ("bitmap", "s", ["json_get_string(j, 's') = 'word3'", "json_get_string(j, 's') IN ('word1', 'word2')",
                               "json_get_string(j, 's') > 'word4'", "json_get_string(j, 's') IS NULL"]),
    "zonemap": ("zonemap", "f", ["json_get_float(j, 'f') > 20", "json_get_float(j, 'f') = 2.5",
                                 "json_get_float(j, 'f') < 1"]),
    "bloomfilter": ("bloomfilter", "x2", ["json_get_int(j, 'x2') = 14", "json_get_int(j, 'x2') IS NULL"]),
    "ngram": ("ngram", "s", ["contains(json_get_string(j, 's'), 'ord5')"]),
}
OTHER = ["json_get_int(j, 'y') = 1", "json_get_float(j, 'x') = 3", "json_extract(j, '$.x') = '3'",
         "json_get_string(j, 'x') = '3'"]


def build(uri, builder, case, **write):
    target, path, _ = CASES[case]
    lance.write_dataset(table(), uri, max_rows_per_file=50, **write)
    lib = lance if builder == "pylance" else lancefmt
    lib.dataset(uri).create_scalar_index(
        "j", IndexConfig(index_type="json", parameters={"target_index_type": target, "path": path}))


def ids(ds, text, **kw):
    return sorted(ds.to_table(filter=text, columns=["i"], **kw)["i"].to_pylist())


def plan_line(ds, text):
    return [ln.strip() for ln in ds.scanner(filter=text).explain_plan().splitlines() if "ScalarIndexQuery" in ln]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("builder", ["pylance", "lancefmt"])
def test_each_library_answers_from_the_others(tmp_path, builder, case, storage_version):
    uri = str(tmp_path / "ds")
    build(uri, builder, case, data_storage_version=storage_version)
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    filters = CASES[case][2]
    for text in filters + OTHER:
        want = ids(theirs, text, use_scalar_index=False)
        assert ids(ours, text) == want, text
        assert ours.count_rows(text) == len(want), text
    for text in filters:
        assert ids(theirs, text) == ids(theirs, text, use_scalar_index=False), text
    if case != "bloomfilter":  # its files do not say the values' type: lancefmt scans
        assert plan_line(ours, filters[0]) == plan_line(theirs, filters[0]) != []
    d_ours, d_theirs = ours.describe_indices()[0], theirs.describe_indices()[0]
    assert (d_ours.index_type, d_ours.type_url, d_ours.num_rows_indexed) == \
        (d_theirs.index_type, d_theirs.type_url, d_theirs.num_rows_indexed) == \
        ("Json", "/lance.index.pb.JsonIndexDetails", 120)
    if case in ("btree", "bitmap", "zonemap"):
        ours_stats, their_stats = ours.stats.index_stats("j_idx"), theirs.stats.index_stats("j_idx")
        for s in (ours_stats, their_stats):
            s.pop("updated_at_timestamp_ms")
        assert ours_stats == their_stats


@pytest.mark.parametrize("case", ["btree", "bitmap", "zonemap", "bloomfilter", "ngram"])
def test_files_and_details_are_pylances(tmp_path, case):
    got = {}
    for name in ("pylance", "lancefmt"):
        uri = str(tmp_path / name)
        build(uri, name, case)
        from lancefmt.table.versions import load_manifest
        (entry,) = load_manifest(uri, None).indices
        d = f"{uri}/_indices/{lance.dataset(uri).describe_indices()[0].segments[0].uuid}"
        files = {f: LanceFileReader(f"{d}/{f}").read_all().to_table() for f in sorted(os.listdir(d))}
        got[name] = (entry.index_details.SerializeToString(), entry.index_version, files)
    assert got["lancefmt"][:2] == got["pylance"][:2]
    assert got["lancefmt"][2].keys() == got["pylance"][2].keys()
    for f, t in got["pylance"][2].items():
        mine = got["lancefmt"][2][f]
        assert mine.schema.equals(t.schema) and mine.schema.metadata == t.schema.metadata, f
        if f == "page_data.lance":  # pylance's sort leaves equal values in no fixed order
            mine, t = (x.sort_by([("values", "ascending"), ("ids", "ascending")]) for x in (mine, t))
        assert mine.equals(t), f


@pytest.mark.parametrize("docs, path, want", [
    (['{"x": 1.5}', '{"x": 7}'], "x", pa.float64()),             # integers join a Float64 index
    (['{"x": 18446744073709551615}', '{"x": 7}'], "x", pa.float64()),
    (['{"y": 0}', None], "x", pa.string()),                       # no value: Utf8
    (['{"a": [5, 6]}', '{"a": [7]}'], "a[0]", pa.int64()),
    (['{"a": {"b": true}}', '{"a": {"b": false}}'], '$."a".b', pa.bool_()),
])
def test_value_types_are_inferred_as_pylance_does(tmp_path, docs, path, want):
    for name, lib in (("pylance", lance), ("lancefmt", lancefmt)):
        uri = str(tmp_path / name)
        lance.write_dataset(pa.table({"j": pa.array(docs, pa.json_())}), uri)
        lib.dataset(uri).create_scalar_index(
            "j", IndexConfig(index_type="json", parameters={"target_index_type": "btree", "path": path}))
        d = f"{uri}/_indices/{lance.dataset(uri).describe_indices()[0].segments[0].uuid}"
        assert LanceFileReader(f"{d}/page_data.lance").read_all().to_table().schema.field(0).type == want


@pytest.mark.parametrize("docs, params, error, match", [
    (['{"x": 7}', '{"x": 1.5}'], {"path": "x"}, ValueError, "expected Int64, but batch row 1 has JSON type Float64"),
    (['{"x": "a"}', '{"x": 7}'], {"path": "x"}, ValueError, "expected Utf8, but batch row 1 has JSON type Int64"),
    (['{"x": {"a": 1}}'], {"path": "x"}, ValueError, "with JSON type Object; only scalar values are supported"),
    (['{"a": [1, 2]}'], {"path": "$.a[*]"}, ValueError, "with JSON type Array; only scalar values"),
    (['{"x": 1}'], {"path": "x", "target_index_type": "label_list"}, ValueError, "No scalar index plugin found"),
    (['{"x": "a"}'], {"path": "x", "target_index_type": "inverted"}, NotImplementedError, "do not support target"),
])
def test_errors_are_pylances(tmp_path, docs, params, error, match):
    params = {"target_index_type": "btree", **params}
    for name, lib in (("pylance", lance), ("lancefmt", lancefmt)):
        uri = str(tmp_path / name)
        lance.write_dataset(pa.table({"j": pa.array(docs, pa.json_())}), uri)
        with pytest.raises(error, match=match):
            lib.dataset(uri).create_scalar_index("j", IndexConfig(index_type="json", parameters=params))


def test_stable_row_ids(tmp_path):
    for name, lib in (("pylance", lance), ("lancefmt", lancefmt)):
        uri = str(tmp_path / name)
        lance.write_dataset(table(), uri, max_rows_per_file=50, enable_stable_row_ids=True)
        with pytest.raises(NotImplementedError, match="stable row ids"):
            lib.dataset(uri).create_scalar_index(
                "j", IndexConfig(index_type="json", parameters={"target_index_type": "btree", "path": "x"}))
        lib.dataset(uri).create_scalar_index(
            "j", IndexConfig(index_type="json", parameters={"target_index_type": "bitmap", "path": "s"}))
        lance.dataset(uri).delete("i < 10")
        for reader in (lance, lancefmt):
            ds = reader.dataset(uri)
            assert ids(ds, "json_get_string(j, 's') = 'word3'") == \
                ids(lance.dataset(uri), "json_get_string(j, 's') = 'word3'", use_scalar_index=False)


@pytest.mark.parametrize("writer", ["pylance", "lancefmt"])
def test_appends_optimize_and_compaction_keep_it_valid(tmp_path, writer):
    uri = str(tmp_path / "ds")
    build(uri, "lancefmt" if writer == "pylance" else "pylance", "btree")
    lib = lance if writer == "pylance" else lancefmt
    lib.write_dataset(table(40, 120), uri, mode="append")
    lib.dataset(uri).optimize.optimize_indices()
    lib.dataset(uri).delete("i % 9 = 0")
    lib.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000, materialize_deletions_threshold=0.0)
    lance.dataset(uri).validate()
    for text in CASES["btree"][2]:
        want = ids(lance.dataset(uri), text, use_scalar_index=False)
        assert ids(lancefmt.dataset(uri), text) == want and ids(lance.dataset(uri), text) == want, text
    assert "Json(j = 3->x)" in lancefmt.dataset(uri).scanner(filter=CASES["btree"][2][0]).explain_plan()
