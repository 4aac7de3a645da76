"""Vector indices built with Spark: the model trained once on the driver, fragments encoded on
the executors, one segment and one commit; pylance searches the result through the index."""
import os

import numpy as np
import pyarrow as pa
import pytest

import lancefmt

D = 16


def clustered(n, seed=3):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((8, D)).astype(np.float32) * 4
    X = centers[rng.integers(0, 8, n)] + rng.standard_normal((n, D)).astype(np.float32)
    return pa.table({"id": np.arange(n), "vec": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), D)}), X


@pytest.mark.parametrize("kind,kw", [("IVF_PQ", {"num_sub_vectors": 4}), ("IVF_HNSW_SQ", {"m": 8})])
def test_spark_builds_a_vector_index_in_one_commit(spark, tmp_path, kind, kw):
    from lancefmt.spark.indexing import create_vector_index

    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "ds")
    table, X = clustered(6000)
    lancefmt.write_dataset(table, uri, max_rows_per_file=1000)
    before = lancefmt.dataset(uri).version
    ds = create_vector_index(spark, uri, "vec", kind, num_partitions=4, rows_per_task=2000, **kw)
    assert ds.version == before + 1
    segments = ds.describe_indices()[0].segments
    assert len(segments) == 1 and sorted(segments[0].fragment_ids) == list(range(6))
    assert len(os.listdir(uri + "/_indices")) == 1           # the task segments were merged away
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.describe_indices()[0].index_type == kind
    assert theirs.stats.index_stats("vec_idx")["num_indexed_rows"] == 6000
    got = []
    for q in X[:10] + 0.01:
        nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 4}
        assert "ANNIvfPartition" in theirs.scanner(nearest=nearest).explain_plan()
        ann = theirs.to_table(nearest=nearest, columns=["id"])["id"].to_pylist()
        exact = theirs.to_table(nearest={**nearest, "use_index": False}, columns=["id"])["id"].to_pylist()
        assert ds.to_table(nearest=nearest, columns=["id"])["id"].to_pylist() == ann or kind != "IVF_PQ"
        got.append(len(set(ann) & set(exact)) / 10)
    assert np.mean(got) >= (0.5 if kind == "IVF_PQ" else 0.8)


def _encode_probe(item, staging):
    """Encode one group's segment as an executor task does, and count the threads that ran the
    PQ coding kernel; also the cores and scan threads this process allowed meanwhile."""
    import threading

    from lancefmt.dataset.read.scan import default_threads
    from lancefmt.index.vector import _kmeans
    from lancefmt.io.cores import cores
    from lancefmt.spark.indexing import encode_on_executor
    from lancefmt.spark.task_cores import task_cpus

    real, seen = _kmeans.pq_encode, set()

    def counted(*args):
        seen.add(threading.get_ident())
        return real(*args)

    _kmeans.pq_encode = counted
    try:
        segment = encode_on_executor(item, staging)
    finally:
        _kmeans.pq_encode = real
    return {"segment": segment, "coding_threads": len(seen), "cores": cores(),
            "scan_threads": default_threads(), "task_cpus": task_cpus()}


def test_executor_tasks_encode_on_their_own_cores(spark, tmp_path):
    """A task's vector coding (and its scans) run on as many threads as Spark gave the task
    cores (``spark.task.cpus``), not on every core of the host; the driver is not limited."""
    from lancefmt.dataset.indices.vector_create import plan_vector_build, train_shared_model
    from lancefmt.io.cores import core_limit
    from lancefmt.spark.jobs import Pinned, StagedJob, run_tasks

    uri = str(tmp_path / "ds")
    table, _ = clustered(40_000)
    lancefmt.write_dataset(table, uri, max_rows_per_file=20_000)
    pinned = Pinned.latest(uri)
    snapshot = pinned.snapshot()
    req = plan_vector_build(snapshot, "vec", "IVF_PQ", None, "L2",
                            {"num_partitions": 4, "num_sub_vectors": 4})
    params = {**req.params, **train_shared_model(snapshot, req)}
    params.pop("index_type"), params.pop("metric")
    items = [(pinned, "vec", "IVF_PQ", "vec_idx", "L2", [f], params) for f in (0, 1)]
    cpus = int(spark.sparkContext.getConf().get("spark.task.cpus", "1"))
    job = StagedJob(pinned).open()
    try:
        on_executors = run_tasks(spark, job, items, _encode_probe, "index")
        with core_limit(3), job.task() as staging:  # the driver: its own choice of cores
            on_driver = _encode_probe(items[0], staging)
    finally:
        job.abort()
    assert [(r["task_cpus"], r["cores"], r["coding_threads"], r["scan_threads"])
            for r in on_executors] == [(cpus, cpus, cpus, cpus)] * 2
    assert (on_driver["task_cpus"], on_driver["cores"], on_driver["coding_threads"],
            on_driver["scan_threads"]) == (None, 3, 3, 3)
    assert [list(r["segment"].fragment_ids) for r in on_executors + [on_driver]] == [[0], [1], [0]]
