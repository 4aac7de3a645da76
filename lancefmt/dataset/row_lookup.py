"""Rows by stable row id (``Dataset.take_row_ids``) and by row address.

The row-id index (:class:`~lancefmt.table.rowids.RowIdIndex`) is built once per Dataset view
from the fragments' row-id sequences and deletion vectors; lookups are vectorised. Addresses
are then grouped by fragment and read with ``LanceFileReader.take``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError
from ..table.rowids import MISSING_ADDRESS, RowIdIndex, load_row_ids
from .scan import ScanSpec, load_deletions
from .take import take_physical


def build_row_id_index(ds) -> RowIdIndex:
    ctx = ds._ctx
    entries = []
    for pb in ds._fragment_pbs():
        ids = load_row_ids(pb, ctx.uri, ctx.storage_options)
        entries.append((pb.id, ids, load_deletions(ctx, pb)))
    return RowIdIndex.build(entries, path=ds.manifest_file.uri)


def take_addresses(ds, addresses, columns=None, with_row_id=False, with_row_address=False) -> pa.Table:
    """Rows at row addresses ``(fragment_id << 32) | offset``, in the order given."""
    addrs = np.ascontiguousarray(addresses, dtype=np.uint64).ravel()
    spec = ScanSpec.build(ds.schema, columns, None, with_row_id, with_row_address)
    frag_ids = (addrs >> np.uint64(32)).astype(np.int64)
    offsets = (addrs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    order = np.argsort(frag_ids, kind="stable")
    pieces = []
    for fid in np.unique(frag_ids):
        frag = ds.get_fragment(int(fid))
        if frag is None:
            raise InvalidArgumentError(f"row address refers to fragment {fid}, which version "
                                       f"{ds.version} does not have")
        sel = order[frag_ids[order] == fid]
        local = offsets[sel]
        if local.size and local.max() >= frag.physical_rows:
            raise InvalidArgumentError(f"row address beyond the {frag.physical_rows} rows of fragment {fid}")
        pieces.append(take_physical(ds._ctx, frag._pb, local, spec))
    if not pieces:
        return spec.output_schema(ds.schema).empty_table()
    table = pa.concat_tables(pieces)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return table.take(pa.array(inverse))


def take_row_ids(ds, row_ids, columns=None, with_row_id=False, with_row_address=False) -> pa.Table:
    """Rows by stable row id, in the order given; unknown or deleted ids are an error."""
    if not ds.has_stable_row_ids:
        # Without stable row ids a row's id is its address (as pylance reports ``_rowid``).
        return take_addresses(ds, row_ids, columns, with_row_id, with_row_address)
    addrs = ds._row_id_index.lookup(row_ids)
    missing = addrs == MISSING_ADDRESS
    if missing.any():
        bad = np.asarray(row_ids, dtype=np.uint64).ravel()[missing][:5].tolist()
        raise InvalidArgumentError(f"row id(s) {bad} are not live rows of version {ds.version}")
    return take_addresses(ds, addrs, columns, with_row_id, with_row_address)
