"""The scenarios of seeds/lance-multi-base-blog.md on local directories standing in for buckets,
checked by pylance 14.0.2 reading what lancefmt wrote, and lancefmt reading what pylance wrote
(multi-base datasets, clones, tags, branches)."""
import os
import shutil

import lance
import pyarrow as pa
import pytest
from lance import DatasetBasePath

import lancefmt
from lancefmt import BasePath

V = "2.2"  # the file format lancefmt writes by default; pylance is asked for the same when it writes


def rows(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "value": pa.array(range(start, start + n), pa.int64())})


def sort(t):
    return t.sort_by("id")


def pl_files(path):
    return sorted(os.path.join(r, n) for r, _, ns in os.walk(path) for n in ns)


@pytest.fixture
def buckets(tmp_path):
    return lambda name: str(tmp_path / name)


# -- Uber: one dataset over N buckets, writes round-robin ---------------------------------------

def test_uber_multi_bucket_round_robin_lancefmt_writes(buckets):
    root = buckets("bucket-1") + "/my_dataset"
    ds = lancefmt.write_dataset(
        rows(1000), root, max_rows_per_file=250,
        initial_bases=[BasePath(buckets("bucket-2"), name="bucket2"),
                       BasePath(buckets("bucket-3"), name="bucket3")],
        target_bases=["bucket2"])
    ds = lancefmt.write_dataset(rows(1000, 1000), ds, mode="append", max_rows_per_file=250,
                                target_bases=["bucket2", "bucket3"])
    ds = ds.add_bases([BasePath(buckets("bucket-4"), name="bucket4")])
    ds = lancefmt.write_dataset(rows(1000, 2000), ds, mode="append", target_bases=["bucket4"])
    assert [len(pl_files(buckets(f"bucket-{i}"))) for i in (2, 3, 4)] == [6, 2, 1]
    pl = lance.dataset(root)
    assert pl.count_rows() == 3000
    assert sort(pl.to_table()) == rows(3000)
    assert {i: (b.name, b.path) for i, b in pl.base_paths().items()} == {
        1: ("bucket2", buckets("bucket-2")), 2: ("bucket3", buckets("bucket-3")),
        3: ("bucket4", buckets("bucket-4"))}
    # pylance appends to the lancefmt dataset into one of the buckets; lancefmt reads it all
    lance.write_dataset(rows(10, 3000), root, mode="append", target_bases=["bucket3"],
                        data_storage_version=V)
    assert sort(lancefmt.dataset(root).to_table()) == rows(3010)


def test_uber_multi_bucket_pylance_writes(buckets):
    root = buckets("bucket-1") + "/my_dataset"
    pl = lance.write_dataset(rows(1000), root, max_rows_per_file=300, data_storage_version=V,
                             initial_bases=[DatasetBasePath(buckets("bucket-2"), name="bucket2"),
                                            DatasetBasePath(buckets("bucket-3"), name="bucket3")],
                             target_bases=["bucket2", "bucket3"])
    pl.add_bases([DatasetBasePath(buckets("bucket-4"), name="bucket4")])
    ds = lancefmt.dataset(root)
    assert {i: b.name for i, b in ds.base_paths.items()} == {1: "bucket2", 2: "bucket3",
                                                             3: "bucket4"}
    assert sort(ds.to_table()) == rows(1000)
    ds = lancefmt.write_dataset(rows(500, 1000), ds, mode="append", target_bases=["bucket4", 1],
                                max_rows_per_file=250)
    assert sort(lance.dataset(root).to_table()) == rows(1500)
    # lancefmt's add_bases is what pylance's is: pylance then writes into the new base
    ds.add_bases([BasePath(buckets("bucket-5"), name="bucket5")])
    assert lance.dataset(root).base_paths()[4].name == "bucket5"
    lance.write_dataset(rows(5, 1500), root, mode="append", target_bases=["bucket5"],
                        data_storage_version=V)
    assert len(pl_files(buckets("bucket-5"))) == 1
    assert lancefmt.dataset(root).count_rows() == 1505


