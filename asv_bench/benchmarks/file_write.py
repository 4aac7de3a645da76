"""Writing the file_read table (~200 MB: int64, float64, int32, string, float32 x 128) as a
Lance 2.0 data file: lancefmt's LanceFileWriter vs pylance's. Informational (no target)."""
import os

from .common import scratch_dir, speedup
from .file_read import ROWS, _table


class FileWrite:
    timeout = 900
    number = 1
    repeat = 3

    def setup(self):
        from lance.file import LanceFileWriter as PyLanceWriter

        from lancefmt.file.writer import LanceFileWriter

        self.table = _table(ROWS)
        self.dir = scratch_dir("file_write")
        batches = self.table.to_batches(max_chunksize=64 * 1024)

        def ours():
            path = os.path.join(self.dir, "ours.lance")
            with LanceFileWriter(path, self.table.schema, version="2.0") as w:
                for b in batches:
                    w.write_batch(b)
            os.remove(path)

        def peer():
            path = os.path.join(self.dir, "pylance.lance")
            with PyLanceWriter(path, self.table.schema, version="2.0") as w:
                for b in batches:
                    w.write_batch(b)
            os.remove(path)

        self.ours, self.peer = ours, peer

    def time_lancefmt_write(self):
        self.ours()

    def time_pylance_write(self):
        self.peer()

    def track_write_ratio(self):
        return speedup(self.ours, self.peer, repeat=3)

    track_write_ratio.unit = "x (pylance time / lancefmt time)"
