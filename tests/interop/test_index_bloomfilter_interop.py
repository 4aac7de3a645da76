"""BLOOMFILTER against pylance 14.0.2: for the same dataset both write the same
``bloomfilter.lance`` (zones, filter bits from the same xxHash64 of every type, null rows,
metadata), lancefmt finds values in pylance's filters and pylance (``ScalarIndexQuery``) in
lancefmt's, each equal to a full scan; optimize and compaction keep the answers right."""
import shutil

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
from lance.indices import IndexConfig  # noqa: E402

import lancefmt  # noqa: E402
from zone_indices import lancefmt_ids, pylance_ids, segment_contents, table  # noqa: E402

COLUMNS = ["x", "f", "i8", "u64", "i32", "s", "ls", "b", "d", "ts"]
PARAMS = {"number_of_items": 700, "probability": 0.001}

FILTERS = {
    "x": ["x = 12.5", "x IS NULL"],
    "f": ["f IS NULL"],
    "i8": ["i8 = -120", "i8 IN (-128, 5, 77)", "i8 IS NULL"],
    "u64": ["u64 = 1099511627776", "u64 = 3"],
    "i32": ["i32 = -11997", "i32 IN (0, 3, 6)", "i32 IS NULL"],
    "s": ["s = 'k000010'", "s IN ('k000001', 'k000500', 'zzz')", "s IS NULL"],
    "ls": ["ls = 'long-5'", "ls IN ('long-5','long-7')"],
    "b": ["b = X'0003e8'", "b IS NULL"],
    "d": ["d = date '1970-01-10'"],
    "ts": ["ts = timestamp '1970-01-01 00:00:05'"],
}


def _exact_values(tbl, column, n=12):
    """Filters on values the column really holds (float values printed exactly)."""
    vals = [v for v in tbl.column(column).to_pylist()[::997] if v is not None and v == v][:n]
    return [f"{column} = {float(v)!r}" for v in vals]


@pytest.fixture(scope="module", params=[False, True], ids=["addresses", "stable_row_ids"])
def pair(request, tmp_path_factory, storage_version):
    root = tmp_path_factory.mktemp("bloom")
    base = str(root / "base")
    lance.write_dataset(table(), base, max_rows_per_file=5000, data_storage_version=storage_version,
                        enable_stable_row_ids=request.param)
    lance.dataset(base).delete("id % 89 = 1 OR (id >= 7000 AND id < 7100)")
    py, fmt = str(root / "py"), str(root / "fmt")
    shutil.copytree(base, py)
    shutil.copytree(base, fmt)
    for c in COLUMNS:
        lance.dataset(py).create_scalar_index(c, IndexConfig("bloomfilter", PARAMS))
        lancefmt.dataset(fmt).create_scalar_index(c, IndexConfig("bloomfilter", PARAMS))
    return py, fmt


@pytest.mark.parametrize("column", COLUMNS)
def test_same_file_as_pylance(pair, column):
    py, fmt = pair
    a = segment_contents(py, f"{column}_idx", "bloomfilter.lance")
    b = segment_contents(fmt, f"{column}_idx", "bloomfilter.lance")
    for key in ("type_url", "details", "index_version", "fragments", "metadata", "nulls"):
        assert a[key] == b[key], key
    assert a["table"].schema == b["table"].schema
    for name in a["table"].column_names:  # the filters' bits included
        assert a["table"].column(name).equals(b["table"].column(name)), name
    assert len(a["table"].column("bloom_filter_data")[0].as_py()) == 2048


def test_default_parameters_match_pylance(tmp_path):
    uri = str(tmp_path / "d")
    lance.write_dataset(table(3000).select(["id", "s"]), uri, max_rows_per_file=2000)
    py, fmt = str(tmp_path / "py"), str(tmp_path / "fmt")
    shutil.copytree(uri, py)
    shutil.copytree(uri, fmt)
    lance.dataset(py).create_scalar_index("s", "BLOOMFILTER")
    lancefmt.dataset(fmt).create_scalar_index("s", "BLOOMFILTER")
    a, b = segment_contents(py, "s_idx", "bloomfilter.lance"), segment_contents(fmt, "s_idx", "bloomfilter.lance")
    assert a["metadata"] == b["metadata"] and a["details"] == b["details"] == b""
    assert a["table"].equals(b["table"])
    assert lance.dataset(py).stats.index_stats("s_idx")["indices"] == \
        lancefmt.dataset(fmt).stats.index_stats("s_idx")["indices"]


