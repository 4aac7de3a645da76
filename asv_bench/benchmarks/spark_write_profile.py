"""Where a Spark write through the ``lance`` sink spends its time, next to Spark's Parquet writer
on the same DataFrame (the write of :mod:`.spark_source`: 2M rows, ``local[2]``).

Prints, per write, its wall time and the CPU seconds of the JVM and of the Python workers
(``/proc``, as ``spark_source --cpu``) for four sinks of the same DataFrame: Spark's ``noop``
(the DataFrame is computed, nothing is written: the JVM's share of every write), Parquet, a
Python sink that only receives the Arrow batches (``arrow_discard``, defined here: the fastest
any Python sink can be) and lance. Then it samples the Python workers with py-spy (``--py-spy PATH``;
default: ``py-spy`` on ``PATH``; py-spy is not a dependency, install it anywhere) during
``--repeat`` lance writes and sorts the samples of the threads running a task by what their
stack is doing: receiving Arrow batches from the JVM (including waiting for them), casting them
to the dataset schema, encoding pages, writing file bytes, waiting for fsync, the rest; the
background fsync threads' samples are counted on their own line.

``python -m benchmarks.spark_write_profile [--version 2.0] [--repeat 3] [--py-spy PATH]``
(from ``asv_bench/``).
"""
import argparse
import collections
import os
import shutil
import signal
import subprocess
import tempfile
import time

from .spark_source import Runs, _session, cpu_per_query, fixtures

# (bucket, markers): a task-thread sample goes to the first bucket one of whose markers is in
# the part of its stack below LanceWriter.write (py-spy's raw format: "function (file:line)"
# frames joined by ";", file names shortened)
TASK_MARKER = "LanceWriter.write ("
BUCKETS = (
    ("waiting for fsync", ("wait_durable", "fsync")),
    ("receiving Arrow batches from the JVM (waiting for them included)",
     ("ArrowStreamSerializer.load_stream", "pyarrow/ipc.py")),
    ("writing file bytes", ("lancefmt/io/",)),
    ("casting to the dataset schema", ("BatchCaster",)),
    ("encoding pages", ("lancefmt/file/", "lancefmt/encoding/")),
)
OTHER = "the rest (fragments, staging, metadata)"
SYNC_MARKER = "_sync_and_close"                # a background fsync thread at work
# the Python processes Spark runs for the driver's side of a Python sink
DRIVER_SIDE = {"write_into_data_source": "driver side: planning the write (writer())",
               "commit_data_source_write": "driver side: committing"}


def discard_source():
    """A Python sink whose tasks only receive their Arrow batches. Made in a function (pickled
    by value: the workers need not import this module; pyspark is not a bench dependency)."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class Writer(DataSourceArrowWriter):
        def write(self, iterator):
            collections.deque(iterator, maxlen=0)  # receive every batch, keep none
            return WriterCommitMessage()

    class Discard(DataSource):
        @classmethod
        def name(cls):
            return "arrow_discard"

        def writer(self, schema, overwrite):
            return Writer()

    return Discard


def bucket_of(stack: str) -> str:
    stack = stack[stack.index(TASK_MARKER):]
    for name, markers in BUCKETS:
        if any(m in stack for m in markers):
            return name
    return OTHER


def shares(raw_path: str):
    """(task-thread samples per bucket, background fsync samples, the driver side's samples
    by step) of py-spy's raw (collapsed stacks) output."""
    task, sync, driver = collections.Counter(), 0, collections.Counter()
    with open(raw_path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not count.isdigit():
                continue
            n = int(count)
            if TASK_MARKER in stack:
                task[bucket_of(stack)] += n
            elif SYNC_MARKER in stack:
                sync += n
            else:
                first = stack.split(";", 1)[0]
                driver.update({step: n for key, step in DRIVER_SIDE.items() if key in first})
    return task, sync, driver


def daemons(jvm_pid: int) -> list[int]:
    """The Python worker daemons the JVM started (workers are forked from them)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ppid == jvm_pid and "daemon" in cmd:
            found.append(int(name))
    return found


def profile(spark, run, py_spy: str, repeat: int, rate: int, idle: bool):
    """py-spy's samples of every Python worker while ``run()`` runs ``repeat`` times (with
    ``idle``, also of threads that wait: wall time; without, CPU time)."""
    out = os.path.join(tempfile.mkdtemp(prefix="lancefmt-pyspy-"), "profile.txt")
    pids = daemons(spark.sparkContext._gateway.proc.pid)
    if not pids:
        raise SystemExit("no Python worker daemon found (run a write first)")
    procs = [subprocess.Popen([py_spy, "record", "--pid", str(pid), "--subprocesses"]
                              + (["--idle"] if idle else []) + ["--nonblocking", "--rate", str(rate), "--format", "raw",
                               "--output", f"{out}.{pid}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for pid in pids]
    time.sleep(2)  # py-spy attached
    for _ in range(repeat):
        run()
    for p in procs:
        p.send_signal(signal.SIGINT)
    for p in procs:
        _, err = p.communicate(timeout=120)
        if p.returncode not in (0, -signal.SIGINT):
            print(f"py-spy exited {p.returncode}: {err.decode()[-500:]}")
    with open(out, "w") as merged:
        for pid in pids:
            if os.path.exists(f"{out}.{pid}"):
                with open(f"{out}.{pid}") as part:
                    shutil.copyfileobj(part, merged)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description="where a Spark lance write spends its time")
    parser.add_argument("--version", default="2.0", help="data_storage_version of the writes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--py-spy", default=shutil.which("py-spy"),
                        help="the py-spy executable (default: py-spy on PATH)")
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    args = parser.parse_args(argv)
    spark = _session()
    runs = Runs(spark, fixtures())
    spark.dataSource.register(discard_source())
    lance = runs.write_lance(args.version)
    sinks = (("noop", lambda: runs.df.write.format("noop").mode("overwrite").save()),
             ("parquet", runs.write_parquet()),
             ("arrow_discard", lambda: runs.df.write.format("arrow_discard").mode("append").save()),
             ("lance", lance))
    try:
        for _, run in sinks:  # warm-up: JVM, Python workers
            run()
        for name, run in sinks:
            t0 = time.perf_counter()
            jvm, python = cpu_per_query(spark, run, args.repeat)
            wall = (time.perf_counter() - t0) / args.repeat
            print(f"{name:13s} write: {wall:5.1f} s per write; cpu jvm {jvm:5.2f} s + python "
                  f"workers {python:5.2f} s = {jvm + python:5.2f} s (median of {args.repeat})",
                  flush=True)
        if not args.py_spy:
            print("no py-spy: give --py-spy PATH for the Python workers' profile")
            return
        for idle in (True, False):
            raw = profile(spark, lance, args.py_spy, args.repeat, args.rate, idle)
            task, sync, driver = shares(raw)
            n = sum(task.values()) or 1
            what = "wall time, waits included" if idle else "CPU time, waits left out"
            print(f"py-spy, {args.repeat} lance writes, threads running a write task ({what}): "
                  f"{sum(task.values())} samples")
            for name, count in task.most_common():
                print(f"  {100 * count / n:5.1f} %  {name}")
            print(f"  background fsync threads: {sync} samples ({100 * sync / n:.1f} % of the "
                  f"task threads' samples)")
            if not idle:
                for step, count in sorted(driver.items()):
                    print(f"  {step}: {count} samples ({100 * count / n:.1f} % of the task "
                          f"threads' samples)")
            print(f"  raw stacks: {raw}", flush=True)
    finally:
        runs.close()
        spark.stop()


if __name__ == "__main__":
    main()
