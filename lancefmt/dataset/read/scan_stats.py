"""``scan_stats_callback``: what one scan did, as pylance's ``ScanStatistics``.

I/O comes from the process-wide read counters (a concurrent read elsewhere in the process is
counted too, as the counters cannot tell them apart); index work from the counters of
:mod:`lancefmt.index.core.stats`, which the scan's planning opens.
"""
from __future__ import annotations

from ...index.core.stats import counting
from ...io.io_stats import totals as io_totals


class ScanStatistics:
    """Statistics about a scan operation (pylance's ``lance.ScanStatistics``)."""

    def __init__(self, iops: int, bytes_read: int, index_counts: dict):
        self.iops = int(iops)
        self.requests = int(iops)
        self.bytes_read = int(bytes_read)
        self.indices_loaded = int(index_counts.get("indices_loaded", 0))
        self.parts_loaded = int(index_counts.get("parts_loaded", 0))
        self.index_comparisons = int(index_counts.get("index_comparisons", 0))
        self.index_cache_hits = int(index_counts.get("index_cache_hits", 0))
        self.all_counts = {"iops": self.iops, "requests": self.requests,
                           "bytes_read": self.bytes_read, **{k: int(v) for k, v in index_counts.items()}}

    def __repr__(self):
        return (f"ScanStatistics(iops={self.iops}, bytes_read={self.bytes_read}, "
                f"indices_loaded={self.indices_loaded}, parts_loaded={self.parts_loaded})")


def measured(batches_of, callback):
    """The batches ``batches_of()`` gives (planning included), then ``callback(ScanStatistics)``
    once they are all read."""
    requests0, bytes0 = io_totals()
    with counting() as counters:
        yield from batches_of()
    requests1, bytes1 = io_totals()
    callback(ScanStatistics(requests1 - requests0, bytes1 - bytes0, counters.counts))
