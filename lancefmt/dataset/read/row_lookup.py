"""Rows by stable row id (``Dataset.take_row_ids``) and by row address.

The row-id index (:class:`~lancefmt.table.rowids.RowIdIndex`) is built once per version (snapshot)
from the fragments' row-id sequences and deletion vectors; lookups are vectorised. Addresses
are then grouped by fragment and read with ``LanceFileReader.take``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from ...table.rowids import MISSING_ADDRESS, RowIdIndex, load_row_ids
from .scan import ScanSpec, load_deletions
from .take import take_physical


def row_id_index(snapshot) -> RowIdIndex:
    """The snapshot's row-id index, built once per version."""
    def build():
        ctx = snapshot.ctx
        entries = []
        for pb in snapshot.fragment_pbs():
            ids = load_row_ids(pb, ctx.uri, ctx.storage_options)
            entries.append((pb.id, ids, load_deletions(ctx, pb)))
        return RowIdIndex.build(entries, path=snapshot.manifest_file.uri)

    return snapshot.memo("row id index", build)


def take_addresses(snapshot, addresses, columns=None, with_row_id=False, with_row_address=False) -> pa.Table:
    """Rows at row addresses ``(fragment_id << 32) | offset``, in the order given."""
    addrs = np.ascontiguousarray(addresses, dtype=np.uint64).ravel()
    spec = ScanSpec.build(snapshot.schema, columns, None, with_row_id, with_row_address)
    frag_ids = (addrs >> np.uint64(32)).astype(np.int64)
    offsets = (addrs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    order = np.argsort(frag_ids, kind="stable")
    pieces = []
    for fid in np.unique(frag_ids):
        pb = snapshot.fragment_pb(int(fid))
        if pb is None:
            raise InvalidArgumentError(f"row address refers to fragment {fid}, which version "
                                       f"{snapshot.version} does not have")
        sel = order[frag_ids[order] == fid]
        local = offsets[sel]
        if local.size and local.max() >= pb.physical_rows:
            raise InvalidArgumentError(f"row address beyond the {pb.physical_rows} rows of fragment {fid}")
        pieces.append(take_physical(snapshot.ctx, pb, local, spec))
    if not pieces:
        return spec.output_schema(snapshot.schema).empty_table()
    table = pa.concat_tables(pieces)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return table.take(pa.array(inverse))


def take_row_ids(snapshot, row_ids, columns=None, with_row_id=False, with_row_address=False) -> pa.Table:
    """Rows by stable row id, in the order given; unknown or deleted ids are an error."""
    if not snapshot.has_stable_row_ids:
        # Without stable row ids a row's id is its address (as pylance reports ``_rowid``).
        return take_addresses(snapshot, row_ids, columns, with_row_id, with_row_address)
    addrs = row_id_index(snapshot).lookup(row_ids)
    missing = addrs == MISSING_ADDRESS
    if missing.any():
        bad = np.asarray(row_ids, dtype=np.uint64).ravel()[missing][:5].tolist()
        raise InvalidArgumentError(f"row id(s) {bad} are not live rows of version {snapshot.version}")
    return take_addresses(snapshot, addrs, columns, with_row_id, with_row_address)
