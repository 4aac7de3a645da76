"""``merge_insert_into_table``: upsert rows by key columns through ``Dataset.merge_insert``."""
from __future__ import annotations

import pyarrow as pa


def merge_insert(ds, reader, req):
    """(stats dict, new Dataset) after merging ``reader`` into ``ds`` as ``req`` says."""
    on = [req.on] if isinstance(req.on, str) else list(req.on)
    source = reader.read_all() if hasattr(reader, "read_all") else pa.table(reader)
    builder = ds.merge_insert(on)
    if req.when_matched_update_all:
        builder = builder.when_matched_update_all(req.when_matched_update_all_filt)
    if req.when_not_matched_insert_all is not False:
        builder = builder.when_not_matched_insert_all()
    if req.when_not_matched_by_source_delete:
        builder = builder.when_not_matched_by_source_delete(req.when_not_matched_by_source_delete_filt)
    stats = builder.execute(source)
    return {k: int(stats.get(k, 0) or 0) for k in
            ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}, ds.checkout_latest()
