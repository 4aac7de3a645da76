"""The older distributed BTREE build: workers share one index uuid, each writes its part
(``part_{fragment << 32}_page_data.lance`` / ``_page_lookup.lance``), ``merge_index_metadata``
merges the parts into the index's files, and a hand-made ``CreateIndex`` (an ``Index`` naming
no details) publishes it; Lance then infers the type from the files, as lancefmt does."""
import os
import uuid

import pyarrow as pa
import pytest

import lancefmt
from index_checks import assert_answers_equal_full_scan, index_table

lance = pytest.importorskip("lance")

FILTERS = ["id = 100", "id >= 200 AND id < 800", "id > 1990", "v = 7", "v IS NULL"]


def publish(uri, column, uid, name="dist_idx", fragments=None):
    ds = lancefmt.dataset(uri)
    frags = fragments if fragments is not None else {f.fragment_id for f in ds.get_fragments()}
    index = lancefmt.Index(uuid=uid, name=name, fields=[ds.schema.get_field_index(column)],
                                   dataset_version=ds.version, fragment_ids=set(frags), index_version=0)
    op = lancefmt.LanceOperation.CreateIndex(new_indices=[index], removed_indices=[])
    return lancefmt.LanceDataset.commit(uri, op, read_version=ds.version)


@pytest.mark.parametrize("stable", [False, True])
def test_workers_share_a_uuid_and_the_merge_publishes_one_index(tmp_path, stable, storage_version):
    uri = str(tmp_path / "ds")
    lance.write_dataset(index_table(2000), uri, max_rows_per_file=700, enable_stable_row_ids=stable,
                        data_storage_version=storage_version)
    lance.dataset(uri).delete("id % 97 = 3")
    uid = str(uuid.uuid4())
    ds = lancefmt.dataset(uri)
    for f in ds.get_fragments():  # one worker per fragment, same uuid: no collision
        assert ds.create_scalar_index("id", "BTREE", name="dist_idx", replace=False, index_uuid=uid,
                                      fragment_ids=[f.fragment_id]) is None
    d = tmp_path / "ds" / "_indices" / uid
    assert sorted(os.listdir(d)) == sorted(f"part_{f << 32}_page_{k}.lance" for f in (0, 1, 2)
                                           for k in ("data", "lookup"))
    assert not lancefmt.dataset(uri).describe_indices()  # nothing committed yet
    ds.merge_index_metadata(uid, index_type="BTREE")
    assert sorted(os.listdir(d)) == ["page_data.lance", "page_lookup.lance"]
    publish(uri, "id", uid)
    assert_answers_equal_full_scan(lance, uri, FILTERS[:3], uses=["dist_idx"])
    for lib in (lance, lancefmt):  # pylance 14 lists a details-less index as Unknown...
        assert lib.dataset(uri).list_indices()[0]["type"] == "Unknown"
    # ... and reports the type it infers in its statistics
    mine, theirs = (lib.dataset(uri).stats.index_stats("dist_idx") for lib in (lancefmt, lance))
    assert mine == theirs and mine["index_type"] == "BTree" and mine["num_indexed_rows"] > 0
    lance.dataset(uri).validate()


def test_parts_equal_a_single_build(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(index_table(2000), uri, max_rows_per_file=700)
    uid = str(uuid.uuid4())
    ds = lancefmt.dataset(uri)
    for frags in ([2], [0, 1]):
        ds.create_scalar_index("v", "BTREE", index_uuid=uid, fragment_ids=frags)
    ds.merge_index_metadata(uid, "btree")
    lance.dataset(uri).create_scalar_index("v", "BTREE", name="whole")
    whole = lance.dataset(uri).describe_indices()[0].segments[0].uuid
    from lance.file import LanceFileReader
    for f in ("page_data.lance", "page_lookup.lance"):
        a = LanceFileReader(f"{uri}/_indices/{uid}/{f}").read_all().to_table()
        b = LanceFileReader(f"{uri}/_indices/{whole}/{f}").read_all().to_table()
        if f == "page_data.lance":
            a, b = (t.sort_by([("values", "ascending"), ("ids", "ascending")]) for t in (a, b))
        assert a.equals(b), f


def test_merge_errors(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(index_table(200), uri)
    ds = lancefmt.dataset(uri)
    with pytest.raises(NotImplementedError, match="received BITMAP"):
        ds.merge_index_metadata(str(uuid.uuid4()), "BITMAP")
    with pytest.raises(NotImplementedError, match="BTREE and INVERTED indices only"):
        ds.merge_index_metadata(str(uuid.uuid4()), "IVF_PQ")
    with pytest.raises(ValueError, match="no staged INVERTED partitions"):
        ds.merge_index_metadata(str(uuid.uuid4()), "INVERTED")
    with pytest.raises(ValueError, match="No partition metadata files found"):
        ds.merge_index_metadata(str(uuid.uuid4()), "BTREE")
    uid = str(uuid.uuid4())
    ds.create_scalar_index("id", "BTREE", index_uuid=uid, fragment_ids=[0])
    os.remove(tmp_path / "ds" / "_indices" / uid / "part_0_page_lookup.lance")
    with pytest.raises(ValueError, match="No partition metadata files found"):
        ds.merge_index_metadata(uid, "BTREE")


def test_other_types_keep_returning_a_segment(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(index_table(500), uri, max_rows_per_file=200)
    seg = lancefmt.dataset(uri).create_scalar_index("v", "BITMAP", fragment_ids=[0])
    assert isinstance(seg, lancefmt.Index) and sorted(seg.fragment_ids) == [0]


@pytest.mark.parametrize("kind, column, want", [("BITMAP", "v", "Bitmap"), ("LABEL_LIST", "tags", "LabelList"),
                                                ("BTREE", "s", "BTree")])
def test_an_index_without_details_is_used_as_lance_infers_it(tmp_path, kind, column, want):
    """A pylance-built index copied to another dataset and committed by hand with no details
    (pylance's test_commit_index): both libraries answer from it."""
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    for u in (src, dst):
        lance.write_dataset(index_table(1000), u, max_rows_per_file=400)
    lance.dataset(src).create_scalar_index(column, kind)
    uid = lance.dataset(src).describe_indices()[0].segments[0].uuid
    import shutil
    shutil.copytree(f"{src}/_indices/{uid}", f"{dst}/_indices/{uid}")
    publish(dst, column, uid, name=f"{column}_idx")
    text = {"v": "v = 7", "tags": "array_has_any(tags, ['t1'])", "s": "s = 's03'"}[column]
    assert_answers_equal_full_scan(lance, dst, [text], uses=[f"{column}_idx"])
    assert lancefmt.dataset(dst).stats.index_stats(f"{column}_idx")["index_type"] == \
        lance.dataset(dst).stats.index_stats(f"{column}_idx")["index_type"] == want


def test_segment_builds_refuse_a_shared_uuid_for_btree_as_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(index_table(500), uri, max_rows_per_file=200)
    for lib in (lance, lancefmt):
        with pytest.raises(ValueError, match="index_uuid is no longer accepted for BTree"):
            lib.dataset(uri).create_index_uncommitted("id", "BTREE", index_uuid=str(uuid.uuid4()),
                                                      fragment_ids=[0])
