"""Multi-base datasets: round-robin writes, add_bases, update_bases (relocation), per-base
storage options, storage prefixes, and paths that escape their base."""
import os
import shutil

import pyarrow as pa
import pytest

import lancefmt
from lancefmt import BasePath, InvalidArgumentError, InvalidPathError
from lancefmt.table.commit import read_transaction_of
from lancefmt.table.feature_flags import FLAG_BASE_PATHS
from lancefmt.table.transaction import RELOCATE_BASES_KEY, UpdateBases


def table(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "v": pa.array([float(i) for i in range(start, start + n)])})


def files_under(path):
    out = []
    for root, _, names in os.walk(path):
        out += [os.path.join(root, n) for n in names]
    return sorted(out)


@pytest.fixture
def layout(tmp_path):
    return {k: str(tmp_path / k) for k in ("root", "b1", "b2", "b3", "b4")}


def make(layout, **kw):
    return lancefmt.write_dataset(
        table(12), layout["root"], max_rows_per_file=3,
        initial_bases=[BasePath(layout["b1"], name="b1"), BasePath(layout["b2"], name="b2"),
                       BasePath(layout["b3"], name="b3", is_dataset_root=True)], **kw)


def test_round_robin_over_target_bases(layout):
    ds = make(layout, target_bases=["b1", 2, "b3"])
    assert {i: b.name for i, b in ds.base_paths.items()} == {1: "b1", 2: "b2", 3: "b3"}
    # 4 files round-robin: b1, b2, b3, b1; non-root bases hold files directly, a dataset-root
    # base under data/
    assert len(files_under(layout["b1"])) == 2
    assert len(files_under(layout["b2"])) == 1
    assert [os.path.relpath(f, layout["b3"]).split(os.sep)[0] for f in files_under(layout["b3"])] == ["data"]
    assert not os.path.exists(os.path.join(layout["root"], "data"))
    assert [f.files[0].base_id for f in ds.manifest.fragments] == [1, 2, 3, 1]
    assert ds.manifest.reader_feature_flags & FLAG_BASE_PATHS
    assert ds.manifest.writer_feature_flags & FLAG_BASE_PATHS
    assert ds.to_table() == table(12)


def test_target_base_unknown_is_refused(layout):
    with pytest.raises(InvalidArgumentError):
        make(layout, target_bases=["nope"])


def test_add_bases_assigns_max_plus_one_and_records_update_bases(layout):
    ds = make(layout)
    ds2 = ds.checkout_version(ds.version)
    assert ds2.add_bases([BasePath(layout["b4"], name="b4")],
                         transaction_properties={"who": "me"}) is ds2  # moved, as pylance
    assert ds2.version == ds.version + 1
    assert ds2.base_paths[4] == BasePath(layout["b4"], "b4", False, 4)
    txn = read_transaction_of(ds2.manifest_file, ds2.uri, ds2.snapshot.store)
    assert isinstance(txn.operation, UpdateBases) and not txn.operation.relocate
    assert [b.id for b in txn.operation.new_bases] == [0]  # as pylance sends it
    assert txn.transaction_properties == {"who": "me"}
    ds3 = lancefmt.write_dataset(table(3, 12), ds2, mode="append", target_bases=["b4"])
    assert len(files_under(layout["b4"])) == 1
    assert ds3.count_rows() == 15


@pytest.mark.parametrize("base", [BasePath("/elsewhere", name="b1"), BasePath("/x", name=None)])
def test_add_bases_refuses_name_or_path_in_use(layout, base):
    ds = make(layout)
    if base.name is None:  # Lance treats two unnamed bases as the same name
        ds = ds.add_bases([BasePath("/y")])
    with pytest.raises(InvalidArgumentError):
        ds.add_bases([base])
    with pytest.raises(InvalidArgumentError):
        ds.add_bases([BasePath(layout["b2"], name="fresh")])


def test_update_bases_relocates_without_touching_data(layout, tmp_path):
    ds = make(layout, target_bases=["b1", "b2"])
    before = {f: os.path.getmtime(f) for b in ("b1", "b2", "root") for f in files_under(layout[b])}
    moved = str(tmp_path / "b1-replica")
    shutil.copytree(layout["b1"], moved)
    ds2 = ds.checkout_version(ds.version).update_bases({"b1": moved})
    assert ds2.version == ds.version + 1
    assert ds2.base_paths[1] == BasePath(moved, "b1", False, 1)
    assert ds2.base_paths[2] == ds.base_paths[2]
    # the new version differs only in base_paths (and version bookkeeping)
    a, b = ds.manifest, ds2.manifest
    assert list(a.fragments) == list(b.fragments) and list(a.fields) == list(b.fields)
    txn = read_transaction_of(ds2.manifest_file, ds2.uri, ds2.snapshot.store)
    assert txn.kind == "update_bases" and txn.operation.relocate
    assert txn.transaction_properties[RELOCATE_BASES_KEY] == "true"
    assert [(p.id, p.path) for p in txn.operation.new_bases] == [(1, moved)]
    # only a manifest and a transaction file were written; no data file was touched
    after = {f: os.path.getmtime(f) for b in ("b1", "b2", "root") for f in files_under(layout[b])}
    new = set(after) - set(before)
    assert {os.path.basename(os.path.dirname(f)) for f in new} <= {"_versions", "_transactions"}
    assert all(after[f] == before[f] for f in before if "latest_version_hint" not in f)
    shutil.rmtree(layout["b1"])  # the old location is gone: reads use the replica
    assert ds2.to_table() == table(12)
    # by id, with a BasePath (rename too), and the old version still points at the old place
    ds3 = ds2.update_bases({1: BasePath(moved, name="b1-west")})
    assert ds3.base_paths[1].name == "b1-west"
    with pytest.raises((FileNotFoundError, lancefmt.CorruptFileError), match="not found"):
        ds.to_table()


