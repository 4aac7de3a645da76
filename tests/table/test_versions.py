import pytest

from lancefmt import CorruptFileError, DatasetNotFoundError, UnsupportedFeatureError
from lancefmt.io import open_store
from lancefmt.table import versions as V
from lancefmt.table.manifest import write_manifest_file
from lancefmt.table.refs import Tag, encode_tag, tag_uri
from lancefmt.table.version_hint import version_hint_uri, write_version_hint

from table_factory import make_manifest, make_transaction


def commit(uri, version, scheme="v2", **kw):
    m = make_manifest(3 + version, version, version=version, **kw)
    m.timestamp.seconds = 1_795_000_000 + version
    assert write_manifest_file(V.manifest_uri(uri, version, scheme), m, make_transaction(version - 1))
    return m


@pytest.fixture(params=["local", "memory"])
def ds_uri(request, local_uri, memory_uri):
    return local_uri if request.param == "local" else memory_uri


def test_latest_and_list_v2(ds_uri):
    for v in range(1, 6):
        commit(ds_uri, v)
    latest = V.latest_manifest(ds_uri)
    assert latest.version == 5 and latest.scheme == "v2"
    assert latest.uri.endswith("/_versions/18446744073709551610.manifest")
    assert latest.size == open_store(ds_uri).size(latest.uri)
    assert [loc.version for loc in V.list_manifests(ds_uri)] == [1, 2, 3, 4, 5]
    loc = V.locate_manifest(ds_uri, 3)
    assert loc.version == 3 and loc.scheme == "v2" and loc.size
    assert V.load_manifest(ds_uri).version == 5
    assert V.load_manifest(ds_uri, 2).version == 2
    versions = V.list_versions(ds_uri)
    assert [v["version"] for v in versions] == [1, 2, 3, 4, 5]
    assert all(set(v) == {"version", "timestamp", "metadata"} for v in versions)
    assert versions[0]["timestamp"] < versions[-1]["timestamp"]


def test_v1_dataset_and_fallback(ds_uri):
    for v in (1, 2, 10):
        commit(ds_uri, v, "v1")
    assert V.latest_manifest(ds_uri).version == 10  # numeric, not lexical, order
    assert V.latest_manifest(ds_uri).scheme == "v1"
    loc = V.locate_manifest(ds_uri, 2)  # V2 name first, then V1
    assert loc.scheme == "v1" and loc.uri.endswith("/_versions/2.manifest")
    assert V.load_manifest(ds_uri, 10).version == 10


def test_missing_dataset_and_version(ds_uri):
    with pytest.raises(DatasetNotFoundError):
        V.latest_manifest(ds_uri)
    with pytest.raises(DatasetNotFoundError):
        V.load_manifest(ds_uri)
    commit(ds_uri, 1)
    with pytest.raises(DatasetNotFoundError):
        V.locate_manifest(ds_uri, 2)
    with pytest.raises(DatasetNotFoundError):
        V.load_manifest(ds_uri, 7)
    with pytest.raises(DatasetNotFoundError):
        V.load_manifest(ds_uri, "no_such_tag")


def test_mixed_schemes_are_corrupt(ds_uri):
    commit(ds_uri, 1, "v1")
    commit(ds_uri, 2, "v2")
    with pytest.raises(CorruptFileError) as e:
        V.latest_manifest(ds_uri)
    assert e.value.path.endswith("_versions")


def test_temp_staged_and_detached_names_are_skipped(ds_uri):
    store = open_store(ds_uri)
    commit(ds_uri, 1)
    commit(ds_uri, 2)
    vdir = V.versions_dir(ds_uri)
    store.put(vdir + "/.tmp_18446744073709551612.manifest_9c100374", b"partial")
    store.put(vdir + "/18446744073709551612.manifest-9c100374-3298-4537-afc6-f5ee7913666d", b"x")
    store.put(vdir + "/notes.txt", b"x")
    detached = (1 << 63) | 77
    m = make_manifest(2, 0, version=detached)
    write_manifest_file(V.manifest_uri(ds_uri, detached), m)
    assert V.latest_manifest(ds_uri).version == 2
    assert [loc.version for loc in V.list_manifests(ds_uri)] == [1, 2]
    assert V.list_manifests(ds_uri, include_detached=True)[-1].version == detached
    loc = V.locate_manifest(ds_uri, detached)
    assert loc.detached and loc.uri.endswith(f"/d{detached}.manifest")
    assert V.load_manifest(ds_uri, detached).version == detached


@pytest.mark.parametrize("hint", [None, b'{"version":1}', b'{"version":99}', b"garbage", b"{}"])
def test_hint_never_overrides_the_listing(ds_uri, hint):
    store = open_store(ds_uri)
    for v in (1, 2, 3):
        commit(ds_uri, v)
    if hint is not None:
        store.put(version_hint_uri(ds_uri), hint)
    assert V.latest_manifest(ds_uri).version == 3
    assert V.load_manifest(ds_uri).version == 3
    assert [loc.version for loc in V.list_manifests(ds_uri)] == [1, 2, 3]


def test_hint_alone_is_not_a_dataset(ds_uri):
    write_version_hint(ds_uri, 4)
    with pytest.raises(DatasetNotFoundError):
        V.latest_manifest(ds_uri)


def test_load_by_tag(ds_uri):
    for v in (1, 2, 3):
        commit(ds_uri, v)
    store = open_store(ds_uri)
    store.put(tag_uri(ds_uri, "stable"), encode_tag(Tag("stable", 2, manifest_size=1)))
    assert V.load_manifest(ds_uri, "stable").version == 2


def test_misnamed_manifest_is_corrupt(ds_uri):
    m = make_manifest(2, 0, version=5)
    write_manifest_file(V.manifest_uri(ds_uri, 1), m)
    with pytest.raises(CorruptFileError, match="version 1 but holds version 5"):
        V.load_manifest(ds_uri)


def test_unknown_reader_flags_checked_on_load(ds_uri):
    m = make_manifest(2, 0, version=1)
    m.reader_feature_flags |= 1 << 20
    write_manifest_file(V.manifest_uri(ds_uri, 1), m)
    with pytest.raises(UnsupportedFeatureError, match="bit_20|1048576"):
        V.load_manifest(ds_uri)
    assert V.load_manifest(ds_uri, check=False).version == 1


def test_local_listing_ignores_directories(local_uri):
    import os

    commit(local_uri, 1)
    os.makedirs(os.path.join(local_uri, "_versions", "2.manifest"))
    assert V.latest_manifest(local_uri).version == 1
