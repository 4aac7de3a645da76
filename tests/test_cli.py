import json
import os
import subprocess
import sys

import pytest

from lancefmt import cli
from lancefmt.io import open_store
from lancefmt.table.manifest import write_manifest_file
from lancefmt.table.refs import create_tag
from lancefmt.table.versions import manifest_uri

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "table"))
from table_factory import make_manifest, make_transaction  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def dataset(local_uri):
    for v in (1, 2):
        m = make_manifest(6, v, version=v, row_ids=True)
        m.fields.add(name="st", id=2, parent_id=-1, logical_type="struct", nullable=True)
        m.fields.add(name="inner", id=3, parent_id=2, logical_type="float", nullable=False)
        m.config["lance.auto_cleanup.interval"] = "20"
        write_manifest_file(manifest_uri(local_uri, v), m, make_transaction(v - 1))
    size = open_store(local_uri).size(manifest_uri(local_uri, 1))
    create_tag(local_uri, "first", 1, manifest_size=size)
    return local_uri, m


def test_inspect_text(dataset, capsys):
    uri, m = dataset
    assert cli.main(["inspect", uri]) == 0
    out = capsys.readouterr().out
    rows = sum(f.physical_rows for f in m.fragments)
    deleted = sum(f.deletion_file.num_deleted_rows for f in m.fragments)
    assert "version        2" in out
    assert f"rows           {rows - deleted} live = {rows} physical - {deleted} deleted" in out
    assert "V2 naming" in out and "format 2.1" in out
    assert "  - st: struct (nullable, id 2)\n    - inner: float (not null, id 3)" in out
    assert "id 1 name=b1: /tmp/b1 (data directory)" in out
    assert "id 2: s3://bucket/b2 (dataset root)" in out
    assert "first -> version 1" in out
    assert "stable_row_ids" in out and "lance.auto_cleanup.interval = 20" in out


