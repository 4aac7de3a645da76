"""The writer a kill campaign SIGKILLs: one index operation on one dataset, in its own process.

:func:`serve` runs in a process forked from a forkserver that has lancefmt loaded (a child costs
milliseconds, not an interpreter start): it opens the dataset, says ``ready``, waits for
``go``, runs the operation and says ``done`` with the store events it made (:mod:`.hooks`).
With ``spec["kill_at"]`` it kills itself at that event; otherwise the campaign kills it after a
random delay (or it finishes first). A Spark build runs as ``python -m
tools.index_kills.child SPEC`` (its own process group: the JVM and the Python workers die with
it), speaking the same protocol on stdin/stdout."""
from __future__ import annotations

import json
import sys


def run(spec: dict, ds, spark=None) -> None:
    op, a = spec["op"], spec.get("args", {})
    if op == "create":
        ds.create_scalar_index(a["column"], a["type"], name=a["name"], replace=True)
    elif op == "optimize":
        ds.optimize.optimize_indices(num_indices_to_merge=a.get("merge", 1))
    elif op == "compact":
        ds.optimize.compact_files(target_rows_per_fragment=a["target"])
    elif op == "spark":
        from lancefmt.spark.indexing import create_scalar_index

        create_scalar_index(spark, spec["uri"], a["column"], a["type"], a["name"],
                            rows_per_task=a["rows_per_task"], merge=a.get("merge", True),
                            storage_options=spec.get("storage_options"))
    else:
        raise ValueError(op)


def _open(spec: dict):
    import lancefmt

    return lancefmt.dataset(spec["uri"], storage_options=spec.get("storage_options"))


def serve(spec: dict, conn) -> None:
    """The forked writer (see the module docstring); ``conn`` is its end of a Pipe."""
    from .hooks import install

    if spec.get("part_size"):  # small parts: the writer's files go up as multipart uploads
        import lancefmt.io.s3 as s3

        s3.MIN_PART_SIZE = spec["part_size"]
    ds = _open(spec)
    events = install(spec.get("kill_at"), spec.get("when", "before"), spec.get("trail"))
    conn.send("ready")
    conn.recv()
    run(spec, ds)
    conn.send(("done", list(events)))


def main(spec: dict) -> None:
    from lancefmt.spark import local_session

    from .hooks import install

    spark = local_session("local[2,2]", "index-kills", conf={
        "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
        "spark.driver.memory": "1g", "spark.python.worker.reuse": "true",
        "spark.ui.enabled": "false"})
    ds = _open(spec)
    events = install(spec.get("kill_at"), spec.get("when", "before"), spec.get("trail"))
    print("ready", flush=True)
    sys.stdin.readline()
    run(spec, ds, spark)
    print("done " + json.dumps(events), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
