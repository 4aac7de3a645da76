"""Shallow clones: the manifest Lance's Clone commit produces, independence, clones of clones."""
import os

import pyarrow as pa
import pytest

import lancefmt
from lancefmt import BasePath, DatasetExistsError
from lancefmt.table.commit import read_transaction_of
from lancefmt.table.transaction import Clone


def table(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


@pytest.fixture
def source(tmp_path):
    uri = str(tmp_path / "src")
    lancefmt.write_dataset(table(10), uri)
    ds = lancefmt.write_dataset(table(10, 10), uri, mode="append")
    ds.tags.create("v2", 2)
    ds.delete("id = 3")  # version 3
    return ds


def test_clone_manifest_as_lance_builds_it(source, tmp_path):
    target = str(tmp_path / "clone")
    c = source.shallow_clone(target)
    assert c.version == source.version == 3                       # version number kept
    assert c.base_paths == {0: BasePath(source.uri, None, True, 0)}  # id 0: no bases before
    for f in c.manifest.fragments:
        assert [df.base_id for df in f.files] == [0]
        assert not f.HasField("deletion_file") or f.deletion_file.base_id == 0
    assert c.manifest.reader_feature_flags == 17 and c.manifest.writer_feature_flags == 17
    txn = read_transaction_of(c.manifest_file, c.uri, c.snapshot.store)
    assert txn.operation == Clone(True, None, 3, source.uri, None)
    assert txn.read_version == 3
    assert c.manifest.transaction_file.startswith("3-")
    assert sorted(os.listdir(target)) == ["_transactions", "_versions"]  # no data copied
    assert c.to_table() == source.to_table()


def test_clone_by_tag_and_version(source, tmp_path):
    c = source.shallow_clone(str(tmp_path / "c1"), "v2")
    assert c.version == 2 and c.count_rows() == 20
    c = source.shallow_clone(str(tmp_path / "c2"), 1)
    assert c.version == 1 and c.count_rows() == 10
    with pytest.raises(DatasetExistsError):
        source.shallow_clone(str(tmp_path / "c2"))


def test_clone_evolves_independently(source, tmp_path):
    c = source.shallow_clone(str(tmp_path / "clone"))
    c = lancefmt.write_dataset(table(5, 100), c, mode="append")
    c.delete("id < 5")
    assert c.count_rows() == 19 - 4 + 5  # 0, 1, 2, 4 (3 was already deleted)
    new = [f for f in c.manifest.fragments if not f.files[0].HasField("base_id")]
    assert len(new) == 1 and os.path.exists(os.path.join(c.uri, "data", new[0].files[0].path))
    # the rewritten deletion files live in the clone, not in the source
    assert all(not f.deletion_file.HasField("base_id") for f in c.manifest.fragments
               if f.HasField("deletion_file") and f.id == 0)
    assert lancefmt.dataset(source.uri).count_rows() == 19
    assert lancefmt.dataset(source.uri).version == 3


def test_clone_of_clone_and_of_multibase(source, tmp_path):
    c1 = source.shallow_clone(str(tmp_path / "c1"))
    c1 = lancefmt.write_dataset(table(5, 100), c1, mode="append")
    c2 = c1.shallow_clone(str(tmp_path / "c2"))
    assert c2.base_paths == {0: BasePath(source.uri, None, True, 0),
                             1: BasePath(c1.uri, None, True, 1)}
    assert [f.files[0].base_id for f in c2.manifest.fragments] == [0, 0, 1]
    assert c2.to_table() == c1.to_table()
    mb = lancefmt.write_dataset(table(6), str(tmp_path / "mb"), max_rows_per_file=3,
                                initial_bases=[BasePath(str(tmp_path / "b1"), name="b1")],
                                target_bases=["b1"])
    c3 = mb.shallow_clone(str(tmp_path / "c3"))
    assert c3.base_paths[0] == BasePath(mb.uri, None, True, 0)    # smallest unused id
    assert [f.files[0].base_id for f in c3.manifest.fragments] == [1, 1]
    assert c3.to_table() == table(6)
