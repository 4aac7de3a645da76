"""IVF_HNSW_FLAT, IVF_HNSW_SQ, IVF_HNSW_PQ: an HNSW graph per IVF partition, as pylance 14
writes them.

``auxiliary.idx`` is the quantizer's storage, exactly as for IVF_FLAT/SQ/PQ; a node of a
partition's graph is its row's position in that partition. ``index.idx`` holds the graphs:
partition after partition, level after level, one row per node of the level (level 0: every
node, in order; level l: the nodes having it, ascending) with ``__vector_id`` (the node),
``__neighbors`` and their ``_distance``. The IVF message in its global buffer gives each
partition's rows of ``index.idx``; ``lance:hnsw`` holds one JSON entry per partition:
``entry_point``, ``params`` (``max_level``, ``m``, ``ef_construction``,
``prefetch_distance``) and ``level_offsets`` (rows before each level, ``max_level + 1``
values).

:class:`HnswIndex` searches them (:func:`._hnsw.search`, without the GIL); building is
:mod:`.hnsw_build`.
"""
from __future__ import annotations

import json

import numpy as np

from ...errors import CorruptFileError, InvalidArgumentError
from . import _hnsw, _ivf
from .distance import COSINE, DOT
from .hnsw_build import NEIGHBORS, VECTOR_ID
from .ivf_index import IvfIndex, metadata_json
from .quantizers import ProductQuantizer, ScalarQuantizer, storage_metric

# a prefilter allowing fewer than ``n * FLAT_PERCENT // 100`` of a partition's n rows (integer
# division, as Lance's ``remained < len * 10 / 100``) makes pylance score them flat
FLAT_PERCENT = 10


