"""pylance's index API on lancefmt: names, errors, replace, empty indices, delta segments,
optimize, drop, distributed segments; pylance reads every version lancefmt commits."""
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import LanceError
from index_checks import assert_answers_equal_full_scan, index_table

lance = pytest.importorskip("lance")


@pytest.fixture
def uri(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(index_table(2000), uri, max_rows_per_file=700)
    return uri


def test_errors_are_pylances(uri):
    ds = lancefmt.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    with pytest.raises(RuntimeError, match="already exists") as e:
        ds.create_scalar_index("id", "BTREE", replace=False)
    assert isinstance(e.value, LanceError)
    with pytest.raises(KeyError, match="nope not found in schema"):
        ds.create_scalar_index("nope", "BTREE")
    with pytest.raises(NotImplementedError, match="Received FOO"):
        ds.create_scalar_index("id", "FOO")
    with pytest.raises(TypeError):
        ds.create_scalar_index("tags", "BTREE")
    with pytest.raises(RuntimeError, match="not found"):
        ds.drop_index("nope")
    with pytest.raises(KeyError, match='Index "nope" not found'):
        ds.stats.index_stats("nope")


def test_names_replace_and_drop_move_the_dataset(uri):
    ds = lancefmt.dataset(uri)
    ds.create_scalar_index("id", "btree")            # any case, as pylance
    ds.create_scalar_index("ID", "BTREE", name="other")  # column name any case
    assert ds.version == 3 and {d.name for d in ds.describe_indices()} == {"id_idx", "other"}
    first = ds.describe_indices()[0].segments[0].uuid
    ds.create_scalar_index("id", "BTREE")             # replace=True by default
    segs = {d.name: d.segments for d in ds.describe_indices()}
    assert len(segs["id_idx"]) == 1 and segs["id_idx"][0].uuid != first
    ds.drop_index("other")
    assert [d.name for d in lance.dataset(uri).describe_indices()] == ["id_idx"]
    assert lance.dataset(uri).read_transaction(ds.version).operation.removed_indices[0].name == "other"
    assert ds.has_index and lancefmt.dataset(uri).list_indices()[0]["type"] == "BTree"


def test_empty_index_then_optimize_trains_it(uri):
    ds = lancefmt.dataset(uri)
    ds.create_scalar_index("id", "BTREE", train=False)
    assert sorted(ds.describe_indices()[0].segments[0].fragment_ids) == []
    assert ds.stats.index_stats("id_idx")["index_type"] == lance.dataset(uri).stats.index_stats("id_idx")["index_type"]
    ds.optimize.optimize_indices()
    assert sorted(ds.describe_indices()[0].segments[0].fragment_ids) == [0, 1, 2]
    assert_answers_equal_full_scan(lance, uri, ["id = 5"], uses=["id_idx"])


def test_optimize_adds_a_delta_or_merges_as_pylance(tmp_path):
    coverage = {}
    for lib_name, lib in (("pylance", lance), ("lancefmt", lancefmt)):
        uri = str(tmp_path / lib_name)
        lance.write_dataset(index_table(2000), uri, max_rows_per_file=700)
        lib.dataset(uri).create_scalar_index("id", "BTREE")
        lance.write_dataset(index_table(300, 2000), uri, mode="append")
        ds = lib.dataset(uri)
        ds.optimize.optimize_indices(num_indices_to_merge=0)
        lance.write_dataset(index_table(300, 2300), uri, mode="append")
        steps = [[sorted(s.fragment_ids) for s in lance.dataset(uri).describe_indices()[0].segments]]
        lib.dataset(uri).optimize.optimize_indices()
        steps.append([sorted(s.fragment_ids) for s in lance.dataset(uri).describe_indices()[0].segments])
        lib.dataset(uri).optimize.optimize_indices(index_names=["id_idx"], retrain=True)
        steps.append([sorted(s.fragment_ids) for s in lance.dataset(uri).describe_indices()[0].segments])
        coverage[lib_name] = steps
        assert_answers_equal_full_scan(lance, uri, ["id IN (5, 2100, 2500)", "id > 2590"], uses=["id_idx"])
        lance.dataset(uri).validate()
    assert coverage["lancefmt"] == coverage["pylance"]
    assert coverage["lancefmt"][0] == [[0, 1, 2], [3]]


def test_delta_segments_are_answered_by_both_libraries(uri):
    lancefmt.dataset(uri).create_scalar_index("v", "BTREE")
    lance.write_dataset(index_table(500, 2000), uri, mode="append")
    lance.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    assert len(lancefmt.dataset(uri).describe_indices()[0].segments) == 2
    assert_answers_equal_full_scan(lance, uri, ["v = 7", "v > 90 OR v IS NULL"], uses=["v_idx"])


def test_distributed_segments_commit_as_one_index(uri):
    ds = lancefmt.dataset(uri)
    segs = [ds.create_index_uncommitted("id", "BTREE", name="id_idx", fragment_ids=[f])
            for f in (0, 1, 2)]
    assert all(sorted(s.fragment_ids) == [f] for s, f in zip(segs, (0, 1, 2)))
    assert not lancefmt.dataset(uri).describe_indices()  # nothing committed yet
    merged = ds.merge_existing_index_segments(segs[1:])
    assert sorted(merged.fragment_ids) == [1, 2]
    ds.commit_existing_index_segments("id_idx", "id", [segs[0], merged])
    assert [sorted(s.fragment_ids) for s in lance.dataset(uri).describe_indices()[0].segments] == [[0], [1, 2]]
    assert_answers_equal_full_scan(lance, uri, ["id = 1500", "id < 3"], uses=["id_idx"])


def test_commit_through_lance_operation_create_index(uri):
    ds = lancefmt.dataset(uri)
    seg = ds.create_index_uncommitted("id", "BTREE", fragment_ids=[0, 1, 2])
    assert isinstance(seg, lancefmt.Index)
    op = lancefmt.LanceOperation.CreateIndex(new_indices=[seg], removed_indices=[])
    lancefmt.LanceDataset.commit(uri, op, read_version=ds.version)
    assert_answers_equal_full_scan(lance, uri, ["id = 42"], uses=["id_idx"])


def test_use_scalar_index_false_and_prewarm(uri):
    ds = lancefmt.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    ds.prewarm_index("id_idx")
    assert "ScalarIndexQuery" not in ds.scanner(filter="id = 1", use_scalar_index=False).explain_plan()
    assert ds.to_table(filter="id = 1", use_scalar_index=False).equals(ds.to_table(filter="id = 1"))


def test_nested_field_index(tmp_path):
    uri = str(tmp_path / "ds")
    t = pa.table({"id": list(range(100)), "st": [{"a": i % 10} for i in range(100)]})
    lance.write_dataset(t, uri)
    lancefmt.dataset(uri).create_scalar_index("st.a", "BTREE")
    assert lance.dataset(uri).describe_indices()[0].name == "st.a_idx"
    assert_answers_equal_full_scan(lance, uri, ["st.a = 3"], uses=["st.a_idx"])


def test_scan_statistics_count_index_work_per_session(uri):
    """``scan_stats_callback`` reports I/O and index work; loaded index parts live in the
    dataset's session (a freshly opened dataset starts cold, a prewarmed one loads nothing)."""
    lancefmt.dataset(uri).create_scalar_index("id", "BTREE")
    seen = []
    ds = lancefmt.dataset(uri)
    ds.scanner(filter="id > 0", scan_stats_callback=seen.append).to_table()
    assert isinstance(seen[-1], lancefmt.ScanStatistics)
    assert seen[-1].parts_loaded > 0 and seen[-1].indices_loaded == 1 and seen[-1].iops > 0
    ds.scanner(filter="id > 0", scan_stats_callback=seen.append).to_table()
    assert seen[-1].parts_loaded == 0 and seen[-1].index_cache_hits > 0   # same session
    ds = lancefmt.dataset(uri)
    ds.scanner(filter="id > 0", scan_stats_callback=seen.append).to_table()
    assert seen[-1].parts_loaded > 0                                       # a new session
    ds = lancefmt.dataset(uri)
    ds.prewarm_index("id_idx")
    ds.scanner(filter="id > 0", scan_stats_callback=seen.append).to_table()
    assert seen[-1].parts_loaded == 0


def test_memory_pool_setting_refuses_a_build_it_cannot_hold(uri, monkeypatch):
    ds = lancefmt.dataset(uri)
    monkeypatch.setenv("LANCE_MEM_POOL_SIZE", "1024")
    with pytest.raises(RuntimeError, match="LANCE_MEM_POOL_SIZE"):
        ds.create_scalar_index("id", "BTREE")
    monkeypatch.setenv("LANCE_BYPASS_SPILLING", "1")
    ds.create_scalar_index("id", "BTREE")
    assert ds.has_index


def test_columns_named_like_sql_keywords_and_the_first_index_wins(tmp_path):
    uri = str(tmp_path / "kw")
    lance.write_dataset(pa.table({"values": list(range(1000))}), uri, max_rows_per_file=300)
    ds = lancefmt.dataset(uri)
    ds.create_scalar_index("values", "BTREE")
    ds.create_scalar_index("values", "BITMAP", name="values_bitmap")
    assert ds.count_rows("values == 5") == 1 and ds.count_rows("values > 990") == 9
    assert "@values_idx(BTree)" in ds.scanner(filter="values = 5").explain_plan()
