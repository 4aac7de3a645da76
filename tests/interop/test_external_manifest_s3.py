"""The external manifest store on S3 (moto servers on loopback) with SqliteManifestStore:
several processes appending lose no commit, the three-bucket scenario of the multi-base blog
(per-base storage options, two endpoints) is read back by pylance, and writers SIGKILLed at
random points of their commits leave a dataset that readers see consistently, that the next
writer commits to, and whose final manifests pylance reads."""
import multiprocessing as mp
import os
import random
import signal
import time

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.table import commit_external
from s3_counting import new_bucket

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe")

lance = pytest.importorskip("lance")


def pylance_options(opts):
    return {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1",
            "endpoint": opts["endpoint_url"], "allow_http": "true"}


def row(tag, seq):
    return pa.table({"w": pa.array([tag]), "seq": pa.array([seq], pa.int64())})


def _fresh_process_state():
    """A forked child opens its own object stores (s3fs sessions are per process)."""
    from lancefmt.io.store import _STORES

    _STORES.clear()


def _appender(uri, opts, ms_path, tag, n, kill_point=None, kill_at=None):
    _fresh_process_state()
    ms = lancefmt.SqliteManifestStore(ms_path)
    if kill_point is not None:
        _arm_kill(ms, kill_point, kill_at)
    for seq in range(n):
        lancefmt.write_dataset(row(tag, seq), uri, mode="append", storage_options=opts,
                               manifest_store=ms)


def _arm_kill(ms, point, at):
    """SIGKILL this process at ``point`` of its ``at``-th commit (0-based)."""
    calls = {"claim": 0, "mark": 0}
    claim, mark = ms.put_if_not_exists, ms.put_if_exists

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def put_if_not_exists(*a, **k):
        if point == "before_claim" and calls["claim"] == at:
            die()
        won = claim(*a, **k)
        if won:
            calls["claim"] += 1
            if point == "after_claim" and calls["claim"] == at + 1:
                die()
        return won

    def put_if_exists(*a, **k):
        if point == "after_copy" and calls["mark"] == at:
            die()
        done = mark(*a, **k)
        calls["mark"] += 1
        if point == "after_mark" and calls["mark"] == at + 1:
            die()
        return done

    ms.put_if_not_exists, ms.put_if_exists = put_if_not_exists, put_if_exists


def _check_consistent(uri, opts, ms, popts):
    """Readers with the store see a whole latest version; pylance reads the same final one."""
    ds = lancefmt.dataset(uri, storage_options=opts, manifest_store=ms)
    t = ds.to_table()
    assert t.num_rows == ds.version  # version 1 holds one row, every commit appends one
    for tag in set(t["w"].to_pylist()):
        seqs = sorted(s for w, s in zip(t["w"].to_pylist(), t["seq"].to_pylist()) if w == tag)
        assert seqs == list(range(len(seqs))), (tag, seqs)  # no commit lost or doubled
    theirs = lance.dataset(uri, storage_options=popts)
    assert theirs.version == ds.version
    assert theirs.to_table().sort_by([("w", "ascending"), ("seq", "ascending")]).equals(
        t.sort_by([("w", "ascending"), ("seq", "ascending")]))
    return ds


@pytest.fixture
def s3_dataset(counting_s3, tmp_path):
    opts, _ = counting_s3
    uri = f"s3://{new_bucket(opts)}/ds"
    ms_path = str(tmp_path / "manifests.db")
    ms = lancefmt.SqliteManifestStore(ms_path)
    lancefmt.write_dataset(row("init", 0), uri, storage_options=opts, manifest_store=ms)
    return uri, opts, ms


def test_four_processes_append_without_losing_a_commit(s3_dataset):
    uri, opts, ms = s3_dataset
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_appender, args=(uri, opts, ms.path, f"p{i}", 2))
             for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    ds = _check_consistent(uri, opts, ms, pylance_options(opts))
    assert ds.version == 9
    assert sorted(ds.to_table()["w"].to_pylist()) == ["init"] + [f"p{i}" for i in range(4)
                                                                 for _ in range(2)]
    assert ms.get_latest_version(ds.uri).version == 9


