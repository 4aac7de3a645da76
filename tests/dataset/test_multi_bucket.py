"""A dataset over several S3 buckets (issue 26), against moto behind the proxy: a round-robin
write uploads its data files concurrently (close does not wait for the upload; the commit
does), a failed upload leaves no version and no object, and a 3-bucket dataset scans and takes
as the 1-bucket one, reading each bucket."""
import uuid

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt import BasePath
from lancefmt.errors import StorageError
from lancefmt.io import open_store, wait_durable
from lancefmt.io import uploads
from lancefmt.dataset.read.scan import default_threads


@pytest.fixture
def buckets(proxied_s3):
    """The proxy, a root bucket and three data buckets; options without retries (a fault
    is a failure at once)."""
    from s3_proxy import create_bucket

    env, root = proxied_s3
    data = [create_bucket(env.upstream) for _ in range(3)]
    options = env.pylance_options(client_max_retries="0")
    return env, root, data, options


def _table(rows=3000):
    rng = np.random.default_rng(3)
    return pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)),
                     "v": pa.array(rng.random(rows)), "s": [f"r{i}" for i in range(rows)]})


def _write(uri, buckets, options, table, tag, **kw):
    bases = [BasePath(f"s3://{b}/{tag}", name=f"b{i}") for i, b in enumerate(buckets)]
    return lancefmt.write_dataset(table, uri, storage_options=options, max_rows_per_file=500,
                                  initial_bases=bases, target_bases=[b.name for b in bases], **kw)


def _objects(store, bucket, prefix=""):
    return sorted(i.uri for i in store.walk(f"s3://{bucket}/{prefix}".rstrip("/")))


def _data_files(ds):
    out = set()
    for frag in ds.get_fragments():
        for df in frag.data_files():
            out.add(str(df))
    return out


def test_round_robin_write_uploads_concurrently_and_every_file_is_there(buckets):
    env, root, data, options = buckets
    env.proxy.reset(latency=0.1)
    table = _table()
    ds = _write(f"s3://{root}/ds", data, options, table, "t1")
    puts = env.proxy.seen("PUT")
    assert uploads.pending_count() == 0
    # six data files: their PUTs were in flight together (close did not wait for each)
    data_puts = [p for p in puts if any(p.bucket == b for b in data)]
    assert len(data_puts) == 6
    assert env.proxy.max_in_flight >= 3
    # the manifest was created after every data file (its PUT comes last among the PUTs of
    # the root bucket, and all data PUTs were answered before it was sent: the barrier)
    store = open_store("s3://x", options)
    per_bucket = [_objects(store, b, "t1") for b in data]
    assert [len(objs) for objs in per_bucket] == [2, 2, 2]
    assert {u for objs in per_bucket for u in objs} == _data_files(ds)
    again = lancefmt.dataset(f"s3://{root}/ds", storage_options=options)
    assert again.to_table().equals(table)


def test_scan_of_three_buckets_equals_one_bucket(buckets):
    env, root, data, options = buckets
    table = _table()
    three = _write(f"s3://{root}/three", data, options, table, "three")
    one = _write(f"s3://{root}/one", data[:1], options, table, "one")
    three = lancefmt.dataset(three.uri, storage_options=options)
    one = lancefmt.dataset(one.uri, storage_options=options)
    env.proxy.reset()
    got = three.to_table()
    assert got.equals(one.to_table()) and got.equals(table)
    assert three.to_table(filter="id >= 2500", columns=["s"]).equals(
        one.to_table(filter="id >= 2500", columns=["s"]))
    idx = [0, 499, 500, 1501, 2999]
    assert three.take(idx).equals(one.take(idx))
    # the three buckets were each read (fragments of different buckets, one scan)
    env.proxy.reset()
    lancefmt.dataset(three.uri, storage_options=options).to_table()
    gets = env.proxy.seen("GET")
    assert {g.bucket for g in gets} >= set(data)
    for b in data:
        assert sum(1 for g in gets if g.bucket == b) >= 2
    # with latency, the buckets' reads are in flight together (scan, then take)
    env.proxy.reset(latency=0.1)
    fresh = lancefmt.dataset(three.uri, storage_options=options)
    env.proxy.reset()
    assert fresh.to_table().equals(table)
    assert env.proxy.max_in_flight >= 3
    fresh = lancefmt.dataset(three.uri, storage_options=options)
    env.proxy.reset()
    assert fresh.take(idx).equals(one.take(idx))
    assert env.proxy.max_in_flight >= 3
    env.proxy.reset(latency=0.0)
    # pylance reads the same multi-bucket dataset with the same options
    lance = pytest.importorskip("lance")
    assert lance.dataset(three.uri, storage_options=options).to_table().equals(table)


