"""The distributed jobs on ``local-cluster[2,1,1024]`` (two executor JVMs, each with its own
Python workers), in a process of their own (one JVM per process), for test_local_cluster.

``python local_cluster_child.py PLAN`` where PLAN is JSON: the datasets to work on
(``compact``, ``backfill``, ``merge``, ``append``, ``vector``: an IVF_PQ build), the merge's source (a Parquet file), the
concurrent append's rows (a Parquet file) and the fault directory. Prints one JSON line: for
each job its result, the tasks each executor completed and failed during it, and for the first
compaction whether its armed fault fired (a task's Python worker killed after writing its
files, then retried; the other jobs' killed tasks are tested on ``local[2,2]``, and each kill
costs seconds here).
"""
import json
import os
import sys
import time

EXECUTORS = 2


def executor_tasks(spark) -> dict:
    """{executor id: (completed, failed)} from the application's status store, once the
    listener bus has delivered every event so far."""
    sc = spark.sparkContext._jsc.sc()
    sc.listenerBus().waitUntilEmpty()
    summaries = sc.statusStore().executorList(True)
    out = {}
    for i in range(summaries.size()):
        s = summaries.apply(i)
        if s.id() != "driver":
            out[s.id()] = (s.completedTasks(), s.failedTasks())
    return out


def wait_for_executors(spark, n: int, timeout: float = 180.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        ids = sorted(executor_tasks(spark))
        if len(ids) >= n:
            return ids
        if time.monotonic() > deadline:
            raise RuntimeError(f"only executors {ids} registered")
        time.sleep(0.2)


def measured(spark, faults: str, kind, run) -> dict:
    """``run()``'s result, the tasks each executor completed and failed meanwhile, and
    whether the fault armed for ``kind`` (if any) fired."""
    marker = os.path.join(faults, kind) if kind else None
    if marker:
        open(marker, "w").close()
    before = executor_tasks(spark)
    t0 = time.monotonic()
    result = run()
    seconds = time.monotonic() - t0
    after = executor_tasks(spark)
    zero = (0, 0)
    return {"result": result, "seconds": round(seconds, 1),
            "completed": {e: after[e][0] - before.get(e, zero)[0] for e in after},
            "failed": {e: after[e][1] - before.get(e, zero)[1] for e in after},
            "fault_fired": None if marker is None else not os.path.exists(marker)}


def metrics(m) -> dict:
    return {k: getattr(m, k) for k in ("fragments_removed", "fragments_added", "files_removed",
                                       "files_added")}


def main(plan: dict) -> None:
    from lancefmt.spark.jobs import FAULTS_ENV

    os.environ[FAULTS_ENV] = plan["faults"]  # before the JVMs start: the executors inherit it
    import lance
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from lancefmt.spark import backfill, compaction, local_session
    from lancefmt.spark.merge import MergeBuilder

    t0 = time.monotonic()
    spark = local_session("local-cluster[2,1,1024]", "lancefmt-local-cluster", conf={
        "spark.driver.memory": "1g", "spark.executor.memory": "1g",
        "spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.python.worker.reuse": "true"})
    report = {"executors": wait_for_executors(spark, EXECUTORS),
              "startup_seconds": round(time.monotonic() - t0, 1)}
    faults = plan["faults"]

    report["compact"] = measured(spark, faults, "compact", lambda: metrics(
        compaction.compact(spark, plan["compact"], target_rows_per_fragment=plan["target"])))

    upper = F.udf(lambda s: s.upper(), "string")
    report["backfill"] = measured(spark, faults, None, lambda: backfill.add_columns(
        spark, plan["backfill"], {"y": "x * 2 + id", "t": upper(F.col("s"))}))

    def merge():
        source = spark.read.parquet(plan["merge_source"])
        stats = MergeBuilder(spark, plan["merge"], source, "id").when_matched_update_all() \
            .when_not_matched_insert_all().execute()
        return {k: stats[k] for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}

    report["merge"] = measured(spark, faults, None, merge)

    # another writer (pylance) appends after the executors rewrote, before the driver commits
    real, runs = compaction.run_tasks, []

    def rewrite_then_append(*args, **kw):
        out = real(*args, **kw)
        if not runs:
            lance.write_dataset(pq.read_table(plan["append_rows"]), plan["append"], mode="append")
        runs.append(1)
        return out

    compaction.run_tasks = rewrite_then_append
    report["append"] = measured(spark, faults, None, lambda: dict(
        metrics(compaction.compact(spark, plan["append"], target_rows_per_fragment=plan["target"])),
        runs=len(runs)))
    compaction.run_tasks = real

    from lancefmt.spark.indexing import create_vector_index

    def vector_index():
        ds = create_vector_index(spark, plan["vector"], "vec", "IVF_PQ", num_partitions=4,
                                 num_sub_vectors=4, rows_per_task=plan["vector_rows_per_task"])
        return {"version": ds.version, "segments": len(ds.describe_indices()[0].segments)}

    report["vector"] = measured(spark, faults, None, vector_index)
    report["jobs_seconds"] = round(time.monotonic() - t0 - report["startup_seconds"], 1)
    spark.stop()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
