"""Lance 2.2 files written by lancefmt vs pylance 14 (both with their default strategies):

* ``track_size_ratio_<kind>``: data bytes of one column kind (pages' buffers) in a 300k-row
  table, ours / pylance's (target <= 1.15) -- small ints, timestamps, prices, low-cardinality
  categories, URLs, booleans;
* ``time_*`` / ``track_write_speed_ratio``: writing 2M rows (int64, float64, int32) at 2.2
  (ratio = pylance time / ours, above 1 means lancefmt is faster; target >= 1.0).

Run directly for a table: ``python -m asv_bench.benchmarks.file_write_v21``.
"""
import os

import numpy as np
import pyarrow as pa

from .common import scratch_dir, speedup

SIZE_ROWS = 300_000
SPEED_ROWS = 2_000_000
KINDS = ("small_ints", "timestamps", "prices", "categories", "urls", "booleans")


def size_table(n=SIZE_ROWS, seed=0) -> pa.Table:
    rng = np.random.default_rng(seed)
    start = 1_700_000_000_000
    ts = start + np.cumsum(rng.integers(0, 2000, n))
    cats = np.array(["electronics", "books", "garden", "toys", "grocery", "sports", "health",
                     "automotive", "music", "office", "pets", "beauty"])
    urls = [f"https://shop.example.com/{cats[i % 12]}/item/{int(v)}?ref=home"
            for i, v in enumerate(rng.integers(0, 10**7, n))]
    return pa.table({
        "small_ints": pa.array(rng.integers(0, 100, n), pa.int64()),
        "timestamps": pa.array(ts, pa.int64()).cast(pa.timestamp("ms")),
        "prices": pa.array(np.round(rng.gamma(2.0, 20.0, n), 2)),
        "categories": pa.array(cats[rng.zipf(1.5, n) % 12]),
        "urls": pa.array(urls),
        "booleans": pa.array(rng.random(n) < 0.3),
    })


def speed_table(n=SPEED_ROWS, seed=0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"i64": pa.array(rng.integers(0, 1 << 40, n)),
                     "f64": pa.array(rng.standard_normal(n)),
                     "i32": pa.array(rng.integers(-1000, 1000, n, dtype=np.int32))})


def column_data_bytes(path) -> dict:
    """Bytes of every top-level column's page buffers (by name; one leaf per column here)."""
    from lancefmt.file.reader import LanceFileReader

    r = LanceFileReader(path)
    names = r.schema.names
    out = {}
    for name, col in zip(names, r._meta.columns):
        out[name] = sum(sum(p.buffer_sizes) for p in col.pages)
    return out


def write_ours(path, table, version="2.2"):
    from lancefmt.file.writer import LanceFileWriter

    with LanceFileWriter(path, table.schema, version=version) as w:
        for b in table.to_batches(max_chunksize=64 * 1024):
            w.write_batch(b)


def write_pylance(path, table, version="2.2"):
    from lance.file import LanceFileWriter

    with LanceFileWriter(path, table.schema, version=version) as w:
        for b in table.to_batches(max_chunksize=64 * 1024):
            w.write_batch(b)


def size_ratios(version="2.2") -> dict:
    table = size_table()
    d = scratch_dir("file_write_v21")
    ours, theirs = os.path.join(d, "ours.lance"), os.path.join(d, "theirs.lance")
    write_ours(ours, table, version)
    write_pylance(theirs, table, version)
    a, b = column_data_bytes(ours), column_data_bytes(theirs)
    os.remove(ours)
    os.remove(theirs)
    return {k: (a[k], b[k], a[k] / max(b[k], 1)) for k in KINDS}


class FileWriteV21Size:
    timeout = 600
    number = 1
    repeat = 1

    def setup_cache(self):
        return {k: v[2] for k, v in size_ratios().items()}


def _make_track(kind):
    def track(self, ratios):
        return ratios[kind]
    track.__name__ = f"track_size_ratio_{kind}"
    track.unit = "ours/pylance bytes"
    return track


for _kind in KINDS:
    setattr(FileWriteV21Size, f"track_size_ratio_{_kind}", _make_track(_kind))


def timed_writers(table, directory):
    """(ours, peer): each writes ``table`` as one file in ``directory`` and removes it, so
    repeated timings measure the write alone."""
    def run(write, name):
        def once():
            path = os.path.join(directory, name)
            write(path, table)
            os.remove(path)
        return once

    return run(write_ours, "ours.lance"), run(write_pylance, "pylance.lance")


class FileWriteV21Speed:
    timeout = 900
    number = 1
    repeat = 3

    def setup(self):
        import lance.file  # noqa: F401 -- imports are not what is timed
        import lancefmt.file.writer  # noqa: F401

        self.table = speed_table()
        self.ours, self.peer = timed_writers(self.table, scratch_dir("file_write_v21_speed"))

    def time_lancefmt_write_2_2(self):
        self.ours()

    def time_pylance_write_2_2(self):
        self.peer()

    def track_write_speed_ratio(self):
        return speedup(self.ours, self.peer, repeat=5)

    track_write_speed_ratio.unit = "pylance time / lancefmt time"


if __name__ == "__main__":
    for k, (a, b, r) in size_ratios().items():
        print(f"{k:12s} ours {a:>9d}  pylance {b:>9d}  ratio {r:.3f}")
    bench = FileWriteV21Speed()
    bench.setup()
    print("write speed ratio (pylance time / ours):", round(bench.track_write_speed_ratio(), 3))
