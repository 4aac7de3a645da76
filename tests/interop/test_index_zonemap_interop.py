"""ZONEMAP against pylance 14.0.2: for the same dataset both write the same ``zonemap.lance``
(zones, statistics, null rows, metadata, details), lancefmt answers from pylance's index and
pylance (``ScalarIndexQuery``) from lancefmt's, each equal to a full scan; optimize and
compaction by either side keep the answers right."""
import shutil

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
from lance.indices import IndexConfig  # noqa: E402

import lancefmt  # noqa: E402
from zone_indices import lancefmt_ids, pylance_ids, same_values, segment_contents, table  # noqa: E402

COLUMNS = ["x", "f", "i8", "u64", "i32", "s", "ls", "b", "d", "ts", "flag", "dec", "fsb"]
ROWS_PER_ZONE = 512

FILTERS = {  # filters whose answers pylance and lancefmt agree on (no NaN or signed-zero rules)
    "x": ["x = 12.5", "x < -40.0", "x >= 10.0 AND x < 20.0", "x IS NULL", "x IS NOT NULL"],
    "f": ["f <= -60.0", "f IS NULL"],
    "i8": ["i8 = -120", "i8 > 100", "i8 IN (-128, 5)", "i8 IS NULL"],
    "u64": ["u64 = 1099511627776", "u64 >= 13000000000000000"],
    "i32": ["i32 < -11900", "i32 BETWEEN 100 AND 130", "i32 IS NULL", "NOT (i32 > -5000)"],
    "s": ["s = 'k000010'", "s > 'k001700'", "s IN ('k000001', 'k000500', 'zzz')", "s IS NULL"],
    "ls": ["ls = 'long-5'", "ls IN ('long-5','long-7')"],
    "b": ["b = X'0003e8'", "b < X'000010'", "b IS NULL"],
    "d": ["d = date '1970-01-10'", "d >= date '1970-04-01'"],
    "ts": ["ts < timestamp '1970-01-01 00:01:00'", "ts = timestamp '1970-01-01 00:00:05'"],
    "flag": ["flag = true", "flag IS NULL"],
    "fsb": ["fsb = X'000003e8'", "fsb IN (X'000003e8', X'00000001')"],
    "dec": [],
}


@pytest.fixture(scope="module", params=[False, True], ids=["addresses", "stable_row_ids"])
def pair(request, tmp_path_factory, storage_version):
    """The same dataset (three fragments, deletions) indexed by pylance and by lancefmt."""
    root = tmp_path_factory.mktemp("zonemap")
    base = str(root / "base")
    lance.write_dataset(table(), base, max_rows_per_file=5000, data_storage_version=storage_version,
                        enable_stable_row_ids=request.param)
    lance.dataset(base).delete("id % 97 = 3 OR (id >= 5100 AND id < 5300)")
    py, fmt = str(root / "py"), str(root / "fmt")
    shutil.copytree(base, py)
    shutil.copytree(base, fmt)
    for c in COLUMNS:
        lance.dataset(py).create_scalar_index(c, IndexConfig("zonemap", {"rows_per_zone": ROWS_PER_ZONE}))
        lancefmt.dataset(fmt).create_scalar_index(c, IndexConfig("zonemap", {"rows_per_zone": ROWS_PER_ZONE}))
    return py, fmt


@pytest.mark.parametrize("column", COLUMNS)
def test_same_file_as_pylance(pair, column):
    py, fmt = pair
    a = segment_contents(py, f"{column}_idx", "zonemap.lance")
    b = segment_contents(fmt, f"{column}_idx", "zonemap.lance")
    for key in ("type_url", "details", "index_version", "fragments", "metadata", "nulls"):
        assert a[key] == b[key], key
    ta, tb = a["table"], b["table"]
    assert ta.schema == tb.schema
    for name in ("null_count", "nan_count", "fragment_id", "zone_start", "zone_length"):
        assert ta.column(name).equals(tb.column(name)), name
    for name in ("min", "max"):
        assert same_values(ta.column(name).combine_chunks(), tb.column(name).combine_chunks()), name


