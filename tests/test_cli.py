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
