"""lancefmt.namespace.DirectoryNamespace on its own: V1 listing, V2 manifest, compatibility mode,
migration, rename, the table operations, and conflict-checked manifest updates."""
import os
import subprocess
import sys
import threading

import lance_namespace as ln
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.namespace import DirectoryNamespace
from lancefmt.namespace import errors as nserr
from lancefmt.namespace.manifest import SCHEMA
from namespace_bodies import ipc

TABLE = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "lake")


def manifest_rows(root):
    return lancefmt.dataset(os.path.join(root, "__manifest")).to_table().to_pylist()


def test_is_a_lance_namespace_and_connect_alias(root):
    ns = ln.connect("lancefmt-dir", {"root": root})
    assert isinstance(ns, DirectoryNamespace) and isinstance(ns, ln.LanceNamespace)
    assert ns.namespace_id() == DirectoryNamespace(root=root).namespace_id()
    assert ns.root == os.path.abspath(root)


def test_properties_parsing(root, monkeypatch, tmp_path):
    ns = DirectoryNamespace(root=root, manifest_enabled="False", dir_listing_enabled=True)
    assert (ns.manifest_enabled, ns.dir_listing_enabled) == (False, True)
    with pytest.raises(nserr.InvalidInputError):
        DirectoryNamespace(root=root, manifest_enabled="maybe")
    with pytest.raises(nserr.InvalidInputError):
        DirectoryNamespace(manifest_enabled="true")
    monkeypatch.chdir(tmp_path)
    rel = DirectoryNamespace(root="./rel/dir")
    assert rel.root == str(tmp_path / "rel" / "dir")
    so = DirectoryNamespace(root="memory://x", **{"storage.region": "us-west-2"})
    assert so.storage_options == {"region": "us-west-2"}


def test_v2_namespaces_tables_and_manifest_schema(root):
    ns = DirectoryNamespace(root=root)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["team"], properties={"owner": "ann"}))
    ns.create_namespace(["team", "sub"])
    resp = ns.create_table(ln.CreateTableRequest(id=["team", "sub", "t"]), ipc(TABLE))
    assert isinstance(resp, ln.CreateTableResponse) and resp.version == 1
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["team"]
    assert ns.list_namespaces(["team"]) == ["sub"]
    assert ns.list_tables(ln.ListTablesRequest(id=["team", "sub"])).tables == ["t"]
    assert ns.list_tables(["team"]) == []
    assert ns.describe_namespace(ln.DescribeNamespaceRequest(id=["team"])).properties == {"owner": "ann"}
    d = ns.describe_table(ln.DescribeTableRequest(id=["team", "sub", "t"]))
    assert (d.table, d.namespace) == ("t", ["team", "sub"])
    dirname = d.location.rsplit("/", 1)[-1]
    assert dirname[8] == "_" and int(dirname[:8], 16) >= 0 and dirname[9:] == "team$sub$t"
    assert ns.open_table(["team", "sub", "t"]).to_table().equals(TABLE)
    m = lancefmt.dataset(os.path.join(root, "__manifest"))
    assert m.schema.equals(SCHEMA, check_metadata=True)
    rows = {r["object_id"]: r for r in m.to_table().to_pylist()}
    assert rows["team"]["object_type"] == "namespace" and rows["team"]["metadata"] == '{"owner":"ann"}'
    assert rows["team$sub$t"] == {"object_id": "team$sub$t", "object_type": "table",
                                  "location": dirname, "metadata": None, "base_objects": None}


def test_namespace_errors_and_modes(root):
    ns = DirectoryNamespace(root=root)
    ns.create_namespace(["a"], properties={"x": "1"})
    with pytest.raises(nserr.NamespaceAlreadyExistsError) as e:
        ns.create_namespace(["a"])
    assert isinstance(e.value, ln.NamespaceAlreadyExistsError) and isinstance(e.value, lancefmt.LanceError)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"], mode="exist_ok"))
    assert ns.describe_namespace(["a"]).properties == {"x": "1"}
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"], mode="overwrite", properties={"y": "2"}))
    assert ns.describe_namespace(["a"]).properties == {"y": "2"}
    with pytest.raises(nserr.NamespaceNotFoundError):
        ns.create_namespace(["missing", "child"])
    with pytest.raises(nserr.NamespaceNotFoundError):
        ns.namespace_exists(ln.NamespaceExistsRequest(id=["nope"]))
    assert ns.namespace_exists(["a"]) and not ns.namespace_exists(["nope"])
    assert ns.namespace_exists([])
    ns.create_table(["a", "t"], TABLE)
    with pytest.raises(nserr.NamespaceNotEmptyError):
        ns.drop_namespace(ln.DropNamespaceRequest(id=["a"]))
    ns.drop_namespace(ln.DropNamespaceRequest(id=["nope"], mode="skip"))
    loc = ns.describe_table(["a", "t"]).location
    ns.drop_namespace(ln.DropNamespaceRequest(id=["a"], behavior="cascade"))
    assert ns.list_namespaces([]) == [] and not os.path.exists(loc[len("file://"):])
    for bad in (["a$b"], ["x/y"], [".."], [""], ["__manifest"]):
        with pytest.raises(nserr.InvalidInputError):
            ns.create_namespace(bad)