@pytest.mark.parametrize("point", ["before_claim", "after_claim", "after_copy", "after_mark"])
def test_writer_killed_at_each_step_of_the_protocol(s3_dataset, point):
    uri, opts, ms = s3_dataset
    popts = pylance_options(opts)
    ctx = mp.get_context("fork")
    p = ctx.Process(target=_appender, args=(uri, opts, ms.path, "k", 5, point, 1))
    p.start()
    p.join(timeout=120)
    assert p.exitcode == -signal.SIGKILL
    committed = 2 if point == "before_claim" else 3  # the killed commit counts once claimed
    ds = _check_consistent(uri, opts, ms, popts)
    assert ds.version == committed
    nxt = lancefmt.write_dataset(row("next", 0), uri, mode="append", storage_options=opts,
                                 manifest_store=ms)
    assert nxt.version == committed + 1
    _check_consistent(uri, opts, ms, popts)


def test_writer_killed_at_random_times(s3_dataset):
    uri, opts, ms = s3_dataset
    popts = pylance_options(opts)
    rng = random.Random(17)
    ctx = mp.get_context("fork")
    for round_ in range(3):
        p = ctx.Process(target=_appender, args=(uri, opts, ms.path, f"r{round_}", 50))
        p.start()
        time.sleep(rng.uniform(0.3, 1.5))
        os.kill(p.pid, signal.SIGKILL)
        p.join(timeout=60)
        before = _check_consistent(uri, opts, ms, popts).version
        nxt = lancefmt.write_dataset(row(f"next{round_}", 0), uri, mode="append",
                                     storage_options=opts, manifest_store=ms)
        assert nxt.version == before + 1
    final = _check_consistent(uri, opts, ms, popts)
    assert final.version >= 1 + 3


def test_three_buckets_with_per_base_options(counting_s3, s3_server, tmp_path):
    """The blog's scenario: the dataset root in one bucket, data spread over two more buckets
    that live behind another endpoint (reachable only through their per-base options)."""
    root_opts, log = counting_s3
    data_opts = s3_server
    log.reset()
    root = f"s3://{new_bucket(root_opts)}/my_dataset"
    b2, b3 = f"s3://{new_bucket(data_opts)}/data", f"s3://{new_bucket(data_opts)}/data"
    params = {b2: data_opts, b3: data_opts}
    ms = lancefmt.SqliteManifestStore(tmp_path / "manifests.db")
    t = pa.table({"id": pa.array(range(900), pa.int64()), "s": [f"v{i}" for i in range(900)]})
    ds = lancefmt.write_dataset(
        t.slice(0, 600), root, max_rows_per_file=200, storage_options=root_opts,
        initial_bases=[lancefmt.BasePath(b2, name="bucket2"), lancefmt.BasePath(b3, name="bucket3")],
        target_bases=["bucket2", "bucket3"], base_store_params=params, manifest_store=ms)
    ds = lancefmt.write_dataset(t.slice(600), ds, mode="append", target_bases=["bucket3"])
    ds.delete("id < 10")
    assert ds.version == 3 and ds.manifest_store is ms
    assert ms.get_latest_version(ds.uri).version == 3
    ours = lancefmt.dataset(root, storage_options=root_opts, base_store_params=params,
                            manifest_store=ms)
    assert ours.to_table().sort_by("id").equals(t.slice(10))
    theirs = lance.dataset(root, storage_options=pylance_options(root_opts),
                           base_store_params={b2: pylance_options(data_opts),
                                              b3: pylance_options(data_opts)})
    assert theirs.version == 3
    assert theirs.to_table().sort_by("id").equals(t.slice(10))
    # the data buckets were reached through their per-base options (the other endpoint) only
    data_buckets = {b2.split("/")[2], b3.split("/")[2]}
    assert not [r for r in log.requests if r[1].split("/")[1] in data_buckets]
    assert [r for r in log.requests if r[1].split("/")[1] == root.split("/")[2]]