def test_lancefmt_finds_values_in_pylance_filters(pair):
    py, _ = pair
    base = lancefmt.dataset(py).to_table()
    for column, filters in FILTERS.items():
        extra = _exact_values(base, column) if column in ("x", "f") else []
        for flt in filters + extra:
            plan = lancefmt.dataset(py).scanner(filter=flt).explain_plan(True)
            assert f"@{column}_idx(BloomFilter)" in plan, (flt, plan)
            assert lancefmt_ids(py, flt) == lancefmt_ids(py, flt, use_scalar_index=False), flt
    for flt in ["x = 0.0", "x = -0.0", "f IN (0.0, 1.0)", "x IN (0.0)"]:
        assert lancefmt_ids(py, flt) == lancefmt_ids(py, flt, use_scalar_index=False), flt


def test_pylance_finds_values_in_lancefmt_filters(pair):
    py, fmt = pair
    base = lancefmt.dataset(fmt).to_table()
    for column, filters in FILTERS.items():
        extra = _exact_values(base, column) if column in ("x", "f") else []
        for flt in filters + extra:
            plan = lance.dataset(fmt).scanner(filter=flt).explain_plan(True)
            assert "ScalarIndexQuery" in plan and f"@{column}_idx(BloomFilter)" in plan, (flt, plan)
            got = pylance_ids(lance.dataset(fmt), flt)
            assert got == pylance_ids(lance.dataset(fmt), flt, use_scalar_index=False), flt
            assert got == lancefmt_ids(fmt, flt, use_scalar_index=False), flt
    for flt in ["x = 0.0", "x = -0.0", "f IN (0.0, 1.0)"]:  # pylance probes both zeros
        assert pylance_ids(lance.dataset(fmt), flt) == pylance_ids(lance.dataset(fmt), flt, use_scalar_index=False)


def test_optimize_and_compaction_on_both_sides(pair, tmp_path):
    _, fmt = pair
    uri = str(tmp_path / "ds")
    shutil.copytree(fmt, uri)
    extra = table(2000, seed=9).set_column(0, "id", pa.array(np.arange(30_000, 32_000), pa.int64()))
    lance.write_dataset(extra, uri, mode="append")
    flts = ["i32 = -11997", "s = 'k000200'", "s IS NULL", "i32 IN (-1000, 2000)"]
    want = [lancefmt_ids(uri, f, use_scalar_index=False) for f in flts]
    lance.dataset(uri).optimize.optimize_indices(index_names=["i32_idx", "s_idx"])
    for f, w in zip(flts, want):
        assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=9000)
    for f, w in zip(flts, want):
        assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f
    lancefmt.dataset(uri).optimize.optimize_indices()
    stats = lance.dataset(uri).stats.index_stats("s_idx")
    assert stats["num_unindexed_rows"] == 0 and stats["indices"][0]["number_of_items"] == PARAMS["number_of_items"]
    for f, w in zip(flts, want):
        assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f


def test_update_and_remap_results_read_by_both(pair, tmp_path):
    """lancefmt's own update and remap (a compacted zone's filter is the OR of the filters its
    rows came from), committed, answer right in both."""
    from zone_indices import addresses_by_id, remap_after_compaction, update_with_new_fragments

    _, fmt = pair
    uri = str(tmp_path / "ds")
    shutil.copytree(fmt, uri)
    extra = table(3000, seed=8).set_column(0, "id", pa.array(np.arange(50_000, 53_000), pa.int64()))
    lance.write_dataset(extra, uri, mode="append")
    for column in ("i32", "s"):
        update_with_new_fragments(uri, f"{column}_idx", column)
    flts = ["i32 = -11997", "i32 IN (-1000, 2000, 8000)", "s = 'k000200'", "s IN ('k000001', 'k000420')", "s IS NULL"]
    want = [lancefmt_ids(uri, f, use_scalar_index=False) for f in flts]

    def check():
        for f, w in zip(flts, want):
            assert "ScalarIndexQuery" in lance.dataset(uri).scanner(filter=f).explain_plan(True), f
            assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f

    check()
    before = addresses_by_id(uri)
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=8000)
    for column in ("i32", "s"):
        remap_after_compaction(uri, f"{column}_idx", before)
    assert lance.dataset(uri).stats.index_stats("s_idx")["num_unindexed_rows"] == 0
    check()


