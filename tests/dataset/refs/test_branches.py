"""Branches: tree/{name} datasets, branch files, checkout, tags on branches, deletion."""
import json
import os

import pyarrow as pa
import pytest

import lancefmt
from lancefmt import BasePath, DatasetExistsError, DatasetNotFoundError, InvalidArgumentError
from lancefmt.table.commit import read_transaction_of
from lancefmt.table.transaction import Clone
from lancefmt.table.versions import manifest_uri


def table(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


@pytest.fixture
def main(tmp_path):
    uri = str(tmp_path / "ds")
    for i in range(3):
        lancefmt.write_dataset(table(10, 10 * i), uri, mode="create" if i == 0 else "append")
    return lancefmt.dataset(uri)


def test_create_branch_layout(main):
    b = main.create_branch("feat/x", 2)
    assert b.uri == main.uri + "/tree/feat/x" and b.branch == "feat/x"
    assert b.version == 2                                   # first manifest keeps the version
    assert os.path.exists(manifest_uri(b.uri, 2))
    assert b.base_paths == {0: BasePath(main.uri, None, True, 0)}
    assert b.manifest.branch == "feat/x"
    txn = read_transaction_of(b.manifest_file, b.uri, b.snapshot.store)
    assert txn.operation == Clone(True, None, 2, main.uri, "feat/x")
    path = os.path.join(main.uri, "_refs", "branches", "feat%2Fx.json")
    text = open(path).read()
    obj = json.loads(text)
    assert list(obj) == ["parentBranch", "identifier", "parentVersion", "createAt", "manifestSize",
                         "metadata"]
    assert obj["parentBranch"] is None and obj["parentVersion"] == 2
    assert obj["manifestSize"] == os.path.getsize(manifest_uri(main.uri, 2))
    [[v, ident]] = obj["identifier"]["version_mapping"]
    assert v == 2 and len(ident) == 32
    assert text.startswith('{\n  "parentBranch": null,\n  "identifier": {\n    "version_mapping": [\n      [\n        2,')
    assert b.count_rows() == 20


def test_branch_evolves_alone_and_branch_of_branch(main):
    b = main.create_branch("dev")
    b = lancefmt.write_dataset(table(5, 100), b, mode="append")
    assert (b.version, b.count_rows()) == (4, 35)
    assert os.listdir(os.path.join(b.uri, "data"))
    assert lancefmt.dataset(main.uri).count_rows() == 30
    c = b.create_branch("dev2")
    assert c.base_paths == {0: BasePath(main.uri, None, True, 0),
                            1: BasePath(b.uri, "dev", True, 1)}
    obj = json.load(open(os.path.join(main.uri, "_refs", "branches", "dev2.json")))
    assert obj["parentBranch"] == "dev" and obj["parentVersion"] == 4
    assert [m[0] for m in obj["identifier"]["version_mapping"]] == [3, 4]
    assert c.to_table() == b.to_table()
    assert main.branches.list()["dev2"]["parent_branch"] == "dev"


def test_checkout_branch_and_tags(main):
    b = main.create_branch("dev")
    lancefmt.write_dataset(table(1, 99), b, mode="append")
    assert main.checkout_branch("dev").version == 4
    assert main.checkout_branch("dev", 3).count_rows() == 30
    assert main.checkout_branch("main").uri == main.uri
    assert b.checkout_branch(None).uri == main.uri
    with pytest.raises(DatasetNotFoundError):
        main.checkout_branch("nope")
    b = main.checkout_branch("dev")
    b.tags.create("on-dev")
    tag = json.load(open(os.path.join(main.uri, "_refs", "tags", "on-dev.json")))
    assert tag["branch"] == "dev" and tag["version"] == 4
    ds = lancefmt.dataset(main.uri, version="on-dev")
    assert ds.uri == b.uri and ds.count_rows() == 31
    assert main.checkout_version("on-dev").count_rows() == 31
    assert b.tags.list() == main.tags.list()


def test_branch_errors_and_delete(main):
    main.create_branch("a")
    with pytest.raises(DatasetExistsError):
        main.create_branch("a")
    for bad in ("main", "/x", "x/", "a//b", "a..b", "x.lock", "sp ace"):
        with pytest.raises(InvalidArgumentError):
            main.create_branch(bad)
    a = main.checkout_branch("a")
    a.create_branch("a/child")
    with pytest.raises(InvalidArgumentError):
        main.branches.delete("a")                      # a child branch depends on it
    main.branches.delete("a/child")
    main.branches.delete("a")
    assert main.branches.list() == {}
    assert not [f for _, _, fs in os.walk(os.path.join(main.uri, "tree")) for f in fs]
    with pytest.raises(InvalidArgumentError):
        main.branches.delete("a")