def test_failed_upload_fails_the_commit_and_leaves_nothing(buckets):
    env, root, data, options = buckets
    table = _table()
    uri = f"s3://{root}/ds"
    ds = _write(uri, data, options, table, "t3")
    store = open_store("s3://x", options)
    before = [_objects(store, b, "t3") for b in data]
    env.proxy.inject("internal", times=100, method="PUT", path_contains=f"/{data[1]}/t3/")
    with pytest.raises(StorageError) as err:
        lancefmt.write_dataset(table, ds, mode="append", max_rows_per_file=500,
                               target_bases=["b0", "b1", "b2"], storage_options=options)
    assert data[1] in str(err.value)  # names the object that failed
    assert env.proxy.faults_served["internal"] >= 1
    assert lancefmt.dataset(uri, storage_options=options).version == ds.version
    assert [_objects(store, b, "t3") for b in data] == before  # no orphan in any bucket
    assert uploads.failed_uris() == [] and uploads.pending_count() == 0
    env.proxy.reset()  # the fault rule goes
    wait_durable()  # nothing left to report: the next commit goes through
    ds2 = lancefmt.write_dataset(table, ds, mode="append", max_rows_per_file=500,
                                 target_bases=["b0", "b1", "b2"], storage_options=options)
    assert ds2.count_rows() == 2 * table.num_rows


def test_failed_multipart_completion_aborts_and_reports_until_deleted(buckets):
    env, root, data, options = buckets
    store = open_store("s3://x", options)
    uri = f"s3://{data[0]}/{uuid.uuid4().hex[:8]}/big.lance"
    env.proxy.inject("internal", times=1, kind="COMPLETE_MULTIPART")
    out = store.open_output(uri)
    out.write(b"x" * (6 << 20))
    out.close_later()  # returns before the upload is completed
    with pytest.raises(StorageError) as err:
        wait_durable()
    assert uri in str(err.value)
    assert not store.exists(uri)
    assert len(env.proxy.seen("ABORT_MULTIPART")) == 1
    with pytest.raises(StorageError):  # every barrier, until the object is deleted
        wait_durable()
    store.delete(uri)
    wait_durable()


def test_delete_waits_for_a_pending_upload(buckets):
    env, root, data, options = buckets
    store = open_store("s3://x", options)
    uri = f"s3://{data[2]}/{uuid.uuid4().hex[:8]}/small.lance"
    env.proxy.reset(latency=0.2)
    out = store.open_output(uri)
    out.write(b"y" * 1000)
    out.close_later()
    assert uploads.pending_count() == 1
    store.delete(uri)  # settles the upload first: no object appears after the delete
    wait_durable()
    assert not store.exists(uri)
    kinds = [s.kind for s in env.proxy.seen() if s.key.endswith("small.lance")]
    assert kinds.index("PUT") < kinds.index("DELETE")


def test_plain_close_is_in_place_when_it_returns(buckets):
    env, root, data, options = buckets
    store = open_store("s3://x", options)
    uri = f"s3://{data[0]}/{uuid.uuid4().hex[:8]}/f.bin"
    env.proxy.reset(latency=0.05)
    with store.open_output(uri) as out:
        out.write(b"z" * 100)
    assert uploads.pending_count() == 0
    assert store.read(uri) == b"z" * 100


def test_local_root_with_bucket_bases_scans_as_remote(buckets, tmp_path):
    env, root, data, options = buckets
    table = _table(600)
    ds = _write(str(tmp_path / "ds"), data[:2], options, table, "t4",
                base_store_params={"b0": options, "b1": options})
    ds = lancefmt.dataset(str(tmp_path / "ds"), base_store_params={"b0": options, "b1": options})
    assert ds.to_table().equals(table)
    from lancefmt.dataset.core.snapshot import Snapshot

    snap = Snapshot.open(str(tmp_path / "ds"), base_store_params={"b0": options, "b1": options})
    assert default_threads(snap.ctx) == 16  # latency-bound, as a root in a bucket