def test_pylance_multibase_and_clone_read_in_every_version(buckets, storage_version):
    """Reading a pylance multi-base dataset and its shallow clone, in each file version pylance
    writes (lancefmt appends only in 2.0, so the write-back scenarios above stay at V)."""
    root = buckets("bucket-1") + "/my_dataset"
    pl = lance.write_dataset(rows(900), root, max_rows_per_file=300,
                             data_storage_version=storage_version,
                             initial_bases=[DatasetBasePath(buckets("bucket-2"), name="bucket2"),
                                            DatasetBasePath(buckets("bucket-3"), name="bucket3")],
                             target_bases=["bucket2", "bucket3"])
    pl.delete("id % 9 = 4")
    lance.dataset(root).shallow_clone(buckets("clone"), 2)
    for uri in (root, buckets("clone")):
        ours, theirs = lancefmt.dataset(uri), lance.dataset(uri)
        assert ours.data_storage_version == storage_version
        assert sort(ours.to_table()) == sort(theirs.to_table())
        assert ours.count_rows("value > 500") == theirs.count_rows("value > 500")
        assert ours.take([0, 333, 799]).to_pylist() == theirs.take([0, 333, 799]).to_pylist()


# -- hot/cold tiering ------------------------------------------------------------------------

def test_hot_cold_tiering(buckets):
    root = buckets("primary") + "/ds"
    cold = buckets("cold-bucket") + "/dataset-archive"
    ds = lancefmt.write_dataset(rows(600), root, max_rows_per_file=200,
                                initial_bases=[BasePath(cold, name="cold", is_dataset_root=True)],
                                target_bases=["cold"])
    ds = lancefmt.write_dataset(rows(100, 600), ds, mode="append")  # recent data: the root
    assert all(f.startswith(cold + "/data/") for f in pl_files(cold))
    # stage the archive onto the fast tier and point the base there: nothing else changes
    hot = buckets("lustre") + "/training-data"
    shutil.copytree(cold, hot)
    ds = ds.update_bases({"cold": hot})
    shutil.rmtree(cold)
    assert sort(lance.dataset(root).to_table()) == rows(700)
    assert lance.dataset(root).base_paths()[1].path == hot
    # and back to cold storage later
    shutil.copytree(hot, cold)
    lancefmt.dataset(root).update_bases({1: cold})
    shutil.rmtree(hot)
    assert lance.dataset(root).count_rows() == 700
    assert lance.dataset(root, version=ds.version - 1).base_paths()[1].path == cold


# -- multi-region, one region failed over ---------------------------------------------------------

def test_multi_region_failover(buckets):
    root = buckets("meta") + "/ds"
    us_east, eu_west = buckets("us-east-bucket") + "/data", buckets("eu-west-bucket") + "/data"
    ds = lancefmt.write_dataset(rows(800), root, max_rows_per_file=100,
                                initial_bases=[BasePath(us_east, name="us-east"),
                                               BasePath(eu_west, name="eu-west")],
                                target_bases=["us-east", "eu-west"])
    ds.delete("id % 10 = 0")
    backup = buckets("us-west-backup") + "/data"
    shutil.copytree(us_east, backup)            # the replica
    shutil.rmtree(buckets("us-east-bucket"))    # us-east goes down
    with pytest.raises(Exception):
        lance.dataset(root).to_table()
    eu_before = {f: os.path.getmtime(f) for f in pl_files(eu_west)}
    failed_over = ds.update_bases({"us-east": backup})
    assert failed_over.base_paths[2].path == eu_west  # unchanged
    expected = rows(800).filter(pa.compute.not_equal(pa.compute.modulo(rows(800)["id"], 10), 0))
    assert sort(lance.dataset(root).to_table()) == expected
    assert sort(lancefmt.dataset(root).to_table()) == expected
    assert {f: os.path.getmtime(f) for f in pl_files(eu_west)} == eu_before
    # pylance keeps writing to the failed-over dataset; lancefmt reads it
    lance.write_dataset(rows(5, 800), root, mode="append", target_bases=["us-east"],
                        data_storage_version=V)
    assert len(pl_files(backup)) == 5
    assert lancefmt.dataset(root).count_rows() == 725


