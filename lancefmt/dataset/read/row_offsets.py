"""``_rowoffset``: a row's position among the live rows of the whole dataset version (what
``take`` takes), computed from its row address: the live rows of the fragments before it plus
its rank among its own fragment's live rows."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .scan import live_counts, load_deletions

ROW_OFFSET = "_rowoffset"


class RowOffsets:
    """Maps row addresses of one snapshot to row offsets (deletion vectors read once)."""

    def __init__(self, ctx, pbs):
        self._ctx = ctx
        counts = live_counts(ctx, pbs)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.uint64)
        self._pbs = {pb.id: pb for pb in pbs}
        self._base = {pb.id: int(s) for pb, s in zip(pbs, starts)}
        self._deleted: dict[int, np.ndarray] = {}

    def _deletions(self, frag_id: int) -> np.ndarray:
        if frag_id not in self._deleted:
            dv = load_deletions(self._ctx, self._pbs[frag_id])
            self._deleted[frag_id] = np.sort(dv.offsets).astype(np.uint64) \
                if dv is not None and len(dv) else np.empty(0, np.uint64)
        return self._deleted[frag_id]

    def of(self, addresses) -> pa.Array:
        addrs = np.asarray(addresses, dtype=np.uint64)
        frags = (addrs >> np.uint64(32)).astype(np.int64)
        local = addrs & np.uint64(0xFFFFFFFF)
        out = np.empty(len(addrs), dtype=np.uint64)
        for fid in np.unique(frags):
            sel = frags == fid
            deleted = self._deletions(int(fid))
            before = np.searchsorted(deleted, local[sel]).astype(np.uint64)
            out[sel] = np.uint64(self._base[int(fid)]) + local[sel] - before
        return pa.array(out, pa.uint64())
