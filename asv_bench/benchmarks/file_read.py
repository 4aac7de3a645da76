"""Reading a ~200 MB Lance 2.0 data file: lancefmt vs pylance, per column group.

setup_cache writes the file once with pylance (int64, float64, int32, a string column and
float32 x 128 vectors, file version 2.0). ``time_*`` time a full open + ``read_all`` of one
column group with each library; ``track_read_all_ratio`` is pylance time / lancefmt time
(above 1: lancefmt faster), measured back to back in one process.
Targets: >= 1.0 for fixed width (and vectors), >= 0.67 (within 1.5x) for strings.
"""
import os

import numpy as np
import pyarrow as pa

from .common import scratch_dir, speedup

ROWS = 360_000
DIM = 128
GROUPS = {
    "fixed": ["i64", "f64", "i32"],
    "string": ["s"],
    "vector": ["v"],
    "all": None,
}


def _table(rows, seed=0):
    rng = np.random.default_rng(seed)
    names = np.char.add("user-", rng.integers(0, 10**9, rows).astype(str)).astype(object)
    return pa.table({
        "i64": pa.array(rng.integers(0, 1 << 40, rows)),
        "f64": pa.array(rng.random(rows)),
        "i32": pa.array(rng.integers(0, 1 << 30, rows, dtype=np.int32)),
        "s": pa.array(names),
        "v": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(rows * DIM, dtype=np.float32)), DIM),
    })


def write_fixture(path, rows=ROWS):
    from lance.file import LanceFileWriter

    table = _table(rows)
    tmp = path + ".tmp"
    with LanceFileWriter(tmp, table.schema, version="2.0") as w:
        for batch in table.to_batches(max_chunksize=64 * 1024):
            w.write_batch(batch)
    os.replace(tmp, path)


class FileRead:
    params = list(GROUPS)
    param_names = ["columns"]
    timeout = 900
    number = 1
    repeat = 5

    def setup_cache(self):
        path = os.path.join(scratch_dir("file_read"), f"bench-{ROWS}.lance")
        if not os.path.exists(path):
            write_fixture(path)
        return path

    def setup(self, path, group):
        from lance.file import LanceFileReader as PyLanceReader

        from lancefmt.file.reader import LanceFileReader

        self.columns = GROUPS[group]
        self.ours = lambda: LanceFileReader(path).read_all(self.columns)
        self.peer = lambda: PyLanceReader(path, columns=self.columns).read_all().to_table()
        self.ours()  # warm the page cache
        self.peer()

    def time_lancefmt_read_all(self, path, group):
        self.ours()

    def time_pylance_read_all(self, path, group):
        self.peer()

    def track_read_all_ratio(self, path, group):
        return speedup(self.ours, self.peer, repeat=7)

    track_read_all_ratio.unit = "x (pylance time / lancefmt time)"