def test_v1_listing_and_existence(root):
    os.makedirs(root)
    lancefmt.write_dataset(TABLE, os.path.join(root, "t1.lance"))
    os.makedirs(os.path.join(root, "empty.lance"))          # no object under the prefix
    os.makedirs(os.path.join(root, "notatable"))
    ns = DirectoryNamespace(root=root, manifest_enabled="false")
    assert ns.list_tables([]) == ["t1"]
    assert ns.table_exists(["t1"]) and not ns.table_exists(["empty"])
    with pytest.raises(nserr.TableNotFoundError):
        ns.table_exists(ln.TableExistsRequest(id=["empty"]))
    ns.create_table(["t2"], TABLE)
    assert sorted(os.listdir(root)) == ["empty.lance", "notatable", "t1.lance", "t2.lance"]
    assert ns.list_tables([]) == ["t1", "t2"]
    with pytest.raises(nserr.UnsupportedOperationError):
        ns.create_namespace(["x"])
    with pytest.raises(nserr.NamespaceNotFoundError):
        ns.list_tables(["x"])


def test_compatibility_mode_and_migration(root):
    os.makedirs(root)
    lancefmt.write_dataset(TABLE, os.path.join(root, "old.lance"))     # a V1 table
    ns = DirectoryNamespace(root=root)
    ns.create_table(["new"], TABLE)                                    # registered, V1 name
    assert os.path.isdir(os.path.join(root, "new.lance"))
    assert [(r["object_id"], r["location"]) for r in manifest_rows(root)] == [("new", "new.lance")]
    assert ns.list_tables([]) == ["new", "old"]
    v2only = DirectoryNamespace(root=root, dir_listing_enabled="false")
    assert v2only.list_tables([]) == ["new"]
    with pytest.raises(nserr.TableNotFoundError):
        v2only.describe_table(["old"])
    assert ns.migrate() == ["old"]
    assert ns.migrate() == []
    assert v2only.list_tables([]) == ["new", "old"]
    assert v2only.open_table(["old"]).to_table().equals(TABLE)
    v2only.create_table(["fresh"], TABLE)                               # V2 name at the root
    loc = v2only.describe_table(["fresh"]).location.rsplit("/", 1)[-1]
    assert loc.endswith("_fresh") and len(loc) == 8 + 1 + 5


def test_listing_dedups_by_location_manifest_first(root):
    os.makedirs(root)
    lancefmt.write_dataset(TABLE, os.path.join(root, "a.lance"))
    ns = DirectoryNamespace(root=root)
    ns.register_table(ln.RegisterTableRequest(id=["alias"], location="a.lance"))
    assert ns.list_tables([]) == ["alias"]           # a.lance is claimed by the manifest row
    assert ns.describe_table(["alias"]).location.endswith("/a.lance")
    assert ns.list_all_tables() == ["alias"]