# -- searching --------------------------------------------------------------------------------
class HnswIndex(IvfIndex):
    """An IVF segment whose partitions are searched through their HNSW graphs."""

    def attach_sub_index(self, reader, meta: dict, rows, path: str) -> None:
        entries = metadata_json(meta, "lance:hnsw", path)
        offsets, lengths = rows
        if not isinstance(entries, list) or len(entries) != self.ivf.num_partitions:
            raise CorruptFileError("lance:hnsw does not list every partition", path)
        if int(lengths.sum()) != reader.num_rows:
            raise CorruptFileError("graph rows do not add up to the file's rows", path)
        table = reader.read_all()
        vid = table.column(VECTOR_ID).combine_chunks()
        nb = table.column(NEIGHBORS).combine_chunks()
        node_ids = vid.to_numpy(zero_copy_only=False).astype(np.uint32)
        loffs = nb.offsets.to_numpy().astype(np.int64)
        values = nb.values.to_numpy(zero_copy_only=False).astype(np.uint32)
        if loffs.size != len(nb) + 1 or len(vid) != len(nb) or (loffs.size and (
                loffs[0] < 0 or loffs[-1] > values.size or (np.diff(loffs) < 0).any())):
            raise CorruptFileError("graph neighbour lists out of order or past their values", path)
        self.graphs = []
        self.hnsw_params = {}
        for p, raw in enumerate(entries):
            try:
                info = json.loads(raw) if isinstance(raw, str) else raw
                level_offsets = [int(v) for v in info["level_offsets"]]
                entry = int(info.get("entry_point", 0))
                self.hnsw_params = dict(info.get("params", {}))
            except (ValueError, KeyError, TypeError) as e:
                raise CorruptFileError(f"bad lance:hnsw entry {p} ({e})", path) from None
            start, count = int(offsets[p]), int(lengths[p])
            n = int(self.ivf.lengths[p])
            if n and not 0 <= entry < n:  # the search kernel takes a node of the partition
                raise CorruptFileError(f"partition {p}'s entry point {entry} is not one of its "
                                       f"{n} nodes", path)
            if any(b < a for a, b in zip(level_offsets, level_offsets[1:])) or \
                    (level_offsets and (level_offsets[0] != 0 or level_offsets[-1] != count)) or \
                    start + count > reader.num_rows:
                raise CorruptFileError(f"partition {p}'s graph levels do not match its rows", path)
            levels_o, levels_n, levels_nodes = [], [], []
            for L in range(len(level_offsets) - 1):
                a, b = start + level_offsets[L], start + level_offsets[L + 1]
                lo_v, hi_v = int(loffs[a]), int(loffs[b])
                levels_o.append(np.ascontiguousarray(loffs[a:b + 1] - lo_v))
                levels_n.append(np.ascontiguousarray(values[lo_v:hi_v]))
                ids = np.ascontiguousarray(node_ids[a:b])
                if L == 0 and ids.size == n and (ids == np.arange(n, dtype=np.uint32)).all():
                    ids = None
                elif ids.size > 1 and not (ids[1:] > ids[:-1]).all():
                    raise CorruptFileError(f"partition {p}'s level {L} nodes are not ascending", path)
                levels_nodes.append(ids)
            self.graphs.append(_hnsw.Graph(levels_o, levels_n, levels_nodes, entry, n) if n and
                               levels_o else None)

    def params(self) -> dict:
        out = super().params()
        for key in ("m", "ef_construction", "max_level"):
            if key in self.hnsw_params:
                out[key] = int(self.hnsw_params[key])
        return out

    def statistics(self) -> dict:
        out = super().statistics()
        out["sub_index"]["index_type"] = "HNSW"
        out["sub_index"]["params"] = dict(self.hnsw_params)
        return out

    def probe_partitions(self, p) -> None:
        q = self.quantizer
        offsets, lengths = self.ivf.offsets, self.ivf.lengths
        # pylance 14's default beam is k + k/2, k counting the refine factor (its answers for
        # k = 5, 10, 20 equal those of ef = 7, 15, 30 on 90 of 90 queries; ef = 40 on 12-43)
        ef = p.ef if p.ef else p.k + p.k // 2
        if ef < p.k:   # pylance refuses a beam narrower than k (times the refine factor)
            raise InvalidArgumentError("ef must be greater than or equal to k")
        smetric = storage_metric(self.metric)
        for part, start, n in p.partitions(offsets, lengths):
            g = self.graphs[part]
            if g is None:
                continue
            mask = p.mask[start:start + n] if p.use_mask else p.mask
            if p.use_mask and int(mask.sum()) < n * FLAT_PERCENT // 100:
                # few rows allowed: pylance scores them all instead of walking the graph
                self._flat_partition(p, part, start, n)
                continue
            kind, query, storage, table, scale = self._storage_view(part, start, n, p.query, smetric)
            kmetric = 1 if smetric == DOT or (kind == 0 and self.metric == COSINE) else 0
            nodes, dists = _hnsw.search(g, kind, kmetric, query, storage, table,
                                        scale, getattr(q, "m", 0), getattr(q, "num_bits", 8), ef,
                                        p.k, mask, p.use_mask, p.low, p.high)
            if nodes.size:
                p.found += min(p.k, _push(p.top, dists, self.row_ids[start + nodes.astype(np.int64)]))

    def _flat_partition(self, p, part, start, n) -> None:
        residual = self.quantizer.use_residual(self.metric)
        score = self.quantizer.scorer(self.stored, p.query, self.metric)
        pq = (p.query - self.ivf.centroids[part]).astype(np.float32) if residual else None
        d = score(start, n, pq)
        p.found += min(p.k, p.top.push(d, self.row_ids, start, p.mask, p.use_mask, p.low, p.high))

    def _storage_view(self, part, start, n, query, smetric):
        """(kind, query, storage, table, scale) for the kernel over one partition."""
        q = self.quantizer
        if isinstance(q, ScalarQuantizer) and smetric == DOT:
            step = np.array([(q.end - q.start) / 255.0, q.start], np.float32)
            return 3, np.ascontiguousarray(query, np.float32), \
                np.ascontiguousarray(self.stored[start:start + n]).reshape(-1), step, 0.0
        if isinstance(q, ScalarQuantizer):
            rng = np.float32(q.end - q.start)
            return 1, q.scale(np.asarray(query, np.float32)[None, :])[0], \
                np.ascontiguousarray(self.stored[start:start + n]).reshape(-1), None, \
                float(np.float32(rng * rng))
        if isinstance(q, ProductQuantizer):
            qq = (query - self.ivf.centroids[part]).astype(np.float32) if q.use_residual(self.metric) \
                else np.asarray(query, np.float32)
            table = np.empty(q.m * q.ncent, np.float32)
            _ivf.pq_table(np.ascontiguousarray(qq), q.codebook_t, q.m, q.ncent, smetric == DOT, table)
            w = q.width
            return 2, None, self.stored[start * w:(start + n) * w], table, 0.0
        vecs = np.ascontiguousarray(self.stored[start:start + n], np.float32)
        return 0, np.ascontiguousarray(query, np.float32), vecs, None, 0.0


_ONES = np.ones(1, np.uint8)


def _push(top, dists, ids) -> int:
    return top.push(np.ascontiguousarray(dists, np.float32), np.ascontiguousarray(ids, np.uint64),
                    0, _ONES[:0], False, -np.inf, np.inf)
