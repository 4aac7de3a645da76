"""The distributed jobs on a Spark cluster of two executor processes (``local-cluster[2,1,1024]``:
two executor JVMs, each with its own Python workers), run by ``local_cluster_child.py`` in a
process of its own (this process may own a local session already; one JVM per process):

* compaction with one task's Python worker killed after it wrote its files: one commit, no
  duplicate row, no unreferenced file, and pylance's ``compact_files`` result on a copy;
* a backfill (SQL expression and Python UDF) and a merge: pylance's ``add_columns`` /
  ``merge_insert`` results on a copy;
* an append committed by another writer (pylance) while a compaction runs, between its rewrite
  and its commit: the appended rows and the compaction both survive;
* both executors ran tasks of the compaction (the application's status store);
* an IVF_PQ build: the model trained on the driver, four encoding tasks over both executors,
  one segment and one commit, searched by pylance through the index.

The cluster's executors are started from ``SPARK_HOME``'s ``jars``; their work directories go
under ``SPARK_HOME/work``, so the child gets a ``SPARK_HOME`` of its own (links to the installed
Spark's ``bin`` and ``jars``) under the test's temporary directory."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
import lance  # noqa: E402

from .conftest import _spark_available, assert_same_rows, twins, unreferenced_files  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "local_cluster_child.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS, PER_FILE, TARGET = 4000, 500, 800   # 8 fragments; compaction: 4 groups of 2, 4 tasks
DELETED = "id % 7 = 3"
VECTOR_ROWS = 4000                        # 8 fragments; the vector build: 4 encoding tasks


def rows(ids):
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "x": ids * 0.5, "s": pa.array([f"r{i}" for i in ids])})


def upper_s(batch):
    return pa.record_batch({"t": pc.utf8_upper(batch.column("s"))})


def live_ids(ids):
    return [i for i in ids if i % 7 != 3]


def spark_home(tmp_path) -> str:
    import pyspark

    installed = os.environ.get("SPARK_HOME") or os.path.dirname(os.path.abspath(pyspark.__file__))
    home = tmp_path / "spark_home"
    home.mkdir()
    for name in ("bin", "jars"):
        os.symlink(os.path.join(installed, name), home / name)
    return str(home)


def prepare(tmp_path) -> tuple[dict, dict]:
    """The child's plan, and the pylance copies: {job: (lancefmt's URI, pylance's URI)}."""
    pairs = {}
    for job in ("compact", "backfill", "merge", "append"):
        (tmp_path / job).mkdir()
        pairs[job] = twins(tmp_path / job, rows(range(ROWS)), max_rows_per_file=PER_FILE)
        for uri in pairs[job]:
            lance.dataset(uri).delete(DELETED)
    merge_source = rows(list(range(0, ROWS, 20)) + list(range(ROWS, ROWS + 100)))
    merge_source = merge_source.set_column(1, "x", pc.negate(merge_source["x"]))
    pq.write_table(merge_source, tmp_path / "merge_source.parquet")
    pq.write_table(rows(range(10_000, 10_050)), tmp_path / "append_rows.parquet")
    (tmp_path / "faults").mkdir()
    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((VECTOR_ROWS, 16)).astype(np.float32)
    lance.write_dataset(pa.table({"id": np.arange(VECTOR_ROWS), "vec": pa.FixedSizeListArray.from_arrays(
        pa.array(vecs.ravel()), 16)}), str(tmp_path / "vector"), max_rows_per_file=PER_FILE)
    plan = {job: pair[0] for job, pair in pairs.items()}
    plan.update(vector=str(tmp_path / "vector"), vector_rows_per_task=VECTOR_ROWS // 4)
    plan.update(target=TARGET, faults=str(tmp_path / "faults"),
                merge_source=str(tmp_path / "merge_source.parquet"),
                append_rows=str(tmp_path / "append_rows.parquet"))
    return plan, pairs


def run_child(tmp_path, plan) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["SPARK_HOME"] = spark_home(tmp_path)
    proc = subprocess.Popen([sys.executable, CHILD, json.dumps(plan)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # its group: the JVMs and workers too
    try:
        out, err = proc.communicate(timeout=400)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines = out.decode().strip().splitlines()
    assert proc.returncode == 0 and lines, \
        f"child exit {proc.returncode}\nstdout:\n{out.decode()[-2000:]}\nstderr:\n{err.decode()[-6000:]}"
    return json.loads(lines[-1])


def check_killed_task(job: dict, name: str) -> None:
    assert job["fault_fired"], f"{name}: no task was killed"
    assert sum(job["failed"].values()) >= 1, f"{name}: Spark saw no failed task {job}"


def test_jobs_on_two_executor_processes(tmp_path):
    reason = _spark_available()
    if reason:
        pytest.skip(reason)
    plan, pairs = prepare(tmp_path)
    report = run_child(tmp_path, plan)
    print(f"startup {report['startup_seconds']} s, jobs {report['jobs_seconds']} s: "
          + ", ".join(f"{k} {report[k]['seconds']} s" for k in ("compact", "backfill", "merge",
                                                                 "append", "vector")))
    assert len(report["executors"]) == 2

    # compaction, one task killed and retried
    job, (uri, copy) = report["compact"], pairs["compact"]
    check_killed_task(job, "compact")
    theirs = lance.dataset(copy).optimize.compact_files(target_rows_per_fragment=TARGET)
    assert job["result"] == {k: getattr(theirs, k) for k in job["result"]}
    assert lance.dataset(uri).version == 3                      # write, delete, one rewrite
    assert len(lance.dataset(uri).get_fragments()) == len(lance.dataset(copy).get_fragments()) == 4
    ids = lance.dataset(uri).to_table(columns=["id"])["id"].to_pylist()
    assert sorted(ids) == live_ids(range(ROWS))                 # none lost, none twice
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []
    # both executor processes ran rewrite tasks
    assert sorted(job["completed"]) == report["executors"]
    assert all(n >= 1 for n in job["completed"].values()), job["completed"]

    # backfill: an SQL expression and a Python UDF
    job, (uri, copy) = report["backfill"], pairs["backfill"]
    lance.dataset(copy).add_columns({"y": "x * 2 + id"})
    lance.dataset(copy).add_columns(lance.batch_udf()(upper_s), read_columns=["s"])
    assert job["result"] == lance.dataset(uri).version == 3
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []

    # merge (update matched, insert the rest)
    job, (uri, copy) = report["merge"], pairs["merge"]
    stats = lance.dataset(copy).merge_insert("id").when_matched_update_all() \
        .when_not_matched_insert_all().execute(pq.read_table(plan["merge_source"]))
    assert job["result"] == {k: stats[k] for k in job["result"]}
    assert job["result"]["num_updated_rows"] > 0 and job["result"]["num_inserted_rows"] > 100
    assert lance.dataset(uri).version == 3
    assert_same_rows(uri, copy)
    assert unreferenced_files(uri) == []

    # an append by pylance between the compaction's rewrite and its commit
    job, (uri, _) = report["append"], pairs["append"]
    ds = lance.dataset(uri)
    ids = sorted(ds.to_table(columns=["id"])["id"].to_pylist())
    assert ids == live_ids(range(ROWS)) + list(range(10_000, 10_050))
    assert job["result"]["runs"] == 1 and ds.version == 4      # rebased over the append
    fragments = ds.get_fragments()
    assert len(fragments) == 5 and 50 in [f.count_rows() for f in fragments]  # 4 compacted + the append
    assert [f.fragment_id for f in fragments] == sorted(f.fragment_id for f in fragments)
    ds.validate()
    assert all(f.metadata.deletion_file is None for f in fragments)
    assert unreferenced_files(uri) == []

    # a vector index: encoded on both executors, one segment, one commit
    job = report["vector"]
    assert job["result"] == {"version": 2, "segments": 1}
    assert all(n >= 1 for n in job["completed"].values()), job["completed"]
    ds = lance.dataset(plan["vector"])
    ds.validate()
    q = np.ones(16, np.float32)
    assert "ANNIvfPartition" in ds.scanner(nearest={"column": "vec", "q": q}).explain_plan()
    assert ds.stats.index_stats("vec_idx")["num_indexed_rows"] == VECTOR_ROWS