def test_update_bases_errors(layout):
    ds = make(layout)
    with pytest.raises(InvalidArgumentError):
        ds.update_bases({"nope": "/x"})
    with pytest.raises(InvalidArgumentError):
        ds.update_bases({1: layout["b2"]})  # collides with base 2's path
    with pytest.raises(InvalidArgumentError):
        ds.update_bases({})
    with pytest.raises(InvalidPathError):
        ds.update_bases({1: "/data/../../etc"})
    with pytest.raises(InvalidPathError):
        ds.add_bases([BasePath("s3://bucket/a/../b", name="bad")])
    with pytest.raises(InvalidPathError):
        lancefmt.write_dataset(table(1), layout["root"] + "2",
                               initial_bases=[BasePath("/tmp/../x", name="x")])


def test_data_file_path_escaping_its_base_is_refused(layout):
    ds = make(layout, target_bases=["b1"])
    frag = ds.manifest.fragments[0]
    frag.files[0].path = "../" + frag.files[0].path
    op = lancefmt.Operation.Overwrite(list(ds.manifest.fields), [lancefmt.FragmentMetadata(frag)])
    bad = lancefmt.commit(ds.uri, op, ds.version)
    with pytest.raises(InvalidPathError):
        bad.to_table()


def test_relocation_conflicts_with_concurrent_writes_into_that_base(layout):
    ds = make(layout)
    read_version = ds.version
    frags = lancefmt.write_fragments(table(3), ds.uri, target_bases=["b1"])
    ds.update_bases({"b1": layout["b4"]})
    with pytest.raises(lancefmt.CommitConflictError):
        lancefmt.commit(ds.uri, lancefmt.Operation.Append(frags), read_version)
    # a write into another base is still fine
    frags = lancefmt.write_fragments(table(3), ds.uri, target_bases=["b2"])
    assert lancefmt.commit(ds.uri, lancefmt.Operation.Append(frags), read_version).count_rows() == 15


def test_metadata_only_commit_keeps_large_fragment_list(layout):
    ds = make(layout)
    for _ in range(3):
        ds = lancefmt.write_dataset(table(3), ds, mode="append")
    ds2 = ds.checkout_version(ds.version).update_bases({2: layout["b4"]})
    assert [f.id for f in ds2.manifest.fragments] == [f.id for f in ds.manifest.fragments]
    assert ds2.manifest.max_fragment_id == ds.manifest.max_fragment_id
    assert ds2.manifest.reader_feature_flags == ds.manifest.reader_feature_flags


def test_storage_prefixes(layout):
    ds = make(layout, target_bases=["b1", "b3"])
    ds.delete("id = 0")
    got = {(p.kind, p.base_id): (p.prefix, p.files) for p in ds.storage_prefixes()}
    assert got == {
        ("root", None): (ds.uri, 0),
        ("data", 1): (layout["b1"], 2),
        ("data", 3): (layout["b3"] + "/data", 2),
        ("deletions", None): (ds.uri + "/_deletions", 1),
    }


def test_per_base_storage_options(s3_uri, tmp_path):
    """One base lives in an S3 bucket that needs its own endpoint and credentials; the root is
    a local directory that needs none."""
    import s3fs

    uri, s3_server = s3_uri
    fs = s3fs.S3FileSystem(**s3_server)
    bucket = uri[len("s3://"):].split("/")[0]
    root = str(tmp_path / "root")
    params = {"cold": s3_server}
    ds = lancefmt.write_dataset(table(9), root, max_rows_per_file=3,
                                initial_bases=[BasePath(f"s3://{bucket}/cold", name="cold")],
                                target_bases=["cold"], base_store_params=params)
    assert len(fs.ls(f"{bucket}/cold")) == 3
    assert not os.path.exists(os.path.join(root, "data"))
    assert lancefmt.dataset(root, base_store_params=params).to_table() == table(9)
    # keyed by base URI or id works too, and the options travel with pickled fragments
    import pickle

    by_uri = lancefmt.dataset(root, base_store_params={f"s3://{bucket}/cold": s3_server})
    frag = pickle.loads(pickle.dumps(by_uri.get_fragments()[1]))
    assert frag.to_table() == table(3, 3)
    assert lancefmt.dataset(root, base_store_params={1: s3_server}).count_rows(filter="id > 4") == 4
    # appends through the Dataset reuse its per-base options; deletes write locally
    ds = lancefmt.write_dataset(table(3, 9), ds, mode="append", target_bases=["cold"])
    ds.delete("id < 2")
    assert ds.to_table() == table(10, 2)
    # the bucket's options apply below that base only
    ctx = ds.snapshot.ctx
    assert ctx.options_for(f"s3://{bucket}/cold/x.lance") == s3_server
    assert ctx.options_for(root + "/_deletions/x.arrow") is None
