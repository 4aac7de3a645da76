import os
import pickle

import pytest

from lancefmt import BasePath, CorruptFileError, InvalidArgumentError, InvalidPathError
from lancefmt._proto import table_pb2
from lancefmt.table.base_paths import BasePathResolver, assign_base_ids, resolve_base_uri


def test_base_path_proto_round_trip():
    b = BasePath("s3://bucket/x", name="hot", is_dataset_root=True, id=3)
    pb = b.to_pb()
    assert (pb.id, pb.name, pb.is_dataset_root, pb.path) == (3, "hot", True, "s3://bucket/x")
    assert BasePath.from_pb(pb) == b
    unnamed = BasePath("/data", id=0).to_pb()
    assert not unnamed.HasField("name")
    assert BasePath.from_pb(unnamed).name is None
    assert pickle.loads(pickle.dumps(b)) == b
    assert "hot" in repr(b)
    with pytest.raises(InvalidArgumentError):
        BasePath("/x").to_pb()  # no id yet
    with pytest.raises(InvalidArgumentError):
        BasePath("/x", id=1 << 32)
    with pytest.raises(InvalidArgumentError):
        BasePath("")


def test_assign_base_ids_like_pylance():
    # pylance: DatasetBasePath(id=5) keeps 5, the unnamed-id ones get 1, 2, ... skipping used ids.
    out = assign_base_ids([], [BasePath("/a", name="a", id=5), BasePath("/b", name="b")])
    assert [(b.name, b.id) for b in out] == [("a", 5), ("b", 1)]
    more = assign_base_ids([1, 5], [BasePath("/c", name="c")])
    assert more[0].id == 2
    with pytest.raises(InvalidArgumentError):
        assign_base_ids([1], [BasePath("/d", id=1)])


@pytest.fixture
def resolver():
    bases = [
        table_pb2.BasePath(id=1, name="b1", path="/mnt/bucket1", is_dataset_root=False),
        table_pb2.BasePath(id=2, path="s3://cold/archive", is_dataset_root=True),
        table_pb2.BasePath(id=0, path="file:///src/ds/", is_dataset_root=True),
    ]
    return BasePathResolver("/data/ds", bases, manifest_path="/data/ds/_versions/x.manifest")


def test_dataset_root_files(resolver):
    assert resolver.data_file_uri("f.lance") == "/data/ds/data/f.lance"
    assert resolver.data_file_uri("f.lance", -1) == "/data/ds/data/f.lance"
    assert resolver.deletion_file_uri("0-1-2.arrow") == "/data/ds/_deletions/0-1-2.arrow"
    assert resolver.index_dir_uri("abc") == "/data/ds/_indices/abc"
    assert resolver.base_uri() == "/data/ds"


def test_non_root_base_holds_files_directly(resolver):
    assert resolver.data_file_uri("f.lance", 1) == "/mnt/bucket1/f.lance"
    assert resolver.deletion_file_uri("0-1-2.bin", 1) == "/mnt/bucket1/0-1-2.bin"
    assert resolver.index_dir_uri("abc", 1) == "/mnt/bucket1/abc"


def test_dataset_root_base_adds_subdirectories(resolver):
    assert resolver.data_file_uri("f.lance", 2) == "s3://cold/archive/data/f.lance"
    assert resolver.deletion_file_uri("3-4-5.arrow", 2) == "s3://cold/archive/_deletions/3-4-5.arrow"
    assert resolver.index_dir_uri("u", 2) == "s3://cold/archive/_indices/u"
    # base id 0 is an ordinary id (shallow clones use it); file:// URIs become local paths
    assert resolver.data_file_uri("f.lance", 0) == "/src/ds/data/f.lance"
    assert resolver.data_file_uris(["a", "b", "c"], [-1, 1, 2]) == [
        "/data/ds/data/a", "/mnt/bucket1/b", "s3://cold/archive/data/c"]


def test_unknown_base_id_is_corrupt(resolver):
    with pytest.raises(CorruptFileError) as e:
        resolver.data_file_uri("f.lance", 9)
    assert e.value.path == "/data/ds/_versions/x.manifest"
    assert "9" in str(e.value)


@pytest.mark.parametrize("name", ["../f.lance", "a/../../f.lance", "/etc/passwd", "s3://x/y",
                                  "a\\b", "", ".", "a//b"])
def test_escaping_file_names(resolver, name):
    with pytest.raises(InvalidPathError):
        resolver.data_file_uri(name)
    with pytest.raises(InvalidPathError):
        resolver.deletion_file_uri(name, 1)


@pytest.mark.parametrize("path", ["/a/../b", "s3://bucket/../other", "x/./y", "a/.."])
def test_escaping_bases(path):
    r = BasePathResolver("/data/ds", [table_pb2.BasePath(id=1, path=path)])
    with pytest.raises(InvalidPathError):
        r.data_file_uri("f.lance", 1)


def test_relative_base_resolves_against_cwd(tmp_path, monkeypatch):
    # pylance resolves a relative base path against the reading process's working directory.
    monkeypatch.chdir(tmp_path)
    assert resolve_base_uri("relb") == os.path.join(str(tmp_path), "relb")
    r = BasePathResolver("/data/ds", [table_pb2.BasePath(id=1, path="relb"),
                                      table_pb2.BasePath(id=2, path="src", is_dataset_root=True)])
    assert r.data_file_uri("f.lance", 1) == f"{tmp_path}/relb/f.lance"
    assert r.data_file_uri("f.lance", 2) == f"{tmp_path}/src/data/f.lance"


def test_duplicate_base_ids_are_corrupt():
    with pytest.raises(CorruptFileError):
        BasePathResolver("/d", [table_pb2.BasePath(id=1, path="/a"), table_pb2.BasePath(id=1, path="/b")])


def test_resolver_accepts_base_path_objects_and_dicts():
    b = BasePath("memory://other", id=4)
    assert BasePathResolver("memory://ds", [b]).data_file_uri("x", 4) == "memory://other/x"
    assert BasePathResolver("memory://ds", {4: b}).base(4) == b
    assert BasePathResolver("memory://ds").data_dir() == "memory://ds/data"
