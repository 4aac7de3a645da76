"""The table metadata layer on s3 (a local moto server): a pylance dataset copied into a bucket is
read by lancefmt, lancefmt commits the next version there, and pylance reads that version from
s3."""
import os

import lance
import pytest

from lancefmt.io import open_store
from lancefmt.table import manifest as mf
from lancefmt.table.versions import latest_manifest, list_versions, load_manifest

from table_datasets import commit_config_update, table


def pylance_options(opts):
    return {"aws_endpoint": opts["endpoint_url"], "aws_access_key_id": opts["key"],
            "aws_secret_access_key": opts["secret"], "aws_region": "us-east-1", "allow_http": "true"}


@pytest.fixture
def s3_dataset(s3_uri, tmp_path):
    uri, opts = s3_uri
    local = str(tmp_path / "ds")
    lance.write_dataset(table(50), local, max_rows_per_file=20)
    lance.dataset(local).delete("x < 4")
    store = open_store(uri, opts)
    for dirpath, _, files in os.walk(local):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), local)
            if rel == "_versions/latest_version_hint.json":
                continue  # pylance writes no hint on s3
            with open(os.path.join(dirpath, f), "rb") as fh:
                store.put(uri + "/" + rel, fh.read())
    return uri, opts


def test_read_and_commit_on_s3(s3_dataset, monkeypatch):
    uri, opts = s3_dataset
    popts = pylance_options(opts)
    ds = lance.dataset(uri, storage_options=popts)
    assert latest_manifest(uri, storage_options=opts).version == ds.version == 2
    assert list_versions(uri, storage_options=opts) == ds.versions()
    monkeypatch.setattr(mf, "PREFETCH_SIZE", 64)  # force the second ranged read
    m = load_manifest(uri, storage_options=opts)
    assert m.fragments.total_live_rows == ds.count_rows() == 46
    assert m.transaction().WhichOneof("operation") == "delete"

    store = open_store(uri, opts)
    old, new = commit_config_update(uri, "where", "s3", opts)
    assert not store.exists(uri + "/_versions/latest_version_hint.json")
    ds = lance.dataset(uri, storage_options=popts)
    assert ds.version == old + 1
    assert ds.config()["where"] == "s3"
    assert ds.count_rows() == 46
    ds.validate()