def test_lancefmt_answers_from_pylance_index(pair):
    py, _ = pair
    for column, filters in FILTERS.items():
        for flt in filters + [f"{column} IS NOT NULL AND id < 3000"]:
            plan = lancefmt.dataset(py).scanner(filter=flt).explain_plan(True)
            # NOT of an inexact answer is not answered by lancefmt's planner (pylance rewrites it)
            assert f"@{column}_idx(ZoneMap)" in plan or flt.startswith("NOT"), (flt, plan)
            assert lancefmt_ids(py, flt) == lancefmt_ids(py, flt, use_scalar_index=False), flt
    # NaN and signed zeros, by lancefmt's own rules
    for flt in ["x = 0.0", "x = -0.0", "x > 40.0", "x < 0.0", "f IN (0.0, 1.0)", "x IS NULL OR x > 100.0"]:
        assert lancefmt_ids(py, flt) == lancefmt_ids(py, flt, use_scalar_index=False), flt


def test_pylance_answers_from_lancefmt_index(pair):
    py, fmt = pair
    for column, filters in FILTERS.items():
        for flt in filters:
            plan = lance.dataset(fmt).scanner(filter=flt).explain_plan(True)
            assert "ScalarIndexQuery" in plan and f"@{column}_idx(ZoneMap)" in plan, (flt, plan)
            got = pylance_ids(lance.dataset(fmt), flt)
            assert got == pylance_ids(lance.dataset(fmt), flt, use_scalar_index=False), flt
            assert got == lancefmt_ids(fmt, flt, use_scalar_index=False), flt
    for flt in ["x = 0.0", "x > 40.0", "f < 0.0", "x IN (0.0, 1.0)"]:  # pylance's NaN rules, same index
        assert pylance_ids(lance.dataset(fmt), flt) == pylance_ids(lance.dataset(py), flt), flt


def test_optimize_and_compaction_on_both_sides(pair, tmp_path):
    _, fmt = pair
    uri = str(tmp_path / "ds")
    shutil.copytree(fmt, uri)
    extra = table(3000, seed=5).set_column(0, "id", pa.array(range(20_000, 23_000), pa.int64()))
    lance.write_dataset(extra, uri, mode="append")
    flts = ["i32 < -11900", "s > 'k000400'", "x IS NULL", "d = date '1970-01-10'"]
    want = [lancefmt_ids(uri, f, use_scalar_index=False) for f in flts]
    # pylance updates lancefmt's index (appends the new fragment's zones)
    lance.dataset(uri).optimize.optimize_indices(index_names=["i32_idx", "s_idx", "x_idx", "d_idx"])
    for f, w in zip(flts, want):
        assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f
    # pylance compacts: rewritten fragments drop out of the index; answers stay right
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=9000)
    for f, w in zip(flts, want):
        assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f
    # lancefmt optimizes: the new fragments are indexed again; pylance reads the result
    lancefmt.dataset(uri).optimize.optimize_indices()
    stats = lance.dataset(uri).stats.index_stats("s_idx")
    assert stats["num_unindexed_rows"] == 0 and stats["indices"][0]["rows_per_zone"] == ROWS_PER_ZONE
    for f, w in zip(flts, want):
        assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f


def test_statistics_match_pylance(pair):
    py, fmt = pair
    for column in ("x", "s"):
        a = lance.dataset(py).stats.index_stats(f"{column}_idx")
        b = lancefmt.dataset(fmt).stats.index_stats(f"{column}_idx")
        assert a["indices"] == b["indices"] and a["index_type"] == b["index_type"] == "ZoneMap"
        assert a["num_indexed_rows"] == b["num_indexed_rows"]


def test_update_and_remap_results_read_by_both(pair, tmp_path):
    """lancefmt's own update (new fragments' zones appended) and remap (zones rebuilt over the
    compacted fragments from the old zones' statistics), committed, answer right in both."""
    from zone_indices import addresses_by_id, remap_after_compaction, update_with_new_fragments

    _, fmt = pair
    uri = str(tmp_path / "ds")
    shutil.copytree(fmt, uri)
    extra = table(4000, seed=7).set_column(0, "id", pa.array(range(40_000, 44_000), pa.int64()))
    lance.write_dataset(extra, uri, mode="append")
    names = {"i32": "i32_idx", "s": "s_idx", "x": "x_idx", "fsb": "fsb_idx"}
    for column, name in names.items():
        update_with_new_fragments(uri, name, column)
    flts = ["i32 < -11900", "i32 BETWEEN 100 AND 130", "s > 'k001700'", "s IS NULL", "x >= 10.0 AND x < 20.0",
            "x IS NULL", "fsb = X'000003e8'"]
    want = [lancefmt_ids(uri, f, use_scalar_index=False) for f in flts]

    def check():
        for f, w in zip(flts, want):
            assert f"@{f.split()[0]}_idx(ZoneMap)" in lance.dataset(uri).scanner(filter=f).explain_plan(True), f
            assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f

    assert lance.dataset(uri).stats.index_stats("s_idx")["num_unindexed_rows"] == 0
    check()
    before = addresses_by_id(uri)
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=7000)
    for column, name in names.items():
        remap_after_compaction(uri, name, before)
    assert lance.dataset(uri).stats.index_stats("x_idx")["num_unindexed_rows"] == 0
    check()


