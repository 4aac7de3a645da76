"""INVERTED (full-text) index: building it, and ranked searches, lancefmt beside pylance.

setup_cache writes a dataset of generated text once with pylance (``ROWS`` documents, 10
fragments): ``id``, ``title`` (2-6 words) and ``body`` (5-60 words) drawn from a Zipf-like
vocabulary of 40,000 invented words, some common English words (stop words included) and
accented forms. pylance builds the ``body`` index (with positions) and the ``title`` index both
libraries query.

* build: ``create_scalar_index("body", "INVERTED", with_position=True)`` by each library
  (under another name, so the queried index stays; each build commits a version).
* queries, ``limit=20``: match (OR and AND), phrase, fuzzy, multi-match, boolean, boost.

``track_*`` return pylance time / lancefmt time measured back to back (above 1: lancefmt
faster). A direct run (``python -m benchmarks.fts_index [rows]`` from asv_bench/, 100k rows by
default) also checks that both return the same top 20 with scores within 1e-3, and prints the
ratios with their spread.
"""
import os
import shutil
import sys

import numpy as np
import pyarrow as pa

from .common import best_time, scratch_dir, speedup

ROWS = int(os.environ.get("FTS_BENCH_ROWS", 1_000_000))
FRAGMENTS = 10
COMMON = ("the of and to in is was for on that with as by at from it be this are or an have not "
          "data search index vector lance query table file").split()