def test_pylance_commits_over_a_concurrent_relocation(buckets):
    """pylance planned an append at version N; lancefmt relocated a base meanwhile (N+1): pylance's
    conflict check reads our UpdateBases transaction, finds it compatible, and commits N+2."""
    root = buckets("r") + "/ds"
    ds = lancefmt.write_dataset(rows(10), root, initial_bases=[BasePath(buckets("a"), name="a")],
                                target_bases=["a"])
    stale = lance.dataset(root)
    shutil.copytree(buckets("a"), buckets("a2"))
    ds.update_bases({"a": buckets("a2")})
    lance.write_dataset(rows(5, 10), stale, mode="append", data_storage_version=V)
    pl = lance.dataset(root)
    assert pl.version == 3 and pl.base_paths()[1].path == buckets("a2")
    assert sort(lancefmt.dataset(root).to_table()) == rows(15)


# -- shallow clones ------------------------------------------------------------------------------

def test_shallow_clone_lancefmt_to_pylance(buckets):
    src = buckets("production") + "/main-dataset"
    ds = lancefmt.write_dataset(rows(100), src, max_rows_per_file=40)
    ds.delete("id < 5")
    ds.tags.create("v1.0", 2)
    clone = ds.shallow_clone(buckets("experiments") + "/test-variant", "v1.0")
    pl = lance.dataset(clone.uri)
    assert pl.version == 2 and sort(pl.to_table()) == rows(95, 5)
    assert pl.base_paths()[0].path == src and pl.base_paths()[0].is_dataset_root
    # the clone appends and deletes on its own (with pylance); the source is unchanged
    lance.write_dataset(rows(10, 100), clone.uri, mode="append", data_storage_version=V)
    lance.dataset(clone.uri).delete("id >= 105")
    assert sort(lancefmt.dataset(clone.uri).to_table()) == rows(100, 5)
    assert sort(lance.dataset(src).to_table()) == rows(95, 5)
    assert len(pl_files(src + "/_versions")) == 3  # two manifests + the hint: untouched
    # a clone of the clone, by pylance, read by lancefmt
    lance.dataset(clone.uri).shallow_clone(buckets("c2"), 4)
    c2 = lancefmt.dataset(buckets("c2"))
    assert c2.base_paths[1].path == clone.uri and sort(c2.to_table()) == rows(100, 5)


def test_shallow_clone_pylance_to_lancefmt(buckets):
    src = buckets("src")
    pl = lance.write_dataset(rows(50), src, max_rows_per_file=20, data_storage_version=V,
                             initial_bases=[DatasetBasePath(buckets("b1"), name="b1")],
                             target_bases=["b1"])
    pl.delete("id = 7")
    pl = lance.dataset(src)
    pl.tags.create("t", 2)
    pl.shallow_clone(buckets("clone"), "t")
    c = lancefmt.dataset(buckets("clone"))
    assert c.version == 2 and c.base_paths[0] == BasePath(src, None, True, 0)
    assert sort(c.to_table()) == sort(pl.to_table())
    c = lancefmt.write_dataset(rows(3, 500), c, mode="append")
    c.delete("id < 10")
    assert lance.dataset(buckets("clone")).count_rows() == 49 - 9 + 3
    # our clone of their dataset is the same manifest shape theirs is
    ours = lancefmt.dataset(src).shallow_clone(buckets("ours"), "t")
    theirs = lancefmt.dataset(buckets("clone"), 2)
    assert ours.base_paths == theirs.base_paths
    assert [list(f.files) for f in ours.manifest.fragments] == \
        [list(f.files) for f in theirs.manifest.fragments]
    assert ours.manifest.reader_feature_flags == theirs.manifest.reader_feature_flags


# -- tags and branches both ways ------------------------------------------------------------------

def test_tags_both_ways(buckets):
    uri = buckets("ds")
    lance.write_dataset(rows(5), uri, data_storage_version=V)
    lance.write_dataset(rows(5, 5), uri, mode="append", data_storage_version=V)
    lance.dataset(uri).tags.create("pl", 1)
    ds = lancefmt.dataset(uri)
    assert ds.tags.list()["pl"]["version"] == 1
    assert lancefmt.dataset(uri, version="pl").count_rows() == 5
    ds.tags.create("lf", 2)
    assert lance.dataset(uri, version="lf").count_rows() == 10
    assert lance.dataset(uri).tags.list()["lf"]["version"] == 2
    lance.dataset(uri).tags.delete("lf")
    assert "lf" not in ds.tags.list()


