"""Scalar indices vs pylance (issue 39): builds and indexed look-ups, side by side.

Fixture (``setup_cache``): ``ROWS`` rows (default 10M; ``LANCEFMT_INDEX_BENCH_ROWS`` to change)
written by pylance in its default files: ``id`` (int64, a permutation), ``cat`` (string, 100
values), ``x`` (float64). One copy is indexed by pylance (BTREE on ``id``, BITMAP on ``cat``),
and both libraries answer the look-ups from it; builds run on a copy without indices.

Ratios are pylance time / lancefmt time, best of interleaved runs in one process (above 1:
lancefmt faster). Targets: builds >= 1.0, equality look-up >= 1.5, a 0.1% range, an IN of 100
values and ``count_rows`` with an indexed filter >= 1.0. Look-ups draw the same random keys for
both libraries (a different key each call, so no answer is cached).

Direct run, every number with its range over rounds:
``cd asv_bench && PYTHONPATH=.. python -m benchmarks.scalar_index [--rows N] [--rounds K]``.
"""
import os
import shutil
import sys
import time

import numpy as np
import pyarrow as pa

from .common import scratch_dir

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.isdir(os.path.join(_CHECKOUT, "lancefmt")) and sys.path[:1] != [_CHECKOUT]:
    sys.path.insert(0, _CHECKOUT)

ROWS = int(os.environ.get("LANCEFMT_INDEX_BENCH_ROWS", 10_000_000))
CATS = 100


def build_fixture(root: str, rows: int = ROWS) -> dict:
    """The two datasets (indexed by pylance, and bare) under ``root``."""
    import lance

    paths = {"indexed": os.path.join(root, f"indexed-{rows}.lance"),
             "bare": os.path.join(root, f"bare-{rows}.lance")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    rng = np.random.default_rng(0)
    cat = pa.array(np.char.add("c", rng.integers(0, CATS, rows).astype(str)))
    table = pa.table({"id": rng.permutation(rows).astype(np.int64), "cat": cat,
                      "x": rng.random(rows)})
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
        lance.write_dataset(table, p)
    ds = lance.dataset(paths["indexed"])
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    return paths


def _libs():
    import lance

    import lancefmt

    return lance, lancefmt


CLOCK = time.perf_counter  # --cpu: time.process_time (the process's CPU, all its threads)


def _best_pair(ours, peer, rounds: int):
    """(best lancefmt, best pylance) over ``rounds`` interleaved calls of each."""
    bo = bp = float("inf")
    for i in range(rounds):
        t0 = CLOCK()
        ours(i)
        bo = min(bo, CLOCK() - t0)
        t0 = CLOCK()
        peer(i)
        bp = min(bp, CLOCK() - t0)
    return bo, bp


def lookup_cases(rows: int):
    rng = np.random.default_rng(1)
    keys = rng.integers(0, rows, 4096)
    width = max(1, rows // 1000)
    starts = rng.integers(0, rows - width, 4096)
    ins = [", ".join(str(v) for v in rng.integers(0, rows, 100)) for _ in range(64)]
    return {
        "equality": lambda i: f"id = {int(keys[i % keys.size])}",
        "range_0.1%": lambda i: f"id BETWEEN {int(starts[i % starts.size])} AND "
                                f"{int(starts[i % starts.size]) + width - 1}",
        "in_100": lambda i: f"id IN ({ins[i % len(ins)]})",
        "bitmap_equality": lambda i: f"cat = 'c{i % CATS}'",
    }


def lookup_ratio(path: str, case: str, rows: int, rounds: int = 30, count: bool = False):
    lance, lancefmt = _libs()
    theirs, ours = lance.dataset(path), lancefmt.dataset(path)
    text = lookup_cases(rows)[case]
    if count:
        run_ours = lambda i: ours.count_rows(text(i))  # noqa: E731
        run_peer = lambda i: theirs.count_rows(text(i))  # noqa: E731
    else:
        run_ours = lambda i: ours.to_table(filter=text(i))  # noqa: E731
        run_peer = lambda i: theirs.to_table(filter=text(i))  # noqa: E731
    run_ours(rounds)  # warm both (open files, load the index lookup pages)
    run_peer(rounds)
    o, p = _best_pair(run_ours, run_peer, rounds)
    return p / o, o, p


def build_ratio(path: str, column: str, kind: str, rounds: int = 2):
    lance, lancefmt = _libs()

    def ours(_):
        lancefmt.dataset(path).create_scalar_index(column, kind, name=f"{column}_bench")

    def peer(_):
        lance.dataset(path).create_scalar_index(column, kind, name=f"{column}_bench")

    o, p = _best_pair(ours, peer, rounds)
    return p / o, o, p


class ScalarIndex:
    timeout = 1800
    params = [["equality", "range_0.1%", "in_100", "bitmap_equality"]]
    param_names = ["lookup"]

    def setup_cache(self):
        return build_fixture(scratch_dir("scalar-index"))

    def track_lookup_ratio(self, paths, lookup):
        return lookup_ratio(paths["indexed"], lookup, ROWS)[0]

    def track_count_ratio(self, paths, lookup):
        return lookup_ratio(paths["indexed"], lookup, ROWS, count=True)[0]


class ScalarIndexBuild:
    timeout = 3600
    params = [["id:BTREE", "cat:BITMAP"]]
    param_names = ["index"]

    def setup_cache(self):
        return build_fixture(scratch_dir("scalar-index"))

    def track_build_ratio(self, paths, index):
        column, kind = index.split(":")
        return build_ratio(paths["bare"], column, kind)[0]


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--rounds", type=int, default=3, help="repetitions of every measurement")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--cpu", action="store_true",
                    help="compare CPU time of the process instead of wall time (a loaded machine)")
    args = ap.parse_args(argv)
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    paths = build_fixture(scratch_dir("scalar-index"), args.rows)
    rows = []
    cases = list(lookup_cases(args.rows))
    for case in cases:
        for count in (False, True):
            got = [lookup_ratio(paths["indexed"], case, args.rows, count=count) for _ in range(args.rounds)]
            rows.append((("count " if count else "to_table ") + case, got))
    if not args.no_build:
        for index in ("id:BTREE", "cat:BITMAP"):
            column, kind = index.split(":")
            got = [build_ratio(paths["bare"], column, kind) for _ in range(args.rounds)]
            rows.append((f"build {index}", got))
    what = "CPU" if args.cpu else "wall"
    print(f"{args.rows:,} rows; ratio = pylance {what} time / lancefmt {what} time "
          f"(range over {args.rounds} rounds)")
    print(f"{'case':28s} {'ratio':>13s} {'lancefmt ms':>14s} {'pylance ms':>14s}")
    for name, got in rows:
        r = [g[0] for g in got]
        o = [g[1] * 1000 for g in got]
        p = [g[2] * 1000 for g in got]
        print(f"{name:28s} {min(r):5.2f}-{max(r):5.2f}  {min(o):6.2f}-{max(o):6.2f}  {min(p):6.2f}-{max(p):6.2f}")


if __name__ == "__main__":
    main()
