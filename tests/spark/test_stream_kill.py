"""A streaming query really killed (``kill -9`` of its process group: the Python driver, its JVM
and the Python workers) after at least one micro-batch committed, preferably while a batch is
being written, then restarted from the same checkpoint in a fresh process: no row lost, none
duplicated, and no file left that the dataset does not reference.

Two JVMs start one after the other (each run's time is printed); on a 2-core machine loaded
~10x over (load average 20) it took ~6 minutes, most of it JVM and Python-worker start-up."""
import glob
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
import lance  # noqa: E402

from lancefmt.spark.history import BATCH_ID_KEY, transaction, version_numbers  # noqa: E402
from lancefmt.table.versions import load_manifest  # noqa: E402

from .conftest import _spark_available  # noqa: E402

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stream_kill_child.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES, ROWS = 4, 20_000


def _start(source, ckpt, uri):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.Popen([sys.executable, CHILD, source, ckpt, uri], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)  # its own process group: the JVM and workers too


def _pending(uri):
    return glob.glob(os.path.join(uri, "_lancefmt_staging", "*", "*.pending"))


@pytest.mark.spark
@pytest.mark.slow
def test_killed_query_restarts_without_loss_duplicates_or_orphans(tmp_path):
    reason = _spark_available()
    if reason:
        pytest.skip(reason)
    source, ckpt, uri = str(tmp_path / "in"), str(tmp_path / "ckpt"), str(tmp_path / "out.lance")
    os.makedirs(source)
    for i in range(FILES):
        ids = range(i * ROWS, (i + 1) * ROWS)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array([f"row-{j}" for j in ids])}),
                       os.path.join(source, f"part-{i:03d}.parquet"))

    t0 = time.monotonic()
    proc = _start(source, ckpt, uri)
    mid_write = False
    try:
        deadline = time.monotonic() + 240
        while not version_numbers(uri):                 # at least one micro-batch committed
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the streaming query committed nothing"
            time.sleep(0.02)
        until = time.monotonic() + 20
        while time.monotonic() < until and not mid_write:  # then, ideally, while a batch writes
            mid_write = bool(_pending(uri))
            time.sleep(0.005)
        assert proc.poll() is None, "the query finished before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    committed = version_numbers(uri)
    t1 = time.monotonic()
    assert 1 <= len(committed) < FILES

    proc = _start(source, ckpt, uri)                    # a fresh process, the same checkpoint
    try:
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0 and b"finished" in out, out.decode()[-3000:]

    ids = lance.dataset(uri).to_table(columns=["id"])["id"].to_pylist()
    assert len(ids) == FILES * ROWS and sorted(ids) == list(range(FILES * ROWS))  # none lost, none twice
    versions = version_numbers(uri)
    batches = [int(transaction(uri, v)[1].transaction_properties[BATCH_ID_KEY]) for v in versions]
    assert batches == list(range(FILES)), f"versions {versions} commit batches {batches}"
    mf = load_manifest(uri)
    referenced = {p.rsplit("/", 1)[-1] for p in mf.fragments.data_file_paths().to_pylist()}
    assert set(os.listdir(os.path.join(uri, "data"))) == referenced  # no orphan data file
    assert not os.path.exists(os.path.join(uri, "_lancefmt_staging"))
    print(f"first run {t1 - t0:.0f} s, restart {time.monotonic() - t1:.0f} s; killed after {len(committed)} commit(s), {'while' if mid_write else 'not while'} "
          f"a batch was being written")
