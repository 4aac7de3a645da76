"""Zone indices (ZONEMAP, BLOOMFILTER) vs pylance: builds and indexed look-ups, side by side.

Fixture (``setup_cache``): ``ROWS`` rows (default 4M; ``LANCEFMT_ZONE_BENCH_ROWS`` to change) in
fragments of 1M rows written by pylance: ``x`` (float64, sorted: what zone maps suit), ``r``
(int64, random) and ``s`` (string, random). One copy is indexed by pylance (ZONEMAP on ``x``,
BLOOMFILTER on ``r`` and ``s``) and both libraries answer the look-ups from it; builds run on a
copy without indices.

Ratios are pylance time / lancefmt time, best of interleaved runs in one process (above 1:
lancefmt faster). Look-ups draw the same existing values for both libraries, a different one
each call.

Direct run: ``cd asv_bench && PYTHONPATH=.. python -m benchmarks.zone_index [--rows N] [--rounds K]``.
"""
import os
import shutil
import sys

import numpy as np
import pyarrow as pa

from .common import scratch_dir
from .scalar_index import _best_pair, _libs

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.isdir(os.path.join(_CHECKOUT, "lancefmt")) and sys.path[:1] != [_CHECKOUT]:
    sys.path.insert(0, _CHECKOUT)

ROWS = int(os.environ.get("LANCEFMT_ZONE_BENCH_ROWS", 4_000_000))
INDICES = ("x:ZONEMAP", "r:BLOOMFILTER", "s:BLOOMFILTER")


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table({"x": np.sort(rng.normal(size=rows)) * 1000,
                     "r": rng.integers(0, 10**9, rows),
                     "s": pa.array(np.char.add("user-", rng.integers(0, 10**8, rows).astype(str)))})


def build_fixture(root: str, rows: int = ROWS) -> dict:
    import lance

    paths = {"indexed": os.path.join(root, f"zones-indexed-{rows}.lance"),
             "bare": os.path.join(root, f"zones-bare-{rows}.lance")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    table = _table(rows)
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
        lance.write_dataset(table, p, max_rows_per_file=1_000_000)
    ds = lance.dataset(paths["indexed"])
    for index in INDICES:
        column, kind = index.split(":")
        ds.create_scalar_index(column, kind)
    return paths


def lookup_cases(rows: int):
    t = _table(rows)
    rng = np.random.default_rng(1)
    at = rng.integers(0, rows, 256)
    x, r, s = ([t.column(c)[int(k)].as_py() for k in at] for c in ("x", "r", "s"))
    width = 0.25  # a few hundred rows of the sorted column (4M rows), in one or two zones
    return {
        "zonemap_range": lambda i: f"x >= {x[i % 256]!r} AND x < {x[i % 256] + width!r}",
        "zonemap_equality": lambda i: f"x = {x[i % 256]!r}",
        "bloom_int_equality": lambda i: f"r = {int(r[i % 256])}",
        "bloom_str_equality": lambda i: f"s = '{s[i % 256]}'",
        "bloom_str_in_10": lambda i: "s IN (" + ", ".join(f"'{v}'" for v in s[(i * 10) % 246:(i * 10) % 246 + 10]) + ")",
    }


def lookup_ratio(path: str, case: str, rows: int, rounds: int = 30):
    lance, lancefmt = _libs()
    theirs, ours = lance.dataset(path), lancefmt.dataset(path)
    text = lookup_cases(rows)[case]
    run_ours = lambda i: ours.to_table(filter=text(i))  # noqa: E731
    run_peer = lambda i: theirs.to_table(filter=text(i))  # noqa: E731
    run_ours(rounds)
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


class ZoneIndex:
    timeout = 1800
    params = [["zonemap_range", "zonemap_equality", "bloom_int_equality", "bloom_str_equality",
               "bloom_str_in_10"]]
    param_names = ["lookup"]

    def setup_cache(self):
        return build_fixture(scratch_dir("zone-index"))

    def track_lookup_ratio(self, paths, lookup):
        return lookup_ratio(paths["indexed"], lookup, ROWS)[0]


class ZoneIndexBuild:
    timeout = 3600
    params = [list(INDICES)]
    param_names = ["index"]

    def setup_cache(self):
        return build_fixture(scratch_dir("zone-index"))

    def track_build_ratio(self, paths, index):
        column, kind = index.split(":")
        return build_ratio(paths["bare"], column, kind)[0]


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--rounds", type=int, default=3, help="repetitions of every measurement")
    args = ap.parse_args(argv)
    paths = build_fixture(scratch_dir("zone-index"), args.rows)
    rows = []
    for case in lookup_cases(args.rows):
        rows.append((case, [lookup_ratio(paths["indexed"], case, args.rows) for _ in range(args.rounds)]))
    for index in INDICES:
        column, kind = index.split(":")
        rows.append((f"build {index}", [build_ratio(paths["bare"], column, kind) for _ in range(args.rounds)]))
    print(f"{args.rows:,} rows; ratio = pylance time / lancefmt time (range over {args.rounds} rounds)")
    print(f"{'case':24s} {'ratio':>13s} {'lancefmt ms':>15s} {'pylance ms':>15s}")
    for name, got in rows:
        r = [g[0] for g in got]
        o = [g[1] * 1000 for g in got]
        p = [g[2] * 1000 for g in got]
        print(f"{name:24s} {min(r):5.2f}-{max(r):5.2f}  {min(o):7.2f}-{max(o):7.2f}  {min(p):7.2f}-{max(p):7.2f}")


if __name__ == "__main__":
    main()