def test_branches_both_ways(buckets):
    uri = buckets("ds")
    lance.write_dataset(rows(10), uri, data_storage_version=V)
    lance.write_dataset(rows(10, 10), uri, mode="append", data_storage_version=V)
    # pylance's branch, read and extended by lancefmt
    lance.dataset(uri).create_branch("feat/x", 1)
    b = lancefmt.dataset(uri).checkout_branch("feat/x")
    assert (b.version, b.count_rows(), b.branch) == (1, 10, "feat/x")
    b = lancefmt.write_dataset(rows(3, 100), b, mode="append")
    pl_b = lance.dataset(uri).checkout_version(("feat/x", None))
    assert pl_b.version == 2 and pl_b.count_rows() == 13
    # lancefmt's branch (from that branch), read and extended by pylance
    c = b.create_branch("feat/y")
    pl_c = lance.dataset(uri).checkout_version(("feat/y", None))
    assert sort(pl_c.to_table()) == sort(b.to_table())
    listed = lance.dataset(uri).branches.list()
    assert listed["feat/y"]["parent_branch"] == "feat/x" and listed["feat/y"]["parent_version"] == 2
    assert [m[0] for m in listed["feat/y"]["branch_identifier"]] == [1, 2]
    lance.write_dataset(rows(2, 200), pl_c, mode="append", data_storage_version=V)
    assert lancefmt.dataset(uri).checkout_branch("feat/y").count_rows() == 15
    # a tag on a lancefmt branch version opens that branch in pylance
    c.tags.create("y1")
    assert lance.dataset(uri, version="y1").count_rows() == 13
    assert lancefmt.dataset(uri).count_rows() == 20


# -- portability by cp -r ------------------------------------------------------------------------

def test_portability_cp_r(buckets):
    src = buckets("here") + "/ds"
    ds = lancefmt.write_dataset(rows(30), src, max_rows_per_file=10)
    ds.delete("id = 3")
    ds.tags.create("t", 1)
    dst = buckets("there") + "/ds"
    before = {os.path.relpath(f, src): open(f, "rb").read() for f in pl_files(src)}
    shutil.copytree(src, dst)
    shutil.rmtree(src)
    # no metadata change: every file at the new place is the old one, byte for byte
    assert {os.path.relpath(f, dst): open(f, "rb").read() for f in pl_files(dst)} == before
    assert sort(lance.dataset(dst).to_table()) == sort(lancefmt.dataset(dst).to_table())
    assert lance.dataset(dst).count_rows() == 29 and lance.dataset(dst, version="t").count_rows() == 30


def test_portability_root_and_bases_with_update_bases(buckets):
    src, b1, b2 = buckets("old/ds"), buckets("old/b1"), buckets("old/b2")
    ds = lancefmt.write_dataset(rows(40), src, max_rows_per_file=10,
                                initial_bases=[BasePath(b1, name="b1"),
                                               BasePath(b2, name="b2", is_dataset_root=True)],
                                target_bases=["b1", "b2"])
    ds.delete("id < 3")
    shutil.copytree(buckets("old"), buckets("new"))
    shutil.rmtree(buckets("old"))
    moved = lancefmt.dataset(buckets("new/ds")).update_bases(
        {"b1": buckets("new/b1"), "b2": buckets("new/b2")})
    assert moved.storage_prefixes()[0].prefix.startswith(buckets("new"))
    assert sort(lance.dataset(buckets("new/ds")).to_table()) == rows(37, 3)
    lancefmt.dataset(buckets("new/ds")).validate()


def test_clone_source_failover_relocates_base_zero(buckets):
    """A clone's source (base id 0) moves to a replica: update_bases({0: replica}) on the clone,
    then pylance reads the clone from the replica."""
    src = buckets("region-a") + "/ds"
    lancefmt.write_dataset(rows(30), src, max_rows_per_file=10).delete("id = 0")
    clone = lancefmt.dataset(src).shallow_clone(buckets("exp") + "/clone")
    clone = lancefmt.write_dataset(rows(5, 30), clone, mode="append")
    replica = buckets("region-b") + "/ds"
    shutil.copytree(src, replica)
    shutil.rmtree(buckets("region-a"))
    moved = clone.update_bases({0: replica})
    assert moved.base_paths[0] == BasePath(replica, None, True, 0)
    assert sort(lance.dataset(clone.uri).to_table()) == rows(34, 1)
    lance.write_dataset(rows(1, 99), clone.uri, mode="append", data_storage_version=V)
    assert lancefmt.dataset(clone.uri).count_rows() == 35
