"""Vector search, lancefmt vs pylance: exact search, IVF_PQ builds, recall and query latency.

setup_cache writes, with pylance (storage 2.2, 4 fragments), ``ROWS`` x 128 float32 vectors
with structure a real embedding set has: 256 clusters, each spread along a 16-dimensional
subspace, plus a little noise (so nearest neighbours are meaningful and IVF_PQ recall is far
from both 0 and 1). Two copies: pylance builds IVF_PQ (256 partitions, 16 sub-vectors) on
one, lancefmt on the other.

* exact search: one query, ``k=10``, no index (``use_index=False``);
* IVF_PQ build: ``create_index(..., replace=True)`` on each library's copy;
* recall@10 at ``nprobes=20`` against exact search, 100 queries: both libraries searching the
  same (pylance-built) index (the target: within 0.01), and each on its own build;
* latency: one query (``nprobes=20``, ``k=10``), and a batch of 1,000 queries in one call;
* IVF_HNSW_SQ (64 partitions, ``m=20``, ``ef_construction=150``): build time, recall@10 at
  ``nprobes=8`` and query latency, side by side (each library on its own build, and both on
  pylance's).

``track_*_speedup`` is pylance time / lancefmt time, measured back to back in one process
(above 1: lancefmt faster). Targets (the issue's, at 1M x 128): every speedup >= 1.0.

Run as a script for a quick comparison without asv (lancefmt and pylance alternately, ratios
with their range over repeats; ``--help`` for the options):
``PYTHONPATH=. python asv_bench/benchmarks/vector_index.py --rows 1000000 --reuse``.
The script also searches each library's index with both libraries (recall and latency).
"""
import os
import shutil
import sys
import time

import numpy as np
import pyarrow as pa

try:
    from .common import scratch_dir, speedup
except ImportError:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import scratch_dir, speedup

ROWS = 1_000_000
DIM = 128
CLUSTERS = 256
FRAGMENTS = 4
PARTITIONS = 256
SUB_VECTORS = 16
NPROBES = 20
K = 10
QUERIES = 100
BATCH = 1000


def vectors(rows, seed=42):
    """Clustered vectors (see module docstring), float32: the clusters are always the same
    (seed 42); ``seed`` draws the points."""
    model = np.random.default_rng(42)
    centers = model.standard_normal((CLUSTERS, DIM)).astype(np.float32) * 2.0
    bases = model.standard_normal((CLUSTERS, 16, DIM)).astype(np.float32) / 4.0
    rng = np.random.default_rng(seed)
    out = np.empty((rows, DIM), np.float32)
    step = 65536
    for s in range(0, rows, step):
        n = min(step, rows - s)
        label = rng.integers(0, CLUSTERS, n)
        z = rng.standard_normal((n, 16)).astype(np.float32)
        out[s:s + n] = centers[label] + np.einsum("nk,nkd->nd", z, bases[label]) + \
            0.05 * rng.standard_normal((n, DIM)).astype(np.float32)
    return out


def queries(n, seed=7):
    """Query vectors from the data's distribution (other points of the same clusters)."""
    return vectors(n, seed)


def table(rows):
    X = vectors(rows)
    return pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)),
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), DIM)})


def build_ours(path):
    import lancefmt

    lancefmt.dataset(path).create_index("vec", "IVF_PQ", num_partitions=PARTITIONS,
                                        num_sub_vectors=SUB_VECTORS, replace=True)


def build_peer(path):
    import lance

    lance.dataset(path).create_index("vec", "IVF_PQ", num_partitions=PARTITIONS,
                                     num_sub_vectors=SUB_VECTORS, replace=True)


HNSW_PARTITIONS = 64
HNSW_NPROBES = 8


def build_hnsw(lib, path, partitions=HNSW_PARTITIONS):
    lib.dataset(path).create_index("vec", "IVF_HNSW_SQ", num_partitions=partitions,
                                   replace=True, name="hnsw_idx")


RQ_PARTITIONS = 256


def build_rq(lib, path):
    lib.dataset(path).create_index("vec", "IVF_RQ", num_partitions=RQ_PARTITIONS, replace=True,
                                   name="rq_idx")


