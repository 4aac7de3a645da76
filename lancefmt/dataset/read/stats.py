"""``Dataset.stats`` (pylance's ``LanceStats``) and ``Dataset.lance_schema``.

``dataset_stats`` comes from the manifest alone; ``data_stats`` opens each data file's tail
(footer + column metadata, no page data) and adds up the page buffer bytes of each field's
column, as Lance reports "bytes on disk" per field id.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ...errors import InvalidArgumentError
from ...file.reader import LanceFileReader
from ..core.files import data_file_uri
from .index_info import index_stats
from .scan import live_counts


@dataclass
class FieldStatistics:
    id: int              # field id
    bytes_on_disk: int   # (possibly compressed) bytes of the field's pages


@dataclass
class DataStatistics:
    fields: list


class LanceStats:
    """``Dataset.stats`` of one version (a snapshot)."""

    def __init__(self, snapshot):
        self._snapshot = snapshot

    def dataset_stats(self, max_rows_per_group: int = 1024) -> dict:
        """``{"num_deleted_rows", "num_fragments", "num_small_files"}``; a small file is a
        fragment with fewer than ``max_rows_per_group`` physical rows."""
        snapshot = self._snapshot
        pbs = snapshot.fragment_pbs()
        live = live_counts(snapshot.ctx, pbs)
        return {
            "num_deleted_rows": int(sum(pb.physical_rows for pb in pbs) - live.sum()),
            "num_fragments": len(pbs),
            "num_small_files": sum(1 for pb in pbs if pb.physical_rows < max_rows_per_group),
        }

    def data_stats(self) -> DataStatistics:
        snapshot = self._snapshot
        ctx = snapshot.ctx
        totals = {f.id: 0 for f in snapshot.lance_fields}
        for pb in snapshot.fragment_pbs():
            for df in pb.files:
                uri = data_file_uri(ctx.resolver, df)
                meta = LanceFileReader(uri, store=ctx.store_for(uri),
                                       file_size=df.file_size_bytes or None).metadata
                for field_id, col in zip(df.fields, df.column_indices):
                    if field_id in totals and 0 <= col < len(meta.columns):
                        totals[field_id] += sum(sum(p.buffer_sizes) for p in meta.columns[col].pages)
        return DataStatistics([FieldStatistics(i, n) for i, n in sorted(totals.items())])

    def index_stats(self, index_name: str) -> dict:
        """pylance's per-index statistics (see :func:`.index_info.index_stats`)."""
        return index_stats(self._snapshot, index_name)