def vocabulary(n=40_000, seed=3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    syll = ["ka", "lo", "mi", "ne", "ru", "sta", "tri", "von", "bel", "quo", "zen", "pha", "dri",
            "ché", "mü", "or", "an", "is", "ing", "ed", "er", "s"]
    words = {"".join(rng.choice(syll, rng.integers(2, 5))) for _ in range(n * 2)}
    return np.array(COMMON + sorted(words)[: n - len(COMMON)])


def texts(rows, lo, hi, seed) -> pa.Array:
    rng = np.random.default_rng(seed)
    vocab = vocabulary()
    p = 1.0 / np.arange(1, vocab.size + 1) ** 1.05
    p /= p.sum()
    lens = rng.integers(lo, hi + 1, rows)
    words = vocab[rng.choice(vocab.size, int(lens.sum()), p=p)]
    return pa.array([" ".join(w) for w in np.split(words, np.cumsum(lens)[:-1])], pa.string())


def write_fixture(path, rows=None):
    import lance

    rows = rows or ROWS
    shutil.rmtree(path, ignore_errors=True)
    t = pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "title": texts(rows, 2, 6, 1),
                  "body": texts(rows, 5, 60, 2)})
    lance.write_dataset(t, path, max_rows_per_file=max(1, rows // FRAGMENTS))
    ds = lance.dataset(path)
    ds.create_scalar_index("body", "INVERTED", with_position=True)
    ds.create_scalar_index("title", "INVERTED")


def queries(Q) -> dict:
    words = vocabulary()
    a, b, c = str(words[len(COMMON) + 3]), str(words[len(COMMON) + 40]), str(words[len(COMMON) + 900])
    return {
        "match": Q.MatchQuery(f"{a} {c}", "body"),
        "match_and": Q.MatchQuery(f"{a} {b}", "body", operator=Q.FullTextOperator.AND),
        "phrase": Q.PhraseQuery(f"{a} {b}", "body", slop=2),
        "fuzzy": Q.MatchQuery(c[:-1] + "x", "body", fuzziness=1),
        "multi": Q.MultiMatchQuery(f"{b} {c}", ["title", "body"]),
        "boolean": Q.BooleanQuery([(Q.Occur.MUST, Q.MatchQuery(a, "body")),
                                   (Q.Occur.SHOULD, Q.MatchQuery(c, "title")),
                                   (Q.Occur.MUST_NOT, Q.MatchQuery(b, "body"))]),
        "boost": Q.BoostQuery(Q.MatchQuery(c, "body"), Q.MatchQuery(a, "body")),
    }


def lancefmt_build(path):
    import lancefmt

    lancefmt.dataset(path).create_scalar_index("body", "INVERTED", name="bench_build",
                                               with_position=True)


def pylance_build(path):
    import lance

    lance.dataset(path).create_scalar_index("body", "INVERTED", name="bench_build",
                                            with_position=True)


def search(lib, path, name):
    import lance
    import lance.query as LQ
    import lancefmt
    import lancefmt.query as FQ

    ds = (lancefmt if lib == "lancefmt" else lance).dataset(path)
    q = queries(FQ if lib == "lancefmt" else LQ)[name]
    return lambda: ds.to_table(full_text_query=q, columns=["id"], limit=20)


class FtsIndex:
    timeout = 3600
    number = 1
    repeat = 3

    def setup_cache(self):
        root = scratch_dir("fts_index")
        path = os.path.join(root, "ds")
        marker = os.path.join(root, f"ready-{ROWS}")
        if not os.path.exists(marker):
            write_fixture(path)
            open(marker, "w").close()
        return path

    def time_lancefmt_build(self, path):
        lancefmt_build(path)

    def time_pylance_build(self, path):
        pylance_build(path)

    def track_build_speedup(self, path):
        return speedup(lambda: lancefmt_build(path), lambda: pylance_build(path), repeat=1, warmup=0)

    def time_lancefmt_match(self, path):
        search("lancefmt", path, "match")()

    def time_pylance_match(self, path):
        search("pylance", path, "match")()

    def track_match_speedup(self, path):
        return speedup(search("lancefmt", path, "match"), search("pylance", path, "match"))

    def track_phrase_speedup(self, path):
        return speedup(search("lancefmt", path, "phrase"), search("pylance", path, "phrase"))

    def track_boolean_speedup(self, path):
        return speedup(search("lancefmt", path, "boolean"), search("pylance", path, "boolean"))


def same_top(ours, peer) -> bool:
    """Same scores (1e-3), and the same rows above the lowest score (ties may differ)."""
    a = dict(zip(peer["id"].to_pylist(), peer["_score"].to_pylist()))
    b = dict(zip(ours["id"].to_pylist(), ours["_score"].to_pylist()))
    sa, sb = sorted(a.values()), sorted(b.values())
    if len(sa) != len(sb) or any(abs(x - y) > 1e-3 for x, y in zip(sa, sb)):
        return False
    cut = min(sa) if sa else 0
    return all(k in b and abs(b[k] - v) <= 1e-3 for k, v in a.items() if v > cut + 1e-3)


def main(rows=100_000):
    """Direct run: correctness of the top 20, build and query ratios with their spread."""
    import time

    global ROWS
    ROWS = rows
    b = FtsIndex()
    p = b.setup_cache()
    builds = {}
    for name, fn in (("lancefmt", lambda: lancefmt_build(p)), ("pylance", lambda: pylance_build(p))):
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        builds[name] = times
    lo = min(builds["pylance"]) / max(builds["lancefmt"])
    hi = max(builds["pylance"]) / min(builds["lancefmt"])
    print(f"build {rows} docs: lancefmt {min(builds['lancefmt']):.2f} s, pylance "
          f"{min(builds['pylance']):.2f} s, ratio {min(builds['pylance']) / min(builds['lancefmt']):.2f} "
          f"(range {lo:.2f}-{hi:.2f})")
    import lancefmt

    lancefmt.dataset(p).drop_index("bench_build")
    for name in queries(__import__("lancefmt.query", fromlist=["x"])):
        ours, peer = search("lancefmt", p, name), search("pylance", p, name)
        ok = same_top(ours(), peer())
        ratios = [speedup(ours, peer, repeat=3, warmup=1) for _ in range(3)]
        t_ours, t_peer = best_time(ours, repeat=3), best_time(peer, repeat=3)
        print(f"{name:10s} top20 same={ok} rows={ours().num_rows:2d} lancefmt {t_ours * 1000:7.1f} ms "
              f"pylance {t_peer * 1000:7.1f} ms ratio {np.median(ratios):.2f} "
              f"(range {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":  # direct run: python -m benchmarks.fts_index [rows] (from asv_bench/)
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