def write_fixtures(root, rows=ROWS):
    import lance

    t = table(rows)
    paths = {}
    for who in ("ours", "peer"):
        path = os.path.join(root, who)
        shutil.rmtree(path, ignore_errors=True)
        lance.write_dataset(t, path, max_rows_per_file=-(-rows // FRAGMENTS),
                            data_storage_version="2.2")
        paths[who] = path
    build_ours(paths["ours"])
    build_peer(paths["peer"])
    for who in ("hnsw_ours", "hnsw_peer"):
        path = os.path.join(root, who)
        shutil.rmtree(path, ignore_errors=True)
        lance.write_dataset(t, path, max_rows_per_file=-(-rows // FRAGMENTS),
                            data_storage_version="2.2")
        paths[who] = path
    import lancefmt
    build_hnsw(lancefmt, paths["hnsw_ours"])
    build_hnsw(lance, paths["hnsw_peer"])
    return paths


def searchers(path, nearest, columns=("id",)):
    import lance

    import lancefmt

    ours, peer = lancefmt.dataset(path), lance.dataset(path)
    return (lambda: ours.to_table(nearest=nearest, columns=list(columns)),
            lambda: peer.to_table(nearest=nearest, columns=list(columns)))


def exact_ids(path, qs):
    """pylance's exact top ``K`` ids of every query (the ground truth for recall)."""
    import lance

    ds = lance.dataset(path)
    return [ds.to_table(nearest={"column": "vec", "q": q, "k": K, "use_index": False},
                        columns=["id"])["id"].to_pylist() for q in qs]


def recall(path, lib, qs, nprobes=NPROBES, exact=None, **extra):
    """Mean recall@K of ``lib``'s indexed answers against exact search (by pylance)."""
    exact = exact_ids(path, qs) if exact is None else exact
    ds = lib.dataset(path)
    got = []
    for q, truth in zip(qs, exact):
        ann = ds.to_table(nearest={"column": "vec", "q": q, "k": K, "nprobes": nprobes, **extra},
                          columns=["id"])["id"].to_pylist()
        got.append(len(set(truth) & set(ann)) / K)
    return float(np.mean(got))


class VectorIndex:
    timeout = 3600
    number = 1
    repeat = 3

    def setup_cache(self):
        root = scratch_dir("vector_index")
        marker = os.path.join(root, f"ready-{ROWS}")
        if not os.path.exists(marker):
            write_fixtures(root)
            open(marker, "w").close()
        return {w: os.path.join(root, w) for w in ("ours", "peer", "hnsw_ours", "hnsw_peer")}

    def _query(self):
        return queries(1)[0]

    # exact search
    def time_lancefmt_exact_search(self, paths):
        searchers(paths["peer"], {"column": "vec", "q": self._query(), "k": K, "use_index": False})[0]()

    def time_pylance_exact_search(self, paths):
        searchers(paths["peer"], {"column": "vec", "q": self._query(), "k": K, "use_index": False})[1]()

    def track_exact_search_speedup(self, paths):
        return speedup(*searchers(paths["peer"], {"column": "vec", "q": self._query(), "k": K,
                                                  "use_index": False}), repeat=3)

    # builds
    def time_lancefmt_build(self, paths):
        build_ours(paths["ours"])

    def time_pylance_build(self, paths):
        build_peer(paths["peer"])

    def track_build_speedup(self, paths):
        return speedup(lambda: build_ours(paths["ours"]), lambda: build_peer(paths["peer"]),
                       repeat=1, warmup=0)

    # recall on the same index
    def track_recall_lancefmt(self, paths):
        import lancefmt
        return recall(paths["peer"], lancefmt, queries(QUERIES))

    def track_recall_pylance(self, paths):
        import lance
        return recall(paths["peer"], lance, queries(QUERIES))

    def track_recall_of_lancefmt_build(self, paths):
        import lance
        return recall(paths["ours"], lance, queries(QUERIES))

    # latency
    def track_query_speedup(self, paths):
        return speedup(*searchers(paths["peer"], {"column": "vec", "q": self._query(), "k": K,
                                                  "nprobes": NPROBES}), repeat=20, warmup=3)

    def track_batch_speedup(self, paths):
        return speedup(*searchers(paths["peer"], {"column": "vec", "q": queries(BATCH), "k": K,
                                                  "nprobes": NPROBES}), repeat=2, warmup=1)

    # IVF_HNSW_SQ side by side
    def track_hnsw_build_speedup(self, paths):
        import lance
        import lancefmt
        return speedup(lambda: build_hnsw(lancefmt, paths["hnsw_ours"]),
                       lambda: build_hnsw(lance, paths["hnsw_peer"]), repeat=1, warmup=0)

    def track_hnsw_recall_lancefmt(self, paths):
        import lancefmt
        return recall(paths["hnsw_ours"], lancefmt, queries(QUERIES), HNSW_NPROBES)

    def track_hnsw_recall_pylance(self, paths):
        import lance
        return recall(paths["hnsw_peer"], lance, queries(QUERIES), HNSW_NPROBES)

    def track_hnsw_query_speedup(self, paths):
        return speedup(*searchers(paths["hnsw_peer"], {"column": "vec", "q": self._query(), "k": K,
                                                       "nprobes": HNSW_NPROBES}), repeat=20, warmup=3)

    track_hnsw_build_speedup.unit = "x"
    track_hnsw_recall_lancefmt.unit = "recall@10"
    track_hnsw_recall_pylance.unit = "recall@10"
    track_hnsw_query_speedup.unit = "x"
    track_exact_search_speedup.unit = "x"
    track_build_speedup.unit = "x"
    track_recall_lancefmt.unit = "recall@10"
    track_recall_pylance.unit = "recall@10"
    track_recall_of_lancefmt_build.unit = "recall@10"
    track_query_speedup.unit = "x"
    track_batch_speedup.unit = "x"


def _ratios(ours, peer, repeat, warmup=1):
    """(lancefmt times, pylance times), run alternately."""
    for _ in range(warmup):
        ours(), peer()
    o, p = [], []
    for _ in range(repeat):
        for times, fn in ((o, ours), (p, peer)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return np.array(o), np.array(p)


def _line(label, o, p):
    """Median times, the median and range of the back-to-back pairs' ratios, and the ratio of
    the best times (what asv's ``track_*_speedup`` reports)."""
    r = p / o
    print(f"{label:40s} lancefmt {np.median(o) * 1e3:9.1f} ms   pylance {np.median(p) * 1e3:9.1f} ms   "
          f"ratio {np.median(r):5.2f}x (range {r.min():.2f}-{r.max():.2f}; best/best "
          f"{p.min() / o.min():.2f}x)", flush=True)


PARTS = ("build", "exact", "query", "batch", "recall", "hnsw-build", "hnsw", "rq-build", "rq")


def _indexed(path):
    import lance
    return bool(lance.dataset(path).list_indices())


def _fixture(root, who, t, rows, reuse):
    """Path of a pylance-written copy of ``t``; with ``reuse``, an existing copy is kept."""
    path = os.path.join(root, who)
    marker = os.path.join(root, f"{who}-ready-{rows}")
    if reuse and os.path.exists(marker):
        return path, False
    if os.path.exists(marker):
        os.remove(marker)
    shutil.rmtree(path, ignore_errors=True)
    import lance
    lance.write_dataset(t(), path, max_rows_per_file=-(-rows // FRAGMENTS), data_storage_version="2.2")
    open(marker, "w").close()
    return path, True


def main(argv=None):
    import argparse

    import lance

    import lancefmt

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", nargs="?", type=int, default=None, help="rows (same as --rows)")
    ap.add_argument("--rows", dest="rows_opt", type=int, default=200_000, help="rows (default 200,000)")
    ap.add_argument("--only", nargs="+", choices=PARTS, help="parts to run (default: all but rq-build and rq)",
                    default=[p for p in PARTS if not p.startswith("rq")])
    ap.add_argument("--reuse", action="store_true",
                    help="keep fixtures (and their indices) written by an earlier run of the same size")
    ap.add_argument("--builds", type=int, default=2, help="alternating IVF_PQ builds per library")
    ap.add_argument("--repeat", type=int, default=20, help="alternating single queries per library")
    ap.add_argument("--batch-repeat", type=int, default=3, help="alternating 1,000-query batches")
    ap.add_argument("--exact-repeat", type=int, default=5, help="alternating exact searches")
    ap.add_argument("--queries", type=int, default=QUERIES, help="queries for recall")
    ap.add_argument("--hnsw-partitions", type=int, default=HNSW_PARTITIONS,
                    help=f"IVF partitions of the IVF_HNSW_SQ indices (default {HNSW_PARTITIONS})")
    ap.add_argument("--hnsw-builds", type=int, default=1,
                    help="alternating IVF_HNSW_SQ builds per library (hnsw-build)")
    args = ap.parse_args(argv)
    rows = args.rows or args.rows_opt
    only = set(args.only)

    root = scratch_dir("vector_index_script" if rows == ROWS else f"vector_index_script_{rows}")
    t0 = time.perf_counter()
    cached = []
    t = lambda: cached[0] if cached else cached.append(table(rows)) or cached[0]  # noqa: E731
    paths, fresh = {}, {}
    # the IVF_PQ copies are written (and indexed) only for the parts that use them
    ivf_pq = only & {"build", "exact", "query", "batch", "recall"}
    hnsw = only & {"hnsw", "hnsw-build"}
    for who in (("ours", "peer") if ivf_pq else ()) + (("hnsw_ours", "hnsw_peer") if hnsw else ()):
        paths[who], fresh[who] = _fixture(root, who, t, rows, args.reuse)
    print(f"{rows:,} x {DIM} float32, {CLUSTERS} clusters; fixtures in {time.perf_counter() - t0:.0f} s; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    if "build" in only or (ivf_pq and not (_indexed(paths["ours"]) and _indexed(paths["peer"]))):
        o, p = _ratios(lambda: build_ours(paths["ours"]), lambda: build_peer(paths["peer"]),
                       args.builds, 0)
        _line(f"IVF_PQ build ({PARTITIONS}/{SUB_VECTORS})", o, p)
    q = queries(1)[0]
    if "exact" in only:
        _line("exact search k=10", *_ratios(*searchers(
            paths["peer"], {"column": "vec", "q": q, "k": K, "use_index": False}), args.exact_repeat))
    for who, name in (("peer", "pylance's"), ("ours", "lancefmt's")):
        if "query" in only:
            _line(f"query nprobes={NPROBES} k=10, {name} index", *_ratios(*searchers(
                paths[who], {"column": "vec", "q": q, "k": K, "nprobes": NPROBES}), args.repeat, 3))
        if "batch" in only:
            _line(f"{BATCH}-query batch, {name} index", *_ratios(*searchers(
                paths[who], {"column": "vec", "q": queries(BATCH), "k": K, "nprobes": NPROBES}),
                args.batch_repeat))
    qs = queries(args.queries)
    if "recall" in only:
        truth = exact_ids(paths["peer"], qs)
        for who, name in (("peer", "pylance's"), ("ours", "lancefmt's")):
            r_ours = recall(paths[who], lancefmt, qs, exact=truth)
            r_peer = recall(paths[who], lance, qs, exact=truth)
            print(f"recall@10 nprobes={NPROBES}, {name} index: lancefmt {r_ours:.3f}  pylance {r_peer:.3f}"
                  f"  (difference {r_ours - r_peer:+.3f})", flush=True)
    if hnsw:
        hp = args.hnsw_partitions
        if "hnsw-build" in only or not (_indexed(paths["hnsw_ours"]) and _indexed(paths["hnsw_peer"])):
            o, p = _ratios(lambda: build_hnsw(lancefmt, paths["hnsw_ours"], hp),
                           lambda: build_hnsw(lance, paths["hnsw_peer"], hp), args.hnsw_builds, 0)
            _line(f"IVF_HNSW_SQ build ({hp} partitions)", o, p)
    if "hnsw" in only:
        _query_and_recall("HNSW", "IVF_HNSW_SQ", paths["hnsw_peer"], paths["hnsw_ours"], HNSW_NPROBES,
                          q, qs, args.repeat)

    if "rq" in only or "rq-build" in only:
        _rq_parts(args, only, root, t, rows, q, qs, paths)


def _rq_parts(args, only, root, t, rows, q, qs, paths):
    """IVF_RQ (default 5 bits, 256 partitions): interleaved builds, single queries on both
    libraries' indices, recall@10 of each library on each index."""
    import lance

    import lancefmt
    for who in ("rq_ours", "rq_peer"):
        paths[who], _ = _fixture(root, who, t, rows, args.reuse)
    if "rq-build" in only or not (_indexed(paths["rq_ours"]) and _indexed(paths["rq_peer"])):
        o, p = _ratios(lambda: build_rq(lancefmt, paths["rq_ours"]),
                       lambda: build_rq(lance, paths["rq_peer"]), args.builds, 0)
        _line(f"IVF_RQ build ({RQ_PARTITIONS})", o, p)
    if "rq" in only:
        _query_and_recall("IVF_RQ", "IVF_RQ", paths["rq_peer"], paths["rq_ours"], NPROBES, q, qs,
                          args.repeat)


def _query_and_recall(query_label, recall_label, peer_path, ours_path, nprobes, q, qs, repeat):
    """Single queries timed on both libraries' indices, then recall@10 of each library on each
    index against pylance's exact answers."""
    import lance

    import lancefmt
    indices = ((peer_path, "pylance's"), (ours_path, "lancefmt's"))
    for path, name in indices:
        _line(f"{query_label} query nprobes={nprobes} k=10, {name}", *_ratios(*searchers(
            path, {"column": "vec", "q": q, "k": K, "nprobes": nprobes}), repeat, 3))
    truth = exact_ids(peer_path, qs)
    for path, name in indices:
        r_ours = recall(path, lancefmt, qs, nprobes, exact=truth)
        r_peer = recall(path, lance, qs, nprobes, exact=truth)
        print(f"{recall_label} recall@10 nprobes={nprobes}, {name} index: lancefmt {r_ours:.3f}  "
              f"pylance {r_peer:.3f}  (difference {r_ours - r_peer:+.3f})", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("LANCE_LOG", "error")  # no deprecation warning per pylance search
    main()
