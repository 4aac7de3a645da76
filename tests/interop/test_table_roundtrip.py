"""Write direction: lancefmt reads a pylance manifest, commits the next version with its own
writer (its own inline transaction, V2 or V1 name as the dataset uses, fresh timestamp), and
pylance opens that version, reads identical data, validates it and commits on top of it."""
import shutil

import lance
import pytest

from lancefmt._proto import table_pb2
from lancefmt.table.manifest import write_manifest_file
from lancefmt.table.versions import latest_manifest, load_manifest, manifest_uri

from table_datasets import build_datasets, commit_config_update, table


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return build_datasets(tmp_path_factory.mktemp("table_roundtrip"))


@pytest.mark.parametrize("name", ["v20", "v21_rowids", "v22_multibase", "v1_naming",
                                  "bitmap_deletions", "indexed", "clone"])
def test_pylance_reads_our_commit(datasets, tmp_path, name):
    uri = str(tmp_path / name)
    src = datasets[name]
    shutil.copytree(src, uri, symlinks=True)
    before = lance.dataset(uri)
    expected = before.to_table()
    old_version, new = commit_config_update(uri, "lancefmt.roundtrip", "yes")

    ds = lance.dataset(uri)
    assert ds.version == old_version + 1
    assert ds.to_table().equals(expected)
    assert ds.count_rows() == before.count_rows()
    assert ds.config()["lancefmt.roundtrip"] == "yes"
    ds.validate()
    assert [v["version"] for v in ds.versions()][-1] == old_version + 1
    assert ds.versions()[-1]["metadata"] == before.versions()[-1]["metadata"]
    txn = ds.read_transaction(ds.version)
    assert type(txn.operation).__name__ == "UpdateConfig"
    assert txn.read_version == old_version
    assert ds.get_fragments()[0].metadata == before.get_fragments()[0].metadata
    assert lance.dataset(uri, version=old_version).to_table().equals(expected)
    if name == "indexed":
        assert [i.name for i in ds.describe_indices()] == ["x_idx"]
        assert ds.to_table(filter="x = 150").num_rows == 1

    # pylance commits on top of our version, and we read its result
    lance.write_dataset(table(3, 20_000), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("x = 20001")
    ds = lance.dataset(uri)
    assert ds.version == old_version + 3
    assert ds.count_rows() == before.count_rows() + 2
    assert ds.config()["lancefmt.roundtrip"] == "yes"
    ds.validate()
    m = load_manifest(uri)
    assert m.version == ds.version
    assert m.fragments.total_live_rows == ds.count_rows()
    assert m.manifest.config["lancefmt.roundtrip"] == "yes"


def test_our_commit_keeps_the_naming_scheme(datasets, tmp_path):
    uri = str(tmp_path / "v1")
    shutil.copytree(datasets["v1_naming"], uri)
    v, _ = commit_config_update(uri, "a", "b")
    assert latest_manifest(uri).uri.endswith(f"/_versions/{v + 1}.manifest")
    uri2 = str(tmp_path / "v2")
    shutil.copytree(datasets["v20"], uri2)
    v, _ = commit_config_update(uri2, "a", "b")
    loc = latest_manifest(uri2)
    assert loc.scheme == "v2" and loc.version == v + 1


def test_commit_refused_when_version_exists(datasets, tmp_path):
    uri = str(tmp_path / "race")
    shutil.copytree(datasets["v20"], uri)
    old = load_manifest(uri)
    m = table_pb2.Manifest()
    m.CopyFrom(old.manifest)
    # the version that already exists: put-if-absent refuses, nothing changes
    target = manifest_uri(uri, old.version)
    before = open(target, "rb").read()
    assert write_manifest_file(target, m, old.transaction()) is None
    assert open(target, "rb").read() == before
