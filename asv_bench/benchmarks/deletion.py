"""Deletion masking for a 2M-row fragment with 10% of its rows deleted.

Parsing the deletion file (.arrow and .bin), building the live mask / kept indices / live runs,
and dropping deleted rows from a record batch. Target: well under 1 ms per 100k rows for the
mask kernels (``track_mask_us_per_100k_rows`` reports microseconds per 100k rows).
"""
import numpy as np
import pyarrow as pa

from lancefmt.table.deletion import (
    ARROW,
    BITMAP,
    DeletionVector,
    apply_deletions,
    deletion_file_bytes,
    parse_deletion_file,
)

from .common import best_time

ROWS = 2_000_000
DELETED = ROWS // 10


class DeletionMask:
    params = [ARROW, BITMAP]
    param_names = ["kind"]

    def setup(self, kind):
        rng = np.random.default_rng(3)
        offsets = rng.choice(ROWS, DELETED, replace=False)
        self.dv = DeletionVector.from_offsets(offsets, kind=kind)
        self.data = deletion_file_bytes(self.dv)
        self.batch = pa.record_batch({"x": np.arange(ROWS, dtype=np.int64)})

    def time_parse_file(self, kind):
        parse_deletion_file(self.data, kind, physical_rows=ROWS)

    def time_live_mask(self, kind):
        self.dv.live_mask(ROWS)

    def time_kept_indices(self, kind):
        self.dv.kept_indices(ROWS)

    def time_live_runs(self, kind):
        self.dv.live_runs(ROWS)

    def time_apply_to_batch(self, kind):
        apply_deletions(self.batch, self.dv)

    def track_mask_us_per_100k_rows(self, kind):
        t = best_time(lambda: self.dv.live_mask(ROWS), repeat=7)
        return t * 1e6 / (ROWS / 100_000)

    track_mask_us_per_100k_rows.unit = "us / 100k rows"

    def track_file_to_kept_indices_us_per_100k_rows(self, kind):
        def run():
            parse_deletion_file(self.data, kind, physical_rows=ROWS).kept_indices(ROWS)
        return best_time(run, repeat=7) * 1e6 / (ROWS / 100_000)

    track_file_to_kept_indices_us_per_100k_rows.unit = "us / 100k rows"
