"""Row-id sequences: decoding 10M-entry sequences of each segment kind, and row-id index lookups.

Decoding is measured against the floor any decoder must pay: a numpy copy (``arr.copy()``) of
the decoded array (allocation + 80 MB of writes). ``track_decode_over_copy`` reports
decode time / copy time; the target is <= 3. There is no pylance peer here: pylance exposes
sequence decoding only through JSON-wrapped metadata, which would measure JSON, not decoding.
"""
import numpy as np

from lancefmt.table.rowids import RowIdIndex, RowIdSequence, SegmentKind, decode_row_ids

from .common import best_time

N = 10_000_000


def _values(kind: str) -> np.ndarray:
    rng = np.random.default_rng(42)
    if kind == "range":
        return np.arange(1_000, 1_000 + N, dtype=np.uint64)
    if kind == "range_with_holes":
        holes = rng.choice(N + N // 100, N // 100, replace=False)
        return np.delete(np.arange(N + N // 100, dtype=np.uint64), holes)
    if kind == "range_with_bitmap":
        return np.flatnonzero(rng.random(2 * N) < 0.5).astype(np.uint64)[:N]
    if kind == "sorted_array":
        return np.sort(rng.choice(1 << 31, N, replace=False)).astype(np.uint64)
    return (rng.permutation(N).astype(np.uint64) * np.uint64(7))  # unsorted: Array


class DecodeRowIds:
    params = ["range", "range_with_holes", "range_with_bitmap", "sorted_array", "array"]
    param_names = ["kind"]
    timeout = 600

    def setup(self, kind):
        values = _values(kind)
        seq = RowIdSequence.from_array(values)
        assert seq.segments[0].kind == SegmentKind[kind.upper()], seq
        self.data = seq.to_bytes()
        self.decoded = decode_row_ids(self.data)
        assert np.array_equal(self.decoded, values)

    def time_decode(self, kind):
        decode_row_ids(self.data)

    def time_numpy_copy(self, kind):
        self.decoded.copy()

    def track_decode_over_copy(self, kind):
        decode = best_time(lambda: decode_row_ids(self.data), repeat=5)
        copy = best_time(lambda: self.decoded.copy(), repeat=5)
        return decode / copy

    track_decode_over_copy.unit = "decode time / copy time"


FRAGMENTS = 10
ROWS = 1_000_000
QUERIES = 1_000_000


class RowIdIndexLookup:
    """10 fragments x 1M rows; 1M random lookups of ids that were ever written.

    ``ranges_clean``: fresh fragments (one Range each, nothing deleted) -> 10 runs.
    ``ranges``: the same with 10% of rows deleted at random -> ~810k runs (worst case for runs).
    ``sparse``: unsorted ids (as updates write them), 10% deleted -> 9M single ids.
    """

    params = ["ranges_clean", "ranges", "sparse"]
    param_names = ["layout"]
    timeout = 600

    def setup(self, layout):
        rng = np.random.default_rng(1)
        self.fragments = []
        universe = rng.permutation(FRAGMENTS * ROWS * 4).astype(np.uint64) if layout == "sparse" else None
        for f in range(FRAGMENTS):
            if layout.startswith("ranges"):
                seq = RowIdSequence.from_range(f * ROWS, (f + 1) * ROWS)
            else:
                seq = RowIdSequence.from_array(universe[f * ROWS:(f + 1) * ROWS])
            deleted = None if layout == "ranges_clean" else rng.choice(ROWS, ROWS // 10, replace=False)
            self.fragments.append((f, seq, deleted))
        self.index = RowIdIndex.build(self.fragments)
        all_ids = np.concatenate([s.to_numpy() for _, s, _ in self.fragments])
        self.queries = rng.choice(all_ids, QUERIES)

    def time_build(self, layout):
        RowIdIndex.build(self.fragments)

    def time_lookup(self, layout):
        self.index.lookup(self.queries)
