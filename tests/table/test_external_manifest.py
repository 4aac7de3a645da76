"""SqliteManifestStore: put-if-absent semantics, latest lookups, pickling, and several processes
claiming versions at once (each version is won exactly once)."""
import multiprocessing as mp
import pickle

import pytest

import lancefmt
from lancefmt.errors import InvalidArgumentError
from lancefmt.table.external_manifest import ManifestEntry, as_manifest_store

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe")


def test_put_if_not_exists_and_put_if_exists(tmp_path):
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    assert ms.get("s3://b/ds", 1) is None and ms.get_latest_version("s3://b/ds") is None
    assert ms.put_if_not_exists("s3://b/ds", 1, "p1-staged", 10)
    assert not ms.put_if_not_exists("s3://b/ds", 1, "other", 11)
    assert ms.get("s3://b/ds", 1) == ManifestEntry(1, "p1-staged", 10, None)
    assert ms.put_if_exists("s3://b/ds", 1, "p1", 10, "etag")
    assert not ms.put_if_exists("s3://b/ds", 2, "p2", 10)
    assert ms.get("s3://b/ds", 2) is None
    assert ms.put_if_not_exists("s3://b/ds", 3, "p3")
    assert ms.put_if_not_exists("s3://b/other", 9, "q9")
    assert ms.get_latest_version("s3://b/ds") == ManifestEntry(3, "p3", None, None)
    assert ms.get("s3://b/ds", 1) == ManifestEntry(1, "p1", 10, "etag")
    ms.delete("s3://b/ds")
    assert ms.get_latest_version("s3://b/ds") is None
    assert ms.get_latest_version("s3://b/other").version == 9


def test_pickles_by_path_and_sees_the_same_entries(tmp_path):
    ms = lancefmt.SqliteManifestStore(str(tmp_path / "m.db"))
    ms.put_if_not_exists("u", 1, "p")
    again = pickle.loads(pickle.dumps(ms))
    assert again.path == ms.path and again.get("u", 1).path == "p"
    assert again.put_if_not_exists("u", 2, "q")
    assert ms.get_latest_version("u").version == 2  # a second connection sees the commit


def test_wal_mode(tmp_path):
    ms = lancefmt.SqliteManifestStore(tmp_path / "m.db")
    assert ms._con().execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_as_manifest_store(tmp_path):
    assert as_manifest_store(None) is None
    ms = as_manifest_store(f"sqlite://{tmp_path}/x.db")
    assert isinstance(ms, lancefmt.SqliteManifestStore) and ms.path == f"{tmp_path}/x.db"
    assert as_manifest_store(ms) is ms
    ddb = as_manifest_store("dynamodb://tbl?region_name=us-east-1")
    assert isinstance(ddb, lancefmt.DynamoDBManifestStore) and ddb.table_name == "tbl"
    assert ddb.client_kwargs == {"region_name": "us-east-1"}
    for bad in ("etcd://t", "sqlite://", "dynamodb://", "dynamodb://t?x=1", 42):
        with pytest.raises(InvalidArgumentError):
            as_manifest_store(bad)


def _claim(path, worker, versions, out):
    ms = lancefmt.SqliteManifestStore(path)
    won = [v for v in range(1, versions + 1) if ms.put_if_not_exists("ds", v, f"w{worker}-{v}")]
    out.put((worker, won))


def test_processes_claim_each_version_once(tmp_path):
    path = str(tmp_path / "m.db")
    lancefmt.SqliteManifestStore(path)
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(path, w, 60, out)) for w in range(4)]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    claimed = sorted(v for won in results.values() for v in won)
    assert claimed == list(range(1, 61))  # every version exactly once
    ms = lancefmt.SqliteManifestStore(path)
    for w, won in results.items():
        for v in won:
            assert ms.get("ds", v).path == f"w{w}-{v}"
