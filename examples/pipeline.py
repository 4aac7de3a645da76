"""The main job (``make demo``): a Lance dataset spread over three local "buckets", driven from an
embedded Spark (``local[*]``) through lancefmt's ``lance`` data source -- lancefmt and pyspark only.

Steps (each printed with its timing):

1. generate ``--rows`` events in Spark and write them as a new multi-base dataset: the manifest
   lives in ``catalog/events.lance``, the data files go round-robin to the buckets ``us-east``,
   ``us-west`` and ``eu-central`` (``initial_bases`` + ``target_bases``), one commit;
2. append a quarter more from Spark, to two of the buckets only (one more commit);
3. query it back through Spark (group-by, a filtered count with the filter pushed into the scan);
4. delete the refunds with lancefmt (deletion files, no data rewritten) and tag the version before;
5. read the old version back through Spark, by number and by tag (time travel);
6. fail the ``us-east`` bucket over to a replica (copy its files, repoint the base, take the
   original offline) and read everything again;
7. stream: a Structured Streaming query follows the dataset (offsets are versions) and writes
   the refunds of every newly appended version into ``catalog/refunds.lance``, one commit per
   micro-batch; two appends arrive while it runs, then a rerun over the same checkpoint finds
   nothing new and commits nothing.

Long Spark steps show a task progress bar on a terminal. ``--root DIR`` keeps the files in DIR
(``--keep`` too); running again with the same ``--root`` starts over (it removes what the last
run made there: ``catalog/``, the buckets, the replica and the checkpoint -- nothing else).

Run: ``python examples/pipeline.py [--rows N] [--root DIR] [--keep]``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import lancefmt  # noqa: E402
from lancefmt.spark import local_session  # noqa: E402
from lancefmt.spark.progress import spark_progress  # noqa: E402

BUCKETS = ("us-east", "us-west", "eu-central")
# what a run creates under --root (and a rerun removes first)
OWNED = ("catalog", "us-east-replica", "us-east.offline", "checkpoints") + BUCKETS
CATEGORIES = ("book", "music", "game", "toy", "refund")


class Steps:
    """Prints each step as it finishes and a summary at the end."""

    def __init__(self):
        self.done = []

    def run(self, title, fn):
        print(f"\n== {title}", flush=True)
        t0 = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - t0
        self.done.append((title, seconds))
        print(f"   ({seconds:.2f} s)", flush=True)
        return result

    def summary(self):
        print("\n== summary")
        for title, seconds in self.done:
            print(f"   {seconds:7.2f} s  {title}")
        print(f"   {sum(s for _, s in self.done):7.2f} s  total")


def events(spark, start, n, partitions):
    """``n`` synthetic events, generated inside Spark (no driver-side data)."""
    cats = ", ".join(f"'{c}'" for c in CATEGORIES)
    return spark.range(start, start + n, numPartitions=partitions).selectExpr(
        "id AS event_id",
        "CAST(id * 7919 % 100000 AS INT) AS user_id",
        f"element_at(array({cats}), CAST(id % {len(CATEGORIES)} AS INT) + 1) AS category",
        "ROUND(CAST(id * 104729 % 100000 AS DOUBLE) / 100, 2) AS amount",
        "TIMESTAMP_SECONDS(1735689600 + id) AS ts")


def files_per_bucket(buckets):
    out = {}
    for name, path in buckets.items():
        count = size = 0
        for root, _, names in os.walk(path):
            for n in names:
                count += 1
                size += os.path.getsize(os.path.join(root, n))
        out[name] = (count, size)
    return out


def show_layout(ds, buckets):
    frags = ds.get_fragments()
    print(f"   version {ds.version}: {ds.count_rows():,} live rows in {len(frags)} fragments")
    for name, (count, size) in files_per_bucket(buckets).items():
        print(f"   bucket {name:<10} {count:3d} files  {size / 2**20:7.1f} MiB")


def spark_count(spark, uri, **options):
    reader = spark.read.format("lance")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(uri).count()


def failover(ds, base_name, replica):
    """Serve ``base_name`` from ``replica``: copy the base's files there and repoint the base.

    Returns the new version's Dataset.
    """
    source = next(b.path for b in ds.base_paths.values() if b.name == base_name)
    shutil.copytree(source, replica)
    return ds.update_bases({base_name: replica})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=3_000_000, help="events in the first write")
    parser.add_argument("--root", help="directory for the buckets (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the files afterwards")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    args = parser.parse_args(argv)

    root = os.path.abspath(args.root) if args.root else tempfile.mkdtemp(prefix="lancefmt-pipeline-")
    print(f"lancefmt {lancefmt.__version__} pipeline: {args.rows:,} events, files under {root}")
    previous = [n for n in OWNED if os.path.exists(os.path.join(root, n))]
    if previous:
        print(f"removing the previous run's {', '.join(previous)} under {root}")
        for name in previous:
            shutil.rmtree(os.path.join(root, name))
    buckets = {name: os.path.join(root, name) for name in BUCKETS}
    uri = os.path.join(root, "catalog", "events.lance")
    steps = Steps()

    spark = steps.run(f"start Spark ({args.master}) and register the lance source",
                      lambda: local_session(args.master, "lancefmt-pipeline", filter_pushdown=True))
    parts = max(2, spark.sparkContext.defaultParallelism)
    try:
        def create():
            bases = json.dumps([{"path": path, "name": name} for name, path in buckets.items()])
            with spark_progress(spark, "write"):
                (events(spark, 0, args.rows, parts).write.format("lance").mode("overwrite")
                 .option("initial_bases", bases).option("target_bases", ",".join(BUCKETS))
                 .option("max_rows_per_file", 250_000).save(uri))
            ds = lancefmt.dataset(uri)
            show_layout(ds, buckets)
            return ds

        created = steps.run(f"write {args.rows:,} events across {len(BUCKETS)} buckets (one commit)", create)
        assert created.version == 1 and created.count_rows() == args.rows

        extra = args.rows // 4

        def append():
            with spark_progress(spark, "append"):
                (events(spark, args.rows, extra, parts).write.format("lance").mode("append")
                 .option("target_bases", "us-west,eu-central").option("max_rows_per_file", 250_000)
                 .save(uri))
            ds = lancefmt.dataset(uri)
            show_layout(ds, buckets)
            return ds

        appended = steps.run(f"append {extra:,} events to us-west and eu-central (one commit)", append)
        total = args.rows + extra
        assert appended.version == 2 and appended.count_rows() == total

        def query():
            # the columns option: Spark's Python sources cannot prune columns by themselves
            df = spark.read.format("lance").option("columns", "category,amount").load(uri)
            with spark_progress(spark, "query"):
                rows = df.groupBy("category").agg({"amount": "sum", "*": "count"}).orderBy("category").collect()
            for r in rows:
                print(f"   {r['category']:<7} {r['count(1)']:>10,} events  {r['sum(amount)']:>16,.2f}")
            # a fresh load per query when filters are pushed (see lancefmt.spark.reader)
            big = spark.read.format("lance").load(uri).filter("amount >= 990 AND category = 'book'").count()
            print(f"   book events with amount >= 990: {big:,} (filter evaluated inside the Lance scan)")
            return sum(r["count(1)"] for r in rows)

        counted = steps.run("query through Spark: per-category totals, a pushed-down filter", query)
        assert counted == total

        def delete():
            ds = lancefmt.dataset(uri)
            ds.tags.create("before-refund-purge", ds.version)
            ds.delete("category = 'refund'")  # moves ds to the new version, as pylance's
            after = ds
            dels = sum(1 for f in after.get_fragments() if f.deletion_file())
            print(f"   version {after.version}: {after.count_rows():,} live rows; "
                  f"{dels} fragments got deletion files, no data file rewritten")
            print(f"   Spark sees {spark_count(spark, uri):,} rows now")
            return after

        deleted = steps.run("delete the refunds with lancefmt, tag the version before", delete)
        r, m = CATEGORIES.index("refund"), len(CATEGORIES)
        refunds = (total - r + m - 1) // m  # event ids i < total with i % m == r
        assert deleted.count_rows() == total - refunds

        def time_travel():
            v1 = spark_count(spark, uri, version=1)
            tagged = spark_count(spark, uri, version="before-refund-purge")
            latest = spark_count(spark, uri)
            print(f"   version 1: {v1:,} rows   tag before-refund-purge: {tagged:,} rows   "
                  f"latest (v{deleted.version}): {latest:,} rows")
            return v1, tagged, latest

        v1, tagged, latest = steps.run("read old versions back through Spark (time travel)", time_travel)
        assert (v1, tagged, latest) == (args.rows, total, total - refunds)

        def fail_over():
            ds = lancefmt.dataset(uri)
            replica = os.path.join(root, "us-east-replica")
            moved = failover(ds, "us-east", replica)
            os.rename(buckets["us-east"], buckets["us-east"] + ".offline")  # the outage
            after = spark_count(spark, uri)
            print(f"   version {moved.version}: us-east now served from {replica}; original offline; "
                  f"Spark reads {after:,} rows")
            assert after == total - refunds
            return moved

        steps.run("fail the us-east bucket over to a replica", fail_over)

        def stream():
            refunds = os.path.join(root, "catalog", "refunds.lance")
            checkpoint = os.path.join(root, "checkpoints", "refunds")

            def start(trigger):
                return (spark.readStream.format("lance").option("startingVersion", "latest").load(uri)
                        .where("category = 'refund'")
                        .writeStream.format("lance").option("checkpointLocation", checkpoint)
                        .trigger(**trigger).start(refunds))

            query = start({"processingTime": "1 second"})
            query.processAllAvailable()          # the offsets now start at the latest version
            arrivals = (10_000, 5_000)
            start_id = total
            for n in arrivals:                  # new events land while the query runs
                events(spark, start_id, n, parts).write.format("lance").mode("append").save(uri)
                start_id += n
                query.processAllAvailable()
            query.stop()
            ds = lancefmt.dataset(refunds)
            expected = sum(1 for i in range(total, start_id) if i % m == r)
            print(f"   {len(arrivals)} appends to events.lance -> {ds.version} versions of "
                  f"refunds.lance, {ds.count_rows():,} refund rows (expected {expected:,})")
            again = start({"availableNow": True})
            again.awaitTermination()
            print(f"   rerun over the same checkpoint: still version {lancefmt.dataset(refunds).version} "
                  f"(nothing new, nothing committed)")
            assert ds.count_rows() == expected and lancefmt.dataset(refunds).version == ds.version
            return ds

        steps.run("stream new refunds into another dataset (Structured Streaming, exactly once)", stream)
        steps.summary()
    finally:
        spark.stop()
        if not args.keep and not args.root:
            shutil.rmtree(root, ignore_errors=True)
        elif args.keep:
            print(f"files kept under {root}")


if __name__ == "__main__":
    main()
