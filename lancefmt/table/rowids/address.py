"""Row addresses: ``(fragment_id << 32) | row_offset``, the physical position of a row.

Indices and scans with ``with_row_address`` use addresses; stable row ids map to them through
:class:`~lancefmt.table.rowids.index.RowIdIndex`.
"""
from __future__ import annotations

import numpy as np

#: Returned by :meth:`RowIdIndex.lookup` for ids that are absent or deleted. No real row has it:
#: it would need fragment id 2**32-1 *and* row offset 2**32-1 (a 2**32+1-row fragment).
MISSING_ADDRESS = np.uint64(0xFFFFFFFFFFFFFFFF)


def row_address(fragment_id: int, offset) -> np.ndarray | int:
    """Address of row ``offset`` (int or integer array) in fragment ``fragment_id``."""
    base = int(fragment_id) << 32
    if np.isscalar(offset):
        return base | int(offset)
    return np.uint64(base) | np.asarray(offset, dtype=np.uint64)


def fragment_addresses(fragment_id: int, num_rows: int) -> np.ndarray:
    """Addresses of rows ``0 .. num_rows`` of a fragment (the ``_rowaddr`` column)."""
    return np.arange(num_rows, dtype=np.uint64) | np.uint64(int(fragment_id) << 32)


def split_addresses(addresses) -> tuple[np.ndarray, np.ndarray]:
    """(fragment ids uint32, row offsets uint32) of uint64 addresses."""
    a = np.asarray(addresses, dtype=np.uint64)
    return (a >> np.uint64(32)).astype(np.uint32), (a & np.uint64(0xFFFFFFFF)).astype(np.uint32)
