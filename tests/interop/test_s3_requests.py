"""Request economy on S3, counted by the server (a moto server that logs every request):
opening the latest of 1,000 versions costs one LIST of ``_versions/`` and a bounded number of
GETs; scans read with ranged, coalesced GETs issued in parallel."""
import pyarrow as pa
import pytest

import lancefmt
from s3_counting import new_bucket
from lancefmt.io import open_store
from lancefmt.table.manifest import encode_manifest_file
from lancefmt.table.versions import manifest_uri

lance = pytest.importorskip("lance")

N_VERSIONS = 1000


def pylance_options(opts):
    return {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1",
            "endpoint": opts["endpoint_url"], "allow_http": "true"}


def _thousand_versions(uri, opts):
    """Version 1 written by lancefmt, then versions 2..1000 as config-only manifests (the
    manifest of v1 with a new version number and a config key), put straight into the
    in-process moto backend (1,000 HTTP PUTs would take half a minute here)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    ds = lancefmt.write_dataset(pa.table({"a": pa.array(range(100), pa.int64())}), uri,
                                storage_options=opts)
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    bucket = uri[len("s3://"):].split("/", 1)[0]
    base = ds.manifest_file
    txn = base.transaction()
    for v in range(2, N_VERSIONS + 1):
        m = type(base.manifest)()
        m.CopyFrom(base.manifest)
        m.version = v
        m.config["v"] = str(v)
        key = manifest_uri(uri, v)[len(f"s3://{bucket}/"):]
        backend.put_object(bucket, key, encode_manifest_file(m, txn, base.indices))


def test_open_latest_of_1000_versions(counting_s3):
    opts, log = counting_s3
    uri = f"s3://{new_bucket(opts)}/ds"
    _thousand_versions(uri, opts)
    # a few stray objects beside the manifests push the listing past one page of 1,000 keys
    store = open_store(uri, opts)
    for i in range(3):
        store.put(f"{uri}/_versions/{manifest_uri(uri, 5).rsplit('/', 1)[1]}-stray{i}", b"x")
    log.reset()
    ds = lancefmt.dataset(uri, storage_options=opts)
    assert ds.version == N_VERSIONS and ds.config()["v"] == str(N_VERSIONS)
    counts = log.counts("/_versions")
    assert counts["LIST"] == 1, log.requests
    assert counts["GET"] <= 2 and counts["HEAD"] == 0, log.requests
    assert sum(log.counts().values()) == counts["LIST"] + counts["GET"], log.requests
    # what pylance sees agrees
    assert lance.dataset(uri, storage_options=pylance_options(opts)).version == N_VERSIONS


def test_scan_uses_parallel_ranged_gets(counting_s3):
    opts, log = counting_s3
    uri = f"s3://{new_bucket(opts)}/ds"
    n = 40_000
    t = pa.table({"a": pa.array(range(n), pa.int64()), "b": pa.array([float(i) for i in range(n)]),
                  "s": [f"row-{i}" for i in range(n)]})
    lancefmt.write_dataset(t, uri, max_rows_per_file=2_500, storage_options=opts)
    ds = lancefmt.dataset(uri, storage_options=opts)
    log.reset()
    got = ds.to_table()
    assert got.sort_by("a").equals(t)
    data = [r for r in log.requests if "/data/" in r[1]]
    n_files = len(ds.get_fragments())
    assert n_files == 16
    # every file: a tail read and a coalesced read of its column pages (a few at most)
    assert len(data) <= 4 * n_files, len(data)
    assert all(m == "GET" for m, _, _ in data)
    assert log.max_in_flight >= 2, "a scan reads several files at once"


def test_open_latest_through_the_external_store_lists_nothing(counting_s3, tmp_path):
    opts, log = counting_s3
    uri = f"s3://{new_bucket(opts)}/ds"
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    ds = lancefmt.write_dataset(pa.table({"a": pa.array(range(10), pa.int64())}), uri,
                                storage_options=opts, manifest_store=ms)
    for _ in range(3):
        ds.update_config({"k": str(ds.version)})
    log.reset()
    ds = lancefmt.dataset(uri, storage_options=opts, manifest_store=ms)
    assert ds.version == 4
    counts = log.counts()
    assert counts["LIST"] == 0 and counts["HEAD"] == 0 and counts["GET"] <= 2, log.requests


def test_take_reads_every_file_in_one_round(counting_s3):
    """A take over many fragments and columns issues its reads together (one coalesced GET per
    data file, all in flight at once), and no more GETs than pylance's take of the same rows."""
    import numpy as np

    opts, log = counting_s3
    uri = f"s3://{new_bucket(opts)}/ds"
    n = 40_000
    table = pa.table({"a": pa.array(np.arange(n)), "b": pa.array(np.arange(n) * 0.5),
                      "c": pa.array([f"s{i}" for i in range(n)])})
    lance.write_dataset(table, uri, storage_options=pylance_options(opts), max_rows_per_file=5_000)
    ours = lancefmt.dataset(uri, storage_options=opts)
    theirs = lance.dataset(uri, storage_options=pylance_options(opts))
    idx = np.sort(np.random.default_rng(5).choice(n, 300, replace=False))
    ours.take(idx)  # opens the files (footers, page metadata), as a service's first take does
    theirs.take(idx)
    try:
        log.latency = 0.3  # every request is still in flight when the next one of a round comes
        log.reset()
        got = ours.take(idx)
        ours_gets, in_flight = log.counts()["GET"], log.max_in_flight
        log.reset()
        expected = theirs.take(idx)
        theirs_gets = log.counts()["GET"]
    finally:
        log.latency = 0.0
    assert got.equals(expected)
    assert ours_gets == in_flight == 8, log.requests     # 8 data files, one round
    assert ours_gets <= theirs_gets
