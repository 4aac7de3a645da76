"""``merge_insert_into_table``: upsert rows by key columns.

When the Dataset has ``merge_insert`` (pylance's builder API) that is used. Otherwise this module
does it with what lancefmt has: the target rows whose key matches (or, for
``when_not_matched_by_source_delete``, does not match) are deleted and the source rows to keep
are appended, all in one Update transaction. That path supports one key column of integer or
string type and no ``*_filt`` conditions (refused with UnsupportedOperationError).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..dataset import write_fragments
from ..dataset.delete import plan_delete
from ..table.transaction import Append, Delete, Update
from .errors import InvalidInputError, UnsupportedOperationError


def _literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise UnsupportedOperationError(f"merge_insert key values of type {type(value).__name__}")


def _in(column: str, values) -> str:
    return f"{column} IN (" + ", ".join(_literal(v) for v in values) + ")"


def _after(ds, result):
    """The Dataset after a mutation: older lancefmt returns the new Dataset, newer lancefmt
    (like pylance) moves ``ds`` itself and returns None or a stats dict."""
    return result if hasattr(result, "version") and hasattr(result, "to_table") else ds


def merge_insert(ds, reader, req):
    """(stats dict, new Dataset) after merging ``reader`` into ``ds`` as ``req`` says."""
    on = [req.on] if isinstance(req.on, str) else list(req.on)
    update_all = bool(req.when_matched_update_all)
    insert_all = req.when_not_matched_insert_all is not False
    delete_missing = bool(req.when_not_matched_by_source_delete)
    source = reader.read_all() if hasattr(reader, "read_all") else pa.table(reader)
    if hasattr(ds, "merge_insert"):
        builder = ds.merge_insert(on)
        if update_all:
            builder = builder.when_matched_update_all(req.when_matched_update_all_filt)
        if insert_all:
            builder = builder.when_not_matched_insert_all()
        if delete_missing:
            builder = builder.when_not_matched_by_source_delete(req.when_not_matched_by_source_delete_filt)
        stats = builder.execute(source)
        out = ds.checkout_latest()
        return {k: int(stats.get(k, 0) or 0) for k in
                ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}, out
    if len(on) != 1:
        raise UnsupportedOperationError("merge_insert on several key columns needs Dataset.merge_insert")
    if req.when_matched_update_all_filt or req.when_not_matched_by_source_delete_filt:
        raise UnsupportedOperationError("merge_insert conditions need Dataset.merge_insert")
    key = on[0]
    if key not in source.column_names or key not in ds.schema.names:
        raise InvalidInputError(f"merge key {key!r} is not a column of both tables")
    src_keys = source.column(key)
    if len(pc.unique(src_keys)) != len(src_keys):
        raise InvalidInputError("merge_insert source has duplicate keys")
    target_keys = ds.to_table(columns=[key]).column(key)
    matched_src = pc.is_in(src_keys, value_set=target_keys)
    matched_target = pc.is_in(target_keys, value_set=src_keys)
    add = []
    remove_keys = []
    n_updated = n_inserted = n_deleted = 0
    if update_all:
        upd = source.filter(matched_src)
        add.append(upd)
        remove_keys += upd.column(key).to_pylist()
        n_updated = upd.num_rows
    if insert_all:
        ins = source.filter(pc.invert(matched_src))
        add.append(ins)
        n_inserted = ins.num_rows
    if delete_missing:
        gone = target_keys.filter(pc.invert(matched_target)).to_pylist()
        remove_keys += gone
        n_deleted = len(gone)
    new_rows = pa.concat_tables(add).cast(ds.schema) if add else None
    new = write_fragments(new_rows, ds.uri, mode="append", storage_options=ds.storage_options) \
        if new_rows is not None and new_rows.num_rows else []
    updated, removed = plan_delete(ds, _in(key, remove_keys))[:2] if remove_keys else ([], [])
    if updated or removed:
        op = Update(removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new) \
            if new else Delete(updated, removed, _in(key, remove_keys))
    elif new:
        op = Append(new)
    else:
        return {"num_inserted_rows": 0, "num_updated_rows": 0, "num_deleted_rows": 0}, ds
    out = _after(ds, ds._commit(op))
    return {"num_inserted_rows": n_inserted, "num_updated_rows": n_updated,
            "num_deleted_rows": n_deleted}, out