def test_rename_moves_root_table_to_v2_naming(root):
    ns = DirectoryNamespace(root=root)
    ns.create_table(["t"], TABLE)
    ns.insert_into_table(ln.InsertIntoTableRequest(id=["t"]), ipc(TABLE))
    ns.rename_table(ln.RenameTableRequest(id=["t"], new_table_name="u"))
    assert not os.path.exists(os.path.join(root, "t.lance"))
    loc = ns.describe_table(["u"]).location.rsplit("/", 1)[-1]
    assert loc.endswith("_u") and len(loc) == 10
    ds = ns.open_table(["u"])
    assert ds.version == 2 and ds.count_rows() == 6 and ds.checkout_version(1).count_rows() == 3
    assert ns.list_tables([]) == ["u"]
    ns.create_namespace(["n"])
    ns.rename_table(ln.RenameTableRequest(id=["u"], new_table_name="v", new_namespace_id=["n"]))
    assert ns.describe_table(["n", "v"]).location.rsplit("/", 1)[-1] == loc   # V2: row only
    assert ns.list_tables([]) == [] and ns.list_tables(["n"]) == ["v"]
    ns.create_table(["n", "w"], TABLE)
    with pytest.raises(nserr.TableAlreadyExistsError):
        ns.rename_table(ln.RenameTableRequest(id=["n", "v"], new_table_name="w"))


def test_declare_register_deregister_drop(root):
    ns = DirectoryNamespace(root=root)
    ns.create_namespace(["n"])
    d = ns.declare_table(ln.DeclareTableRequest(id=["n", "d"]))
    path = d.location[len("file://"):]
    assert os.listdir(path) == [".lance-reserved"]
    assert ns.list_tables(["n"]) == ["d"]
    assert ns.list_tables(ln.ListTablesRequest(id=["n"], include_declared=False)).tables == []
    with pytest.raises(nserr.TableAlreadyExistsError):
        ns.declare_table(ln.DeclareTableRequest(id=["n", "d"]))
    lancefmt.write_dataset(TABLE, os.path.join(root, "ext"))
    ns.register_table(ln.RegisterTableRequest(id=["n", "r"], location="ext"))
    assert ns.open_table(["n", "r"]).to_table().equals(TABLE)
    for bad in ("../outside", "/abs/path", "s3://b/x"):
        with pytest.raises(nserr.InvalidInputError):
            ns.register_table(ln.RegisterTableRequest(id=["n", "bad"], location=bad))
    out = ns.deregister_table(ln.DeregisterTableRequest(id=["n", "r"]))
    assert out.location.endswith("/ext") and os.path.isdir(os.path.join(root, "ext"))
    assert not ns.table_exists(["n", "r"])
    drop = ns.drop_table(ln.DropTableRequest(id=["n", "d"]))
    assert drop.id == ["n", "d"] and not os.path.exists(path)
    with pytest.raises(nserr.TableNotFoundError):
        ns.drop_table(ln.DropTableRequest(id=["n", "d"]))
    # a V1 table deregistered in compatibility mode stays on disk but is no longer listed
    lancefmt.write_dataset(TABLE, os.path.join(root, "v1.lance"))
    ns.deregister_table(ln.DeregisterTableRequest(id=["v1"]))
    assert "v1" not in ns.list_tables([]) and os.path.isdir(os.path.join(root, "v1.lance"))


def test_data_operations_versions_and_tags(root):
    ns = DirectoryNamespace(root=root)
    ns.create_table(ln.CreateTableRequest(id=["t"]), ipc(TABLE))
    ins = ns.insert_into_table(ln.InsertIntoTableRequest(id=["t"], mode="append"),
                               ipc(pa.table({"id": [4], "name": ["d"]})))
    assert (ins.version, ins.num_inserted_rows) == (2, 1)
    assert ns.count_table_rows(ln.CountTableRowsRequest(id=["t"])).count == 4
    assert ns.count_table_rows(ln.CountTableRowsRequest(id=["t"], predicate="id > 2")).count == 2
    assert ns.count_table_rows(ln.CountTableRowsRequest(id=["t"], version=1)).count == 3
    dele = ns.delete_from_table(ln.DeleteFromTableRequest(id=["t"], predicate="id = 1"))
    assert dele.version == 3 and ns.open_table(["t"]).count_rows() == 3
    vers = ns.list_table_versions(ln.ListTableVersionsRequest(id=["t"])).versions
    assert [v.version for v in vers] == [1, 2, 3] and all(v.manifest_size > 0 for v in vers)
    ns.create_table_tag(ln.CreateTableTagRequest(id=["t"], tag="first", version=1))
    with pytest.raises(nserr.TableTagAlreadyExistsError):
        ns.create_table_tag(ln.CreateTableTagRequest(id=["t"], tag="first", version=2))
    tags = ns.list_table_tags(ln.ListTableTagsRequest(id=["t"])).tags
    assert tags["first"].version == 1 and tags["first"].manifest_size > 0
    ns.update_table_tag(ln.UpdateTableTagRequest(id=["t"], tag="first", version=2))
    assert ns.get_table_tag_version(ln.GetTableTagVersionRequest(id=["t"], tag="first")).version == 2
    ns.delete_table_tag(ln.DeleteTableTagRequest(id=["t"], tag="first"))
    with pytest.raises(nserr.TableTagNotFoundError):
        ns.get_table_tag_version(ln.GetTableTagVersionRequest(id=["t"], tag="first"))
    ns.restore_table(ln.RestoreTableRequest(id=["t"], version=1))
    assert ns.open_table(["t"]).to_table().equals(TABLE)
    ow = ns.insert_into_table(ln.InsertIntoTableRequest(id=["t"], mode="overwrite"),
                              ipc(pa.table({"id": [9], "name": ["z"]})))
    assert ns.open_table(["t"]).to_table().to_pylist() == [{"id": 9, "name": "z"}]
    assert ow.version == 5