def test_inspect_json_and_version(dataset, capsys):
    uri, m = dataset
    assert cli.main(["inspect", uri, "--version", "first", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == 1
    assert info["fragments"] == 6
    assert info["naming_scheme"] == "v2"
    assert info["tags"] == {"first": {"version": 1, "branch": None}}
    assert [b["id"] for b in info["bases"]] == [1, 2]
    assert info["schema"][2]["children"][0]["name"] == "inner"
    assert info["reader_feature_flags"]["value"] == 19
    assert cli.main(["inspect", uri, "--version", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 2


def test_versions_command(dataset, capsys):
    uri, _ = dataset
    assert cli.main(["versions", uri, "--json"]) == 0
    assert [v["version"] for v in json.loads(capsys.readouterr().out)] == [1, 2]
    assert cli.main(["versions", uri]) == 0
    assert "6 fragments" in capsys.readouterr().out


def test_errors_exit_1(tmp_path, capsys):
    assert cli.main(["inspect", str(tmp_path / "none")]) == 1
    assert "no Lance dataset" in capsys.readouterr().err


def test_unsupported_flags_are_shown_not_fatal(local_uri, capsys):
    m = make_manifest(2, 0, version=1)
    m.reader_feature_flags |= 64
    write_manifest_file(manifest_uri(local_uri, 1), m)
    assert cli.main(["inspect", local_uri]) == 0
    assert "WARNING" in capsys.readouterr().out


def test_python_dash_m(dataset):
    uri, _ = dataset
    out = subprocess.run([sys.executable, "-m", "lancefmt", "inspect", uri, "--json"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["version"] == 2


# -- multi-base and maintenance commands --------------------------------------------------------

@pytest.fixture
def multibase(tmp_path):
    import pyarrow as pa

    import lancefmt

    root, b1 = str(tmp_path / "root"), str(tmp_path / "b1")
    t = pa.table({"id": pa.array(range(20), pa.int64())})
    ds = lancefmt.write_dataset(t, root, max_rows_per_file=5,
                                initial_bases=[lancefmt.BasePath(b1, name="b1")],
                                target_bases=["b1"])
    ds = lancefmt.write_dataset(t, ds, mode="append", max_rows_per_file=10)
    ds.delete("id = 1")
    return root, b1, tmp_path


def run(capsys, *argv):
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def test_bases_list_set_add(multibase, capsys):
    root, b1, tmp = multibase
    code, out = run(capsys, "bases", root, "--json")
    assert code == 0 and json.loads(out)["bases"] == [
        {"id": 1, "name": "b1", "path": b1, "is_dataset_root": False}]
    import shutil

    shutil.copytree(b1, str(tmp / "b1-replica"))
    code, out = run(capsys, "bases", root, "set", "b1", str(tmp / "b1-replica"))
    assert code == 0 and "b1-replica" in out and "version 4" in out
    code, out = run(capsys, "bases", root, "set", "1", "/x/../y")
    assert code == 1
    code, out = run(capsys, "bases", root, "add", str(tmp / "b2"), "--name", "b2", "--json")
    assert json.loads(out)["bases"][1] == {"id": 2, "name": "b2", "path": str(tmp / "b2"),
                                           "is_dataset_root": False}
    import lance

    assert lance.dataset(root).count_rows() == 38


def test_verify_reports_missing_files(multibase, capsys):
    root, b1, _ = multibase
    code, out = run(capsys, "verify", root, "--no-progress")
    assert code == 0 and "checked 6 data files, 2 deletion files" in out and out.strip().endswith("ok")
    victim = sorted(os.listdir(b1))[0]
    os.remove(os.path.join(b1, victim))
    code, out = run(capsys, "verify", root, "--json", "--no-progress")
    info = json.loads(out)
    assert code == 1 and info["missing"] == [os.path.join(b1, victim)] and not info["ok"]
    code, out = run(capsys, "verify", root, "--no-progress")
    assert code == 1 and f"MISSING     {os.path.join(b1, victim)}" in out
    # a file that is there but broken is reported as unreadable
    other = sorted(os.listdir(b1))[0]
    with open(os.path.join(b1, other), "r+b") as f:
        f.truncate(10)
    info = json.loads(run(capsys, "verify", root, "--json", "--no-progress")[1])
    assert [u for u, _ in info["unreadable"]] == [os.path.join(b1, other)]


def test_clone_tags_branches_prefixes(multibase, capsys):
    root, b1, tmp = multibase
    code, out = run(capsys, "tags", root, "create", "first", "1")
    assert code == 0 and "first -> version 1" in out
    code, out = run(capsys, "clone", root, str(tmp / "clone"), "--version", "first", "--json")
    info = json.loads(out)
    assert info["version"] == 1 and {b["id"] for b in info["bases"]} == {0, 1}
    code, out = run(capsys, "prefixes", str(tmp / "clone"), "--json")
    got = {(p["kind"], p["prefix"]) for p in json.loads(out)["prefixes"]}
    assert got == {("root", str(tmp / "clone")), ("data", b1)}
    code, out = run(capsys, "prefixes", root)
    assert f"{root}/_deletions  (deletions, 2 files)" in out and f"{b1}  (data, base 1 b1, 4 files)" in out
    code, out = run(capsys, "branches", root, "create", "exp", "--version", "2", "--json")
    assert json.loads(out)["exp"]["parent_version"] == 2
    code, out = run(capsys, "tags", root, "delete", "first", "--json")
    assert json.loads(out) == {}


def test_cleanup_command(multibase, capsys):
    import time

    root, _, _ = multibase
    time.sleep(0.05)
    code, out = run(capsys, "cleanup", root, "--older-than", "0s", "--dry-run", "--json",
                    "--no-progress")
    dry = json.loads(out)
    assert code == 0 and dry["dry_run"] and dry["old_versions"] == 2
    assert all(os.path.exists(u) for u in dry["removed"])
    assert all(u.startswith(root + "/") for u in dry["removed"])  # the base is not owned
    code, out = run(capsys, "cleanup", root, "--older-than", "0s", "--dry-run", "--json",
                    "--no-progress", "--owned-base", "b1")
    owned = json.loads(out)
    assert set(dry["removed"]) <= set(owned["removed"])
    assert all(os.path.exists(u) for u in owned["removed"])
    code, out = run(capsys, "cleanup", root, "--older-than", "0s", "--no-progress")
    assert code == 0 and "removed 2 old versions" in out
    assert not any(os.path.exists(u) for u in dry["removed"])
    import lance

    assert lance.dataset(root).count_rows() == 38
    with pytest.raises(SystemExit):
        cli.main(["cleanup", root, "--older-than", "soon"])


def test_parse_duration():
    from datetime import timedelta

    assert cli.parse_duration("14d") == timedelta(days=14)
    assert cli.parse_duration("36h") == timedelta(hours=36)
    assert cli.parse_duration("90") == timedelta(seconds=90)
    assert cli.parse_duration("14days") == timedelta(days=14)
    with pytest.raises(SystemExit):
        cli.parse_duration("soon")


def test_verify_pylance_dataset_in_every_version(tmp_path, storage_version, capsys):
    """verify opens every data file of a pylance dataset, whatever file version it wrote."""
    import lance
    import pyarrow as pa

    root = str(tmp_path / "pl")
    t = pa.table({"id": pa.array(range(30), pa.int64()), "s": [f"s{i}" for i in range(30)]})
    lance.write_dataset(t, root, max_rows_per_file=10, data_storage_version=storage_version)
    lance.dataset(root).delete("id % 4 = 1")
    code, out = run(capsys, "verify", root, "--no-progress")
    assert code == 0 and "checked 3 data files, 3 deletion files" in out, out
    data = os.path.join(root, "data")
    victim = os.path.join(data, sorted(os.listdir(data))[0])
    with open(victim, "r+b") as f:
        f.truncate(40)
    info = json.loads(run(capsys, "verify", root, "--json", "--no-progress")[1])
    assert [u for u, _ in info["unreadable"]] == [victim]
def test_manifest_store_option_sees_a_dead_writers_commit(tmp_path, capsys, monkeypatch):
    import pyarrow as pa

    import lancefmt
    from lancefmt.table import commit_external

    uri = str(tmp_path / "ds")
    store = f"sqlite://{tmp_path}/m.db"
    lancefmt.write_dataset(pa.table({"a": [1]}), uri, manifest_store=store)
    with monkeypatch.context() as m:  # the writer stops right after its commit point
        m.setattr(commit_external, "_finish_commit", lambda *a, **k: None)
        lancefmt.write_dataset(pa.table({"a": [2]}), uri, mode="append", manifest_store=store)
    assert cli.main(["versions", uri, "--json"]) == 0
    assert [v["version"] for v in json.loads(capsys.readouterr().out)] == [1]
    assert cli.main(["versions", uri, "--json", "--manifest-store", store]) == 0
    assert [v["version"] for v in json.loads(capsys.readouterr().out)] == [1, 2]
    assert cli.main(["inspect", uri, "--json", "--manifest-store", store]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 2
