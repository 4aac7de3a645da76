"""How a Spark IVF_PQ build (``lancefmt.spark.indexing.create_vector_index``) scales with
executors: the same build on ``local-cluster[N,1,2048]`` for each N asked (N executor JVMs of
one core each), every run in a process of its own (one JVM per process).

The fixture is ``vector_index``'s clustered vectors (``ROWS`` x 128 float32, written by pylance
at 2.2 in ``FRAGMENTS`` fragments); each run builds IVF_PQ (256 partitions, 16 sub-vectors)
on a copy made of hard links (the data files are never written). The driver trains the model
on a sample; ``rows_per_task`` gives one encoding task per fragment, spread over the
executors (each task codes on as many threads as it has cores: one here); the driver merges
the tasks' segments and commits once. A run reports the build's wall time split into the
driver's training, the executors' encoding tasks (from submitting them to their last result)
and the merge and commit, the tasks each executor completed, and the session's start-up (not
counted). pylance builds in one process, so there is no pylance column here;
``--reference`` adds lancefmt's own one-process ``create_index`` of the same copy.

On a machine with few cores, N above the core count cannot help: say how many cores ran it.

Direct run: ``PYTHONPATH=.. python -m benchmarks.spark_vector_index --rows 1000000
--executors 1 2`` from ``asv_bench``.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.isdir(os.path.join(_CHECKOUT, "lancefmt")) and sys.path[:1] != [_CHECKOUT]:
    sys.path.insert(0, _CHECKOUT)

try:
    from .common import scratch_dir
    from .vector_index import PARTITIONS, SUB_VECTORS, table
except ImportError:  # run as a script or as the child
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import scratch_dir
    from vector_index import PARTITIONS, SUB_VECTORS, table

ROWS, FRAGMENTS = 1_000_000, 8


def fixture(rows: int, fragments: int) -> str:
    import lance

    root = scratch_dir("spark_vector_index")
    path = os.path.join(root, f"base-{rows}-{fragments}")
    marker = path + ".ready"
    if not os.path.exists(marker):
        shutil.rmtree(path, ignore_errors=True)
        lance.write_dataset(table(rows), path, max_rows_per_file=-(-rows // fragments),
                            data_storage_version="2.2")
        open(marker, "w").close()
    return path


def linked_copy(src: str, name: str) -> str:
    dst = os.path.join(os.path.dirname(src), name)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=os.link)
    return dst


def child(executors: int, path: str, rows_per_task: int) -> None:
    """One build on ``local-cluster[executors,1,2048]``; prints one JSON line."""
    sys.path.insert(0, os.path.join(_CHECKOUT, "tests", "spark"))
    from local_cluster_child import executor_tasks, wait_for_executors

    from lancefmt.dataset.indices import vector_create
    from lancefmt.spark import indexing, local_session
    from lancefmt.spark.indexing import create_vector_index

    spent = {"train": 0.0, "encode": 0.0}

    def timed(key, real):
        def run(*a, **kw):
            t = time.monotonic()
            try:
                return real(*a, **kw)
            finally:
                spent[key] += time.monotonic() - t
        return run

    vector_create.train_shared_model = timed("train", vector_create.train_shared_model)
    indexing.run_tasks = timed("encode", indexing.run_tasks)  # the executors' tasks
    t0 = time.monotonic()
    spark = local_session(f"local-cluster[{executors},1,2048]", "lancefmt-vector-scaling", conf={
        "spark.driver.memory": "2g", "spark.executor.memory": "2g",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0", "spark.python.worker.reuse": "true"})
    try:
        wait_for_executors(spark, executors)
        startup = time.monotonic() - t0
        before = executor_tasks(spark)
        t1 = time.monotonic()
        ds = create_vector_index(spark, path, "vec", "IVF_PQ", num_partitions=PARTITIONS,
                                 num_sub_vectors=SUB_VECTORS, rows_per_task=rows_per_task)
        seconds = time.monotonic() - t1
        after = executor_tasks(spark)
        segments = len(ds.describe_indices()[0].segments)
    finally:
        spark.stop()
    print(json.dumps({"executors": executors, "seconds": round(seconds, 1),
                      "train_seconds": round(spent["train"], 1),
                      "encode_seconds": round(spent["encode"], 1),
                      "startup_seconds": round(startup, 1), "segments": segments,
                      "tasks": {e: after[e][0] - before.get(e, (0, 0))[0] for e in after}}),
          flush=True)


def spark_home(root: str) -> str:
    """A SPARK_HOME of links to the installed Spark's ``bin`` and ``jars``: the cluster's
    executors put their work directories under it."""
    import pyspark

    installed = os.environ.get("SPARK_HOME") or os.path.dirname(os.path.abspath(pyspark.__file__))
    home = os.path.join(root, "spark_home")
    if not os.path.isdir(home):
        os.makedirs(home)
        for name in ("bin", "jars"):
            os.symlink(os.path.join(installed, name), os.path.join(home, name))
    return home


def run(executors: int, path: str, rows_per_task: int) -> dict:
    env = dict(os.environ, PYTHONPATH=_CHECKOUT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               SPARK_HOME=spark_home(os.path.dirname(path)))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(executors),
                          path, str(rows_per_task)], env=env, capture_output=True, text=True)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        raise RuntimeError(f"the build on {executors} executors failed:\n{out.stderr[-3000:]}")
    return json.loads(lines[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--fragments", type=int, default=FRAGMENTS, help="fragments = encoding tasks")
    ap.add_argument("--executors", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=1, help="runs per executor count (alternating)")
    ap.add_argument("--reference", action="store_true",
                    help="also lancefmt's one-process create_index of the same data")
    args = ap.parse_args(argv)
    base = fixture(args.rows, args.fragments)
    per_task = -(-args.rows // args.fragments)
    print(f"{args.rows:,} x 128 float32, {args.fragments} fragments, IVF_PQ {PARTITIONS}/{SUB_VECTORS}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    for r in range(args.repeat):
        for n in args.executors:
            path = linked_copy(base, f"run-{n}")
            res = run(n, path, per_task)
            shutil.rmtree(path, ignore_errors=True)
            rest = res['seconds'] - res['train_seconds'] - res['encode_seconds']
            print(f"local-cluster[{n},1,2048]: build {res['seconds']:.1f} s (driver training "
                  f"{res['train_seconds']:.1f} s, executors encoding {res['encode_seconds']:.1f} s, "
                  f"merge + commit {rest:.1f} s), tasks per executor "
                  f"{res['tasks']}, {res['segments']} segment; load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
        if args.reference:
            import lancefmt
            path = linked_copy(base, "run-local")
            t0 = time.monotonic()
            lancefmt.dataset(path).create_index("vec", "IVF_PQ", num_partitions=PARTITIONS,
                                                num_sub_vectors=SUB_VECTORS)
            print(f"lancefmt create_index in one process: {time.monotonic() - t0:.1f} s", flush=True)
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        main()