def test_merge_insert_into_table(root):
    ns = DirectoryNamespace(root=root)
    ns.create_table(["t"], TABLE)
    src = pa.table({"id": [2, 3, 7], "name": ["B", "C", "G"]})
    out = ns.merge_insert_into_table(
        ln.MergeInsertIntoTableRequest(id=["t"], on=["id"], when_matched_update_all=True,
                                       when_not_matched_insert_all=True), ipc(src))
    assert (out.num_updated_rows, out.num_inserted_rows, out.num_deleted_rows) == (2, 1, 0)
    rows = sorted(ns.open_table(["t"]).to_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "name": "a"}, {"id": 2, "name": "B"}, {"id": 3, "name": "C"},
                    {"id": 7, "name": "G"}]
    out = ns.merge_insert_into_table(
        ln.MergeInsertIntoTableRequest(id=["t"], on=["id"], when_not_matched_insert_all=False,
                                       when_not_matched_by_source_delete=True),
        ipc(pa.table({"id": [1, 7], "name": ["x", "y"]})))
    assert out.num_deleted_rows == 2
    assert sorted(r["id"] for r in ns.open_table(["t"]).to_table().to_pylist()) == [1, 7]


def test_pagination(root):
    ns = DirectoryNamespace(root=root)
    ns.create_namespace(["n"])
    for i in range(5):
        ns.create_table(["n", f"t{i}"], TABLE)
    first = ns.list_tables(ln.ListTablesRequest(id=["n"], limit=2))
    assert first.tables == ["t0", "t1"] and first.page_token == "t1"
    second = ns.list_tables(ln.ListTablesRequest(id=["n"], limit=2, page_token=first.page_token))
    assert second.tables == ["t2", "t3"]
    last = ns.list_tables(ln.ListTablesRequest(id=["n"], limit=2, page_token=second.page_token))
    assert last.tables == ["t4"] and last.page_token is None
    assert ns.list_all_tables(ln.ListTablesRequest()).tables == [f"n$t{i}" for i in range(5)]


def test_create_table_modes(root):
    ns = DirectoryNamespace(root=root)
    ns.create_table(["t"], TABLE)
    with pytest.raises(nserr.TableAlreadyExistsError):
        ns.create_table(["t"], TABLE)
    assert ns.create_table(["t"], TABLE, mode="exist_ok").version == 1
    other = pa.table({"x": [1.5]})
    assert ns.create_table(ln.CreateTableRequest(id=["t"], mode="overwrite"), ipc(other)).version == 2
    assert ns.open_table(["t"]).to_table().equals(other)
    with pytest.raises(nserr.InvalidInputError):
        ns.create_table(ln.CreateTableRequest(id=["u"]), b"not arrow")
    assert not os.path.exists(os.path.join(root, "u.lance"))


@pytest.mark.parametrize("table_id", [["t"], ["n", "t"]], ids=["root-v1-name", "child-v2-name"])
def test_four_threads_create_same_table_exactly_one_wins(root, table_id):
    DirectoryNamespace(root=root).create_namespace(["n"])
    barrier = threading.Barrier(4)
    results = []

    def create(i):
        ns = DirectoryNamespace(root=root)      # as four independent clients
        barrier.wait()
        try:
            ns.create_table(table_id, pa.table({"who": [i]}))
            results.append(("ok", i))
        except nserr.TableAlreadyExistsError as e:
            results.append(("exists", str(e)))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if r[0] == "ok"]
    assert len(winners) == 1 and len(results) == 4
    ns = DirectoryNamespace(root=root)
    assert ns.open_table(table_id).to_table().column("who").to_pylist() == [winners[0][1]]
    oid = "$".join(table_id)
    assert [r["object_id"] for r in manifest_rows(root)].count(oid) == 1
    dirs = [d for d in os.listdir(root) if d != "__manifest" and (d == "t.lance" or d.endswith("_" + oid))]
    assert len(dirs) == 1                      # the losers left nothing behind
    assert not any(f for f in os.listdir(os.path.join(root, "__manifest", "_transactions"))
                   if not _committed_txn(root, f))


