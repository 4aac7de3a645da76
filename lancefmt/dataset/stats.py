"""``Dataset.stats`` (pylance's ``LanceStats``) and ``Dataset.lance_schema``.

``dataset_stats`` comes from the manifest alone; ``data_stats`` opens each data file's tail
(footer + column metadata, no page data) and adds up the page buffer bytes of each field's
column, as Lance reports "bytes on disk" per field id.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


@dataclass
class FieldStatistics:
    id: int              # field id
    bytes_on_disk: int   # (possibly compressed) bytes of the field's pages


@dataclass
class DataStatistics:
    fields: list


class LanceStats:
    def __init__(self, dataset):
        self._ds = dataset

    def dataset_stats(self, max_rows_per_group: int = 1024) -> dict:
        """``{"num_deleted_rows", "num_fragments", "num_small_files"}``; a small file is a
        fragment with fewer than ``max_rows_per_group`` physical rows."""
        frags = self._ds.get_fragments()
        return {
            "num_deleted_rows": sum(f.num_deletions for f in frags),
            "num_fragments": len(frags),
            "num_small_files": sum(1 for f in frags if f.physical_rows < max_rows_per_group),
        }

    def data_stats(self) -> DataStatistics:
        from ..file.reader import LanceFileReader

        ds = self._ds
        ctx = ds._ctx
        totals = {f.id: 0 for f in ds.lance_fields}
        for pb in ds._fragment_pbs():
            for df in pb.files:
                uri = ctx.resolver.data_file_uri(df.path, df.base_id if df.HasField("base_id") else None)
                meta = LanceFileReader(uri, store=ctx.store_for(uri),
                                       file_size=df.file_size_bytes or None).metadata
                for field_id, col in zip(df.fields, df.column_indices):
                    if field_id in totals and 0 <= col < len(meta.columns):
                        totals[field_id] += sum(sum(p.buffer_sizes) for p in meta.columns[col].pages)
        return DataStatistics([FieldStatistics(i, n) for i, n in sorted(totals.items())])

    def index_stats(self, index_name: str) -> dict:
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(f"Index not found: {index_name} (lancefmt writes no indices)")


class LanceSchema:
    """The Lance schema of a version: Field messages in pre-order, convertible to Arrow."""

    def __init__(self, fields: list):
        self._fields = list(fields)

    @property
    def fields(self) -> list:
        return list(self._fields)

    def field(self, name: str):
        """The top-level (or dotted nested) Field named ``name``, or None."""
        by_parent = {}
        for f in self._fields:
            by_parent.setdefault(f.parent_id, []).append(f)
        parent = -1
        found = None
        for part in name.split("."):
            found = next((f for f in by_parent.get(parent, []) if f.name == part), None)
            if found is None:
                return None
            parent = found.id
        return found

    def field_case_insensitive(self, name: str):
        for f in self._fields:
            if f.parent_id == -1 and f.name.lower() == name.lower():
                return f
        return None

    def to_pyarrow(self) -> pa.Schema:
        from ..file.schema import arrow_from_fields

        return arrow_from_fields(self._fields)

    def __eq__(self, other):
        return isinstance(other, LanceSchema) and [f.SerializeToString() for f in self._fields] == \
            [f.SerializeToString() for f in other._fields]

    def __repr__(self):
        return "LanceSchema(" + ", ".join(f"{f.name}:{f.id}" for f in self._fields) + ")"