def test_lancefmt_compaction_remaps_filters(pair, tmp_path):
    """lancefmt's compaction remaps the bloom filters (a new zone's filter ORs those of the
    zones its rows came from): the compacted fragments stay indexed and every value is found."""
    _, fmt = pair
    uri = str(tmp_path / "ds")
    shutil.copytree(fmt, uri)
    flts = ["i32 = -11997", "i32 IN (-1000, 2000, 8000)", "s = 'k000200'", "s IS NULL",
            "b = X'0003e8'", "d = date '1970-01-10'"]
    want = [lancefmt_ids(uri, f, use_scalar_index=False) for f in flts]
    lancefmt.dataset(uri).optimize.compact_files(target_rows_per_fragment=20_000)
    for name in ("i32_idx", "s_idx", "b_idx", "d_idx"):
        assert lance.dataset(uri).stats.index_stats(name)["num_unindexed_rows"] == 0, name
    for f, w in zip(flts, want):
        assert "ScalarIndexQuery" in lance.dataset(uri).scanner(filter=f).explain_plan(True), f
        assert lancefmt_ids(uri, f) == w and pylance_ids(lance.dataset(uri), f) == w, f
    lance.dataset(uri).validate()


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("builder", ["pylance", "lancefmt"])
@pytest.mark.parametrize("op", ["append", "delete", "update indexed", "update other", "merge_insert",
                                "compact", "optimize"])
def test_lancefmt_writes_keep_bloom_filters_valid(tmp_path, op, builder, stable):
    from index_checks import assert_answers_equal_full_scan, index_table
    from zone_indices import write_ops

    uri = str(tmp_path / "ds")
    lance.write_dataset(index_table(3000), uri, max_rows_per_file=1100, enable_stable_row_ids=stable)
    lib = lance if builder == "pylance" else lancefmt
    for col in ("id", "v", "s"):
        lib.dataset(uri).create_scalar_index(col, IndexConfig("bloomfilter", {"number_of_items": 256,
                                                                                "probability": 0.01}))
    write_ops(index_table)[op](lancefmt.dataset(uri), uri)
    lance.dataset(uri).validate()
    assert_answers_equal_full_scan(lance, uri, [
        "v = 3", "v IS NULL", "v IN (1, 2, 96)", "s = 's07'", "s IS NULL", "id = 1234",
        "id IN (1, 777, 2999, 3100)", "v IN (1, 2) AND s = 's02'"], uses=["v_idx"])


def test_segments_built_apart_and_merged_equal_one_build(pair, tmp_path):
    py, fmt = pair
    uri = str(tmp_path / "ds")
    shutil.copytree(fmt, uri)
    ds = lancefmt.dataset(uri)
    frags = [f.fragment_id for f in ds.get_fragments()]
    parts = [ds.create_scalar_index("s", IndexConfig("bloomfilter", PARAMS), name="s_dist", fragment_ids=[f])
             for f in reversed(frags)]
    ds.commit_existing_index_segments("s_dist", "s", [ds.merge_existing_index_segments(parts)])
    a = segment_contents(py, "s_idx", "bloomfilter.lance")
    b = segment_contents(uri, "s_dist", "bloomfilter.lance")
    for key in ("details", "fragments", "metadata", "nulls"):
        assert a[key] == b[key], key
    assert a["table"].equals(b["table"])
    assert pylance_ids(lance.dataset(uri), "s = 'k000010'") == lancefmt_ids(uri, "s = 'k000010'", use_scalar_index=False)