def _committed_txn(root, name):
    ds = lancefmt.dataset(os.path.join(root, "__manifest"))
    names = set()
    for v in range(1, ds.version + 1):
        names.add(ds.checkout_version(v).manifest_file.header.transaction_file)
    return name in names


_CHILD = """
import os, sys, time
import pyarrow as pa
from lancefmt.namespace import DirectoryNamespace, TableAlreadyExistsError
root, i, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ns = DirectoryNamespace(root=root)
open(go + str(i), "w").close()
while not all(os.path.exists(go + str(j)) for j in range(2)):
    time.sleep(0.01)
try:
    ns.create_table(["n", "p"], pa.table({"who": [i]}))
    print("ok")
except TableAlreadyExistsError:
    print("exists")
"""


def test_two_processes_create_same_table(root, tmp_path):
    DirectoryNamespace(root=root).create_namespace(["n"])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    go = str(tmp_path / "ready-")
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, root, str(i), go], env=env,
                              stdout=subprocess.PIPE, text=True) for i in range(2)]
    outs = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outs == ["exists", "ok"]
    assert DirectoryNamespace(root=root).list_tables(["n"]) == ["p"]
    assert len([d for d in os.listdir(root) if d.endswith("_n$p")]) == 1


def test_manifest_is_compacted_and_pylance_still_reads_it(root):
    import lance
    import lance.namespace as pyns

    from lancefmt.namespace.manifest import COMPACT_FRAGMENTS

    ns = DirectoryNamespace(root=root)
    ns.create_namespace(["n"])
    for i in range(COMPACT_FRAGMENTS + 3):
        ns.create_table(["n", f"t{i:02d}"], TABLE)
    ns.drop_table(ln.DropTableRequest(id=["n", "t00"]))
    m = lancefmt.dataset(os.path.join(root, "__manifest"))
    assert len(m.get_fragments()) < COMPACT_FRAGMENTS
    expected = [f"t{i:02d}" for i in range(1, COMPACT_FRAGMENTS + 3)]
    assert ns.list_tables(["n"]) == expected
    assert pyns.DirectoryNamespace(root=root).list_tables(ln.ListTablesRequest(id=["n"])).tables \
        == expected
    lance.dataset(os.path.join(root, "__manifest")).validate()


def test_memory_root(memory_uri):
    ns = DirectoryNamespace(root=memory_uri)
    ns.create_namespace(["n"])
    ns.create_table(["n", "t"], TABLE)
    ns.create_table(["r"], TABLE)
    assert ns.list_tables([]) == ["r"] and ns.list_tables(["n"]) == ["t"]
    assert ns.describe_table(["r"]).location == memory_uri + "/r.lance"
    assert ns.open_table(["n", "t"]).to_table().equals(TABLE)
    ns.rename_table(ln.RenameTableRequest(id=["r"], new_table_name="s"))
    assert ns.open_table(["s"]).to_table().equals(TABLE)
    ns.drop_table(ln.DropTableRequest(id=["s"]))
    assert ns.list_tables([]) == []


def test_create_fills_a_declared_table(root):
    ns = DirectoryNamespace(root=root)
    loc = ns.declare_table(ln.DeclareTableRequest(id=["d"])).location
    assert loc.endswith("/d.lance")
    out = ns.create_table(ln.CreateTableRequest(id=["d"]), ipc(TABLE))
    assert out.location == loc and out.version == 1
    assert os.listdir(loc[len("file://"):]) != [".lance-reserved"]
    assert ".lance-reserved" not in os.listdir(loc[len("file://"):])
    with pytest.raises(nserr.TableAlreadyExistsError):
        ns.create_table(ln.CreateTableRequest(id=["d"]), ipc(TABLE))
    assert ns.list_tables(ln.ListTablesRequest(id=[], include_declared=False)).tables == ["d"]


