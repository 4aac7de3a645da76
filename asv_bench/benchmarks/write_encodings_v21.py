"""Strings at Lance 2.2, lancefmt vs pylance 14 in one run: FSST (both writers' default for
string pages of 32 KiB+) on 300k URLs -- write time (``track_write_speed_ratio``, pylance time /
ours, above 1 means lancefmt is faster) and column bytes (``track_size_ratio``, ours / pylance,
target <= 1.15).

Run directly: ``python -m asv_bench.benchmarks.write_encodings_v21``.
"""
import os

import pyarrow as pa

from .common import scratch_dir, speedup
from .file_write_v21 import column_data_bytes, size_table, timed_writers, write_ours, write_pylance

ROWS = 300_000


class WriteStringsV22:
    timeout = 600
    number = 1
    repeat = 3

    def setup(self):
        self.table = pa.table({"urls": size_table(ROWS).column("urls")})
        self.dir = scratch_dir("write_encodings_v21")
        self.ours, self.peer = timed_writers(self.table, self.dir)

    def time_lancefmt_write_urls(self):
        self.ours()

    def time_pylance_write_urls(self):
        self.peer()

    def track_write_speed_ratio(self):
        return speedup(self.ours, self.peer, repeat=3)

    track_write_speed_ratio.unit = "pylance time / lancefmt time"

    def track_size_ratio(self):
        a, b = os.path.join(self.dir, "s_ours.lance"), os.path.join(self.dir, "s_peer.lance")
        write_ours(a, self.table)
        write_pylance(b, self.table)
        ratio = column_data_bytes(a)["urls"] / column_data_bytes(b)["urls"]
        os.remove(a)
        os.remove(b)
        return ratio

    track_size_ratio.unit = "ours/pylance bytes"


if __name__ == "__main__":
    bench = WriteStringsV22()
    bench.setup()
    print("urls size ratio (ours / pylance):", round(bench.track_size_ratio(), 3))
    print("urls write speed ratio (pylance time / ours):", round(bench.track_write_speed_ratio(), 3))
