"""NGRAM index on 1M strings: building it, and ``contains`` filters answered through it.

setup_cache writes the dataset once with pylance (10 fragments of 100k rows): ``id`` and ``s``,
3-8 words of invented syllables (some accented), ~43 characters a value. The index pylance
builds there is the one both libraries query.

* build: lancefmt reads the column (with row ids and addresses) and trains into a scratch
  directory; pylance runs ``create_scalar_index(..., replace=True)`` (which also commits).
* query: ``to_table(filter="contains(s, ...)", columns=["id"])`` by each library, and the
  index search alone in lancefmt (``NGramIndex.search``).

``track_*`` return pylance time / lancefmt time measured back to back (above 1: lancefmt faster).
"""
import os
import shutil
import uuid

import numpy as np
import pyarrow as pa

from .common import best_time, scratch_dir, speedup

ROWS = 1_000_000
FRAGMENTS = 10
SELECTIVE = "contains(s, 'quozen42')"     # ~800 rows
MEDIUM = "contains(s, 'stavon')"          # ~27k rows
NO_TRIGRAM = "contains(s, 'a b')"         # no trigram: every row re-checked


def strings(rows=ROWS, seed=1) -> pa.Array:
    rng = np.random.default_rng(seed)
    syll = ["ka", "lo", "mi", "ne", "ru", "sta", "tri", "von", "bel", "quo", "zen", "pha", "dri",
            "ché", "mü", "ø", "x", "7", "42"]
    vocab = np.array(["".join(rng.choice(syll, rng.integers(2, 5))) for _ in range(20000)])
    lens = rng.integers(3, 9, rows)
    words = vocab[rng.integers(0, vocab.size, lens.sum())]
    return pa.array([" ".join(w) for w in np.split(words, np.cumsum(lens)[:-1])], pa.string())


def write_fixture(path, rows=ROWS):
    import lance

    shutil.rmtree(path, ignore_errors=True)
    t = pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "s": strings(rows)})
    lance.write_dataset(t, path, max_rows_per_file=rows // FRAGMENTS)
    lance.dataset(path).create_scalar_index("s", "NGRAM")


def lancefmt_build(path, scratch):
    """Read the column as an index build does, train, write (no commit)."""
    import lancefmt
    from lancefmt.index.core.registry import TrainingData
    from lancefmt.index.core.store import IndexStore
    from lancefmt.index.scalar.ngram import NGRAM

    ds = lancefmt.dataset(path)
    t = ds.to_table(columns=["s"], with_row_id=True, with_row_address=True)
    t = pa.table({"value": t["s"], "_rowid": t["_rowid"], "_rowaddr": t["_rowaddr"]})
    store = IndexStore(os.path.join(scratch, uuid.uuid4().hex))
    NGRAM.train(TrainingData.from_table(ds.schema.field("s"), t), store, {})
    shutil.rmtree(store.dir_uri, ignore_errors=True)


def pylance_build(path):
    import lance

    lance.dataset(path).create_scalar_index("s", "NGRAM", replace=True)


def loaded_index(path):
    import lancefmt
    from lancefmt.index.core.catalog import LOADED
    from lancefmt.index.core.metadata import uuid_text
    from lancefmt.index.core.store import IndexStore
    from lancefmt.index.scalar.ngram import NGRAM
    from lancefmt.table.versions import load_manifest

    LOADED.clear()
    entry = [e for e in load_manifest(path, None).indices if e.name == "s_idx"][-1]
    lancefmt.dataset(path)
    return NGRAM.load(IndexStore(f"{path}/_indices/{uuid_text(entry)}"), None)


class NGramIndex:
    timeout = 1800
    number = 1
    repeat = 3

    def setup_cache(self):
        root = scratch_dir("ngram_index")
        path = os.path.join(root, "ds")
        marker = os.path.join(root, f"ready-{ROWS}")
        if not os.path.exists(marker):
            write_fixture(path)
            open(marker, "w").close()
        return path

    def time_lancefmt_build(self, path):
        lancefmt_build(path, scratch_dir("ngram_index_build"))

    def time_pylance_build(self, path):
        pylance_build(path)

    def track_build_speedup(self, path):
        scratch = scratch_dir("ngram_index_build")
        return speedup(lambda: lancefmt_build(path, scratch), lambda: pylance_build(path),
                       repeat=2, warmup=0)

    @staticmethod
    def _query(lib, path, flt):
        import lance
        import lancefmt

        ds = (lancefmt if lib == "lancefmt" else lance).dataset(path)
        return lambda: ds.to_table(filter=flt, columns=["id"])

    def time_lancefmt_selective(self, path):
        self._query("lancefmt", path, SELECTIVE)()

    def time_pylance_selective(self, path):
        self._query("pylance", path, SELECTIVE)()

    def track_selective_speedup(self, path):
        return speedup(self._query("lancefmt", path, SELECTIVE), self._query("pylance", path, SELECTIVE))

    def track_medium_speedup(self, path):
        return speedup(self._query("lancefmt", path, MEDIUM), self._query("pylance", path, MEDIUM))

    def time_lancefmt_search_only(self, path):
        from lancefmt.sql.sargable import Contains

        loaded_index(path).search(Contains("stavon"))


if __name__ == "__main__":  # direct run: python -m benchmarks.ngram_index (from asv_bench/)
    import resource
    import time

    from lancefmt.sql.sargable import Contains

    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    b = NGramIndex()
    p = b.setup_cache()
    scratch = scratch_dir("ngram_index_build")
    for name, fn in [("lancefmt build", lambda: lancefmt_build(p, scratch)), ("pylance build", lambda: pylance_build(p))]:
        c0, w0 = cpu(), time.perf_counter()
        fn()
        print(f"{name}: wall {time.perf_counter() - w0:.2f} s, cpu of this process {cpu() - c0:.2f} s")
    idx = loaded_index(p)
    for flt in (SELECTIVE, MEDIUM, NO_TRIGRAM):
        text = flt.split("'")[1]
        ours, peer = b._query("lancefmt", p, flt), b._query("pylance", p, flt)
        assert sorted(ours()["id"].to_pylist()) == sorted(peer()["id"].to_pylist())
        res = idx.search(Contains(text))
        t_search = best_time(lambda: idx.search(Contains(text)), repeat=3)
        t_ours, t_peer = best_time(ours, repeat=3), best_time(peer, repeat=3)
        print(f"{flt}: {ours().num_rows} rows; index answer {res.rows.size} rows "
              f"({'every row' if res.negated else 'at most'}), search {t_search * 1000:.1f} ms; "
              f"to_table lancefmt {t_ours * 1000:.0f} ms, pylance {t_peer * 1000:.0f} ms")