def test_s3_root_with_storage_properties(s3_uri):
    uri, options = s3_uri
    props = {"root": uri, **{f"storage.{k}": v for k, v in options.items()}}
    ns = DirectoryNamespace(**props)
    assert ns.storage_options == options
    ns.create_namespace(["n"])
    ns.create_table(["n", "t"], TABLE)
    ns.create_table(["r"], TABLE)
    assert ns.list_tables([]) == ["r"] and ns.list_tables(["n"]) == ["t"]
    assert ns.open_table(["n", "t"]).to_table().equals(TABLE)
    with pytest.raises(nserr.TableAlreadyExistsError):
        ns.create_table(["n", "t"], TABLE)
    ns.drop_table(ln.DropTableRequest(id=["n", "t"]))
    assert DirectoryNamespace(**props).list_tables(["n"]) == []


def test_inline_optimization_keeps_manifest_indices_both_ways(tmp_path):
    """With ``inline_optimization_enabled`` the ``__manifest`` table is compacted and carries
    pylance's ``object_id_btree``; lookups go through it, and pylance's and lancefmt's writes
    keep each other's indices valid."""
    import io

    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pytest
    lance_ns = pytest.importorskip("lance.namespace")
    import lance
    from lance_namespace import CreateNamespaceRequest, CreateTableRequest, DescribeTableRequest

    from lancefmt.namespace import DirectoryNamespace

    buf = io.BytesIO()
    t = pa.table({"x": [1, 2]})
    with ipc.new_stream(buf, t.schema) as w:
        w.write_table(t)
    props = dict(root=str(tmp_path), manifest_enabled="true", dir_listing_enabled="false",
                 inline_optimization_enabled="true")
    ours = DirectoryNamespace(**props)
    ours.create_namespace(CreateNamespaceRequest(id=["a"]))
    for i in range(4):
        ours.create_table(CreateTableRequest(id=["a", f"t{i}"]), buf.getvalue())
    manifest = lance.dataset(str(tmp_path / "__manifest"))
    manifest.validate()
    assert len(manifest.get_fragments()) == 1
    names = {d.name for d in manifest.describe_indices()}
    assert "object_id_btree" in names
    assert "@object_id_btree(BTree)" in manifest.scanner(filter="object_id = 'a$t1'").explain_plan()
    theirs = lance_ns.DirectoryNamespace(**props)
    theirs.create_table(CreateTableRequest(id=["a", "p"]), buf.getvalue())
    fresh = DirectoryNamespace(**props)   # no cached rows: the lookup reads through the index
    assert fresh.describe_table(DescribeTableRequest(id=["a", "p"])).location.endswith("a$p")
    assert theirs.describe_table(DescribeTableRequest(id=["a", "t3"])).location.endswith("a$t3")
    ours.create_table(CreateTableRequest(id=["a", "q"]), buf.getvalue())
    m = lance.dataset(str(tmp_path / "__manifest"))
    m.validate()
    for oid in ("a$t0", "a$p", "a$q", "a"):
        assert m.count_rows(f"object_id = '{oid}'") == 1
        assert m.to_table(filter=f"object_id = '{oid}'", use_scalar_index=False).num_rows == 1


@pytest.mark.parametrize("metadata", ['{"owner: x}', "[1, 2]", '{"n": 1}', "7"])
def test_manifest_row_with_bad_metadata_is_corrupt_not_a_crash(tmp_path, metadata):
    """A ``__manifest`` row whose metadata is not a JSON object of strings (another writer's
    or a damaged table) is a CorruptFileError naming the table, not a JSON or model error."""
    from lancefmt.errors import CorruptFileError

    root = str(tmp_path / "lake")
    rows = pa.table({"object_id": ["a", "b"], "object_type": ["namespace", "namespace"],
                     "location": [None, None], "metadata": [metadata, '{"k": "v"}'],
                     "base_objects": [None, None]}, schema=SCHEMA)
    lancefmt.write_dataset(rows, os.path.join(root, "__manifest"))
    ns = DirectoryNamespace(root=root)
    assert ns.list_namespaces([]) == ["a", "b"]
    assert ns.describe_namespace(["b"]).properties == {"k": "v"}
    with pytest.raises(CorruptFileError, match="not a JSON object") as info:
        ns.describe_namespace(["a"])
    assert "__manifest" in str(info.value)
