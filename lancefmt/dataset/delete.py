"""``Dataset.delete(predicate)``: mark matching rows deleted, fragment by fragment.

For each fragment only the columns the predicate reads are scanned; the matching physical
offsets are added to the fragment's (cumulative) deletion vector and written as a new deletion
file (``.arrow`` or ``.bin`` by Lance's rule) in the dataset root. A fragment whose rows are all
deleted is dropped. One Delete transaction commits it; when a concurrent writer touched the
same fragments the delete is re-planned on the new version (Lance's ``conflict_retries``).
"""
from __future__ import annotations

import random
import secrets
import time

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, RetryableCommitConflictError
from ..table.deletion import DeletionVector, write_deletion_file
from ..table.fragment import FragmentMetadata
from ..table.transaction import Delete
from .scan import FragmentScan, ScanSpec

CONFLICT_RETRIES = 10


def _predicate_text(predicate) -> str:
    return predicate if isinstance(predicate, str) else str(predicate)


def _matching_offsets(scan: FragmentScan) -> np.ndarray:
    """Physical offsets of live rows matching the scan's filter."""
    parts = [t.column("_rowaddr").to_numpy() for t in scan.windows() if t.num_rows]
    if not parts:
        return np.empty(0, dtype=np.uint32)
    addrs = np.concatenate(parts)
    return (addrs & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def plan_delete(ds, predicate):
    """(updated fragments, deleted fragment ids, rows deleted) for deleting ``predicate``."""
    if predicate is None or (isinstance(predicate, str) and not predicate.strip()):
        raise InvalidArgumentError("delete needs a predicate (use 'true' to delete every row)")
    spec = ScanSpec.build(ds.schema, [], predicate, with_row_address=True)
    updated, removed, count = [], [], 0
    try:
        for frag in ds.get_fragments():
            scan = FragmentScan(ds._ctx, frag._pb, spec)
            hits = _matching_offsets(scan)
            if not hits.size:
                continue
            count += int(hits.size)
            old = scan.deletions or DeletionVector.empty()
            dv = old.extend(hits)
            if dv.deletes_all(frag.physical_rows):
                removed.append(frag.id)
                continue
            deletion = write_deletion_file(ds.uri, frag.id, ds.version, dv,
                                           storage_options=ds.storage_options,
                                           file_id=secrets.randbits(64))
            meta = FragmentMetadata.from_bytes(frag._pb.SerializeToString())
            meta.pb.deletion_file.CopyFrom(deletion)
            updated.append(meta)
    except BaseException:  # a later fragment failed: the deletion files written so far go
        _remove_deletion_files(ds, updated)
        raise
    return updated, removed, count


def delete_rows(ds, predicate, *, conflict_retries: int = CONFLICT_RETRIES):
    """Commit the delete on (a snapshot) ``ds``; returns (committed Dataset, rows deleted)."""
    from .dataset import Dataset

    text = _predicate_text(predicate)
    attempt = 0
    while True:
        updated, removed, count = plan_delete(ds, predicate)
        if not updated and not removed:
            return ds, 0
        try:
            return ds._commit(Delete(updated, removed, text)), count
        except RetryableCommitConflictError:
            _remove_deletion_files(ds, updated)
            attempt += 1
            if attempt > conflict_retries:
                raise
            time.sleep(min(1.0, 0.01 * 2 ** attempt) * (0.5 + random.random()))
            ds = Dataset.open(ds.uri, None, storage_options=ds.storage_options,
                              manifest_store=ds.manifest_store)
        except BaseException:
            _remove_deletion_files(ds, updated)
            raise


def _remove_deletion_files(ds, fragments) -> None:
    from .write import delete_files

    uris = []
    for f in fragments:
        from .fragment import Fragment

        uri = Fragment(ds._ctx, f.pb).deletion_file()
        if uri:
            uris.append(uri)
    delete_files(uris, ds.storage_options)
