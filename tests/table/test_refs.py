import pytest

from lancefmt import CorruptFileError, DatasetNotFoundError, InvalidArgumentError
from lancefmt.io import open_store
from lancefmt.table import refs

PYLANCE_TAG = (b'{\n  "branch": null,\n  "version": 2,\n  "createdAt": "2026-11-21T23:36:40.119261296Z",\n'
               b'  "updatedAt": "2026-11-21T23:36:40.119261296Z",\n  "manifestSize": 663,\n'
               b'  "metadata": {}\n}')
PYLANCE_BRANCH = (b'{\n  "parentBranch": null,\n  "identifier": {\n    "version_mapping": [\n      [\n'
                  b'        2,\n        "77750cc4111b4a1f9925c53f36350e30"\n      ]\n    ]\n  },\n'
                  b'  "parentVersion": 2,\n  "createAt": 1795304220,\n  "manifestSize": 468,\n'
                  b'  "metadata": {}\n}')


def test_tag_bytes_round_trip():
    tag = refs.decode_tag("t1", PYLANCE_TAG)
    assert tag.version == 2 and tag.branch is None and tag.manifest_size == 663
    assert tag.created_at == 1795304200119261296
    assert refs.encode_tag(tag) == PYLANCE_TAG


def test_old_style_tag():
    tag = refs.decode_tag("old", b'{"branch": "dev", "version": 4, "manifestSize": 10}')
    assert (tag.version, tag.branch, tag.created_at) == (4, "dev", None)


@pytest.mark.parametrize("ns,text", [
    (0, "1970-01-01T00:00:00Z"),
    (1_500_000_000_000_000_000, "2017-07-14T02:40:00Z"),
    (1_500_000_000_120_000_000, "2017-07-14T02:40:00.120Z"),
    (1_500_000_000_000_123_000, "2017-07-14T02:40:00.000123Z"),
    (1_500_000_000_000_000_007, "2017-07-14T02:40:00.000000007Z"),
])
def test_rfc3339_like_chrono(ns, text):
    assert refs.format_rfc3339(ns) == text
    assert refs.parse_rfc3339(text) == ns


def test_rfc3339_offsets():
    assert refs.parse_rfc3339("2017-07-14T04:40:00+02:00") == 1_500_000_000 * 10**9
    with pytest.raises(ValueError):
        refs.parse_rfc3339("yesterday")


@pytest.mark.parametrize("bad", [b"not json", b"[]", b'{"branch": null}', b'{"version": -1}',
                                 b'{"version": 1, "createdAt": "x"}', b'{"version": 1, "branch": 3}',
                                 b'{"version": "1"}', b'{"version": 1, "metadata": []}'])
def test_corrupt_tags(bad):
    with pytest.raises(CorruptFileError):
        refs.decode_tag("t", bad, "/ds/_refs/tags/t.json")


@pytest.mark.parametrize("name", ["", "a/b", ".x", "x.", "a..b", "x.lock", "sp ace", "ü"])
def test_bad_tag_names(name):
    with pytest.raises(InvalidArgumentError):
        refs.check_tag_name(name)


def test_list_read_create_tags(memory_uri):
    assert refs.list_tags(memory_uri) == {}
    t = refs.create_tag(memory_uri, "v-1.0_rc", 3, manifest_size=100, now_ns=1_500_000_000_000_000_000)
    refs.create_tag(memory_uri, "a", 1, manifest_size=5)
    assert list(refs.list_tags(memory_uri)) == ["a", "v-1.0_rc"]
    assert refs.read_tag(memory_uri, "v-1.0_rc") == t
    with pytest.raises(InvalidArgumentError):
        refs.create_tag(memory_uri, "a", 2, manifest_size=5)
    with pytest.raises(DatasetNotFoundError):
        refs.read_tag(memory_uri, "nope")
    assert refs.resolve_version_ref(memory_uri, "v-1.0_rc") == (memory_uri, 3)


def test_branches(memory_uri):
    store = open_store(memory_uri)
    store.put(memory_uri + "/_refs/branches/feat%2Fx.json", PYLANCE_BRANCH)
    branches = refs.list_branches(memory_uri)
    b = branches["feat/x"]
    assert (b.parent_branch, b.parent_version, b.create_at, b.manifest_size) == (None, 2, 1795304220, 468)
    assert b.identifier == {"version_mapping": [[2, "77750cc4111b4a1f9925c53f36350e30"]]}
    assert refs.read_branch(memory_uri, "feat/x") == b
    assert refs.branch_uri(memory_uri, "feat/x") == memory_uri + "/tree/feat/x"
    assert refs.branch_file_uri(memory_uri, "feat/x").endswith("/_refs/branches/feat%2Fx.json")
    # a tag on a branch version resolves into the branch's own dataset
    store.put(refs.tag_uri(memory_uri, "bt"), b'{"branch": "feat/x", "version": 2, "manifestSize": 1}')
    assert refs.resolve_version_ref(memory_uri, "bt") == (memory_uri + "/tree/feat/x", 2)
    with pytest.raises(DatasetNotFoundError):
        refs.read_branch(memory_uri, "other")


@pytest.mark.parametrize("name", ["main", "", "/a", "a/", "a//b", "a/../b", "a\\b", "x.lock", "a b"])
def test_bad_branch_names(name):
    with pytest.raises(InvalidArgumentError):
        refs.check_branch_name(name)


def test_resolve_version_ref():
    assert refs.resolve_version_ref("/d", None) == ("/d", None)
    assert refs.resolve_version_ref("/d", 4) == ("/d", 4)
    import numpy as np
    assert refs.resolve_version_ref("/d", np.uint64(4)) == ("/d", 4)
    for bad in (True, -1, 1.5):
        with pytest.raises(InvalidArgumentError):
            refs.resolve_version_ref("/d", bad)


@pytest.mark.parametrize("data", [
    b"[" * 100000 + b"]" * 100000,                                   # RecursionError
    b'{"version": 1, "createdAt": 1e999}',                            # OverflowError
    b'{"version": 1, "createdAt": [1]}',
    b'{"version": 1, "updatedAt": {"a": 1}}',
])
def test_hostile_tag_json_is_corrupt(data):
    from lancefmt.errors import CorruptFileError
    from lancefmt.table.refs import decode_tag

    with pytest.raises(CorruptFileError):
        decode_tag("t", data, "t.json")


@pytest.mark.parametrize("mapping", [[5], [[1]], [["1", "ab"]], [[1, 2]], "x", [[True, "ab"]]])
def test_malformed_version_mapping_is_corrupt(mapping):
    import json

    from lancefmt.errors import CorruptFileError
    from lancefmt.table.refs import decode_branch, version_mapping

    data = json.dumps({"parentBranch": None, "identifier": {"version_mapping": mapping},
                       "parentVersion": 1}).encode()
    branch = decode_branch("b", data, "b.json")
    with pytest.raises(CorruptFileError):
        version_mapping(branch)


def test_deeply_nested_branch_json_is_corrupt():
    from lancefmt.errors import CorruptFileError
    from lancefmt.table.refs import decode_branch

    with pytest.raises(CorruptFileError):
        decode_branch("b", b'{"identifier":' * 50000 + b"1" + b"}" * 50000, "b.json")