def test_lancefmt_compaction_remaps_zones(pair, tmp_path):
    """lancefmt's compaction remaps the zone maps (new zones' bounds merged from the old zones
    their rows came from): the compacted fragments stay indexed, and both libraries' answers
    equal a full scan."""
    _, fmt = pair
    uri = str(tmp_path / "ds")
    shutil.copytree(fmt, uri)
    flts = ["i32 < -11900", "i32 BETWEEN 100 AND 130", "s > 'k001700'", "s IS NULL",
            "x >= 10.0 AND x < 20.0", "x IS NULL", "fsb = X'000003e8'", "d >= date '1970-04-01'"]
    want = [lancefmt_ids(uri, f, use_scalar_index=False) for f in flts]
    lancefmt.dataset(uri).optimize.compact_files(target_rows_per_fragment=20_000)
    assert len(lance.dataset(uri).get_fragments()) == 1
    for name in ("i32_idx", "s_idx", "x_idx", "fsb_idx", "d_idx"):
        assert lance.dataset(uri).stats.index_stats(name)["num_unindexed_rows"] == 0, name
    for f, w in zip(flts, want):
        assert f"@{f.split()[0]}_idx(ZoneMap)" in lance.dataset(uri).scanner(filter=f).explain_plan(True), f
        assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f
    lance.dataset(uri).validate()


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("builder", ["pylance", "lancefmt"])
@pytest.mark.parametrize("op", ["append", "delete", "update indexed", "update other", "merge_insert",
                                "compact", "optimize"])
def test_lancefmt_writes_keep_zone_maps_valid(tmp_path, op, builder, stable):
    from index_checks import assert_answers_equal_full_scan, index_table
    from zone_indices import write_ops

    uri = str(tmp_path / "ds")
    lance.write_dataset(index_table(3000), uri, max_rows_per_file=1100, enable_stable_row_ids=stable)
    lib = lance if builder == "pylance" else lancefmt
    for col in ("v", "s", "x"):
        lib.dataset(uri).create_scalar_index(col, IndexConfig("zonemap", {"rows_per_zone": 256}))
    write_ops(index_table)[op](lancefmt.dataset(uri), uri)
    lance.dataset(uri).validate()
    assert_answers_equal_full_scan(lance, uri, [
        "v = 3", "v BETWEEN 10 AND 12", "v IS NULL", "s = 's07'", "s > 's11'", "s IS NULL",
        "x >= 5.0 AND x < 5.5", "v IN (1, 2) AND s = 's02'"], uses=["v_idx"])


def test_segments_built_apart_and_merged_equal_one_build(pair, tmp_path):
    """Segments built per fragment (the distributed shape) and merged from their files give
    pylance's single-build file."""
    py, fmt = pair
    uri = str(tmp_path / "ds")
    shutil.copytree(fmt, uri)
    ds = lancefmt.dataset(uri)
    frags = [f.fragment_id for f in ds.get_fragments()]
    cfg = IndexConfig("zonemap", {"rows_per_zone": ROWS_PER_ZONE})
    parts = [ds.create_scalar_index("s", cfg, name="s_dist", fragment_ids=[f]) for f in reversed(frags)]
    merged = ds.merge_existing_index_segments(parts)
    ds.commit_existing_index_segments("s_dist", "s", [merged])
    a = segment_contents(py, "s_idx", "zonemap.lance")
    b = segment_contents(uri, "s_dist", "zonemap.lance")
    for key in ("details", "fragments", "metadata", "nulls"):
        assert a[key] == b[key], key
    assert a["table"].equals(b["table"])
    assert pylance_ids(lance.dataset(uri), "s = 'k000010'") == lancefmt_ids(uri, "s = 'k000010'", use_scalar_index=False)
