"""Building the HNSW graphs of an IVF_HNSW_* segment and writing ``index.idx`` (the format is
described in :mod:`.hnsw`). Graphs are built from the full-precision vectors (so their quality
does not depend on the quantizer), one partition at a time per core on a thread pool, largest
first; the Cython kernel (:func:`._hnsw.build`) inserts every node without the GIL, so the
Python work is a constant per partition.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from . import _hnsw
from .distance import COSINE, DOT
from .ivf import IvfModel, each_in_parallel
from .layout import INDEX_FILE
from .quantizers import normalize, storage_metric

VECTOR_ID = "__vector_id"
NEIGHBORS = "__neighbors"
DISTANCE = "_distance"
DEFAULTS = {"m": 20, "ef_construction": 150, "max_level": 7}
PREFETCH = 2


def hnsw_params(params: dict) -> dict:
    out = {k: int(params.get(k) or v) for k, v in DEFAULTS.items()}
    if not 1 <= out["m"] <= 255 or out["ef_construction"] < 1 or not 1 <= out["max_level"] <= 64:
        raise InvalidArgumentError(f"bad HNSW parameters {out}")
    return out


def graph_schema() -> pa.Schema:
    return pa.schema([pa.field(VECTOR_ID, pa.uint32()),
                      pa.field(NEIGHBORS, pa.list_(pa.field("item", pa.uint32()))),
                      pa.field(DISTANCE, pa.list_(pa.field("item", pa.float32())))])


def build_graphs(vectors: np.ndarray, offsets, lengths, metric: str, params: dict, seed) -> list:
    """Per partition: (levels, entry point) of its graph (see :func:`._hnsw.build`)."""
    hp = hnsw_params(params)
    x = np.ascontiguousarray(normalize(vectors) if metric == COSINE else vectors, np.float32)
    kernel_metric = 1 if storage_metric(metric) == DOT else 0
    graphs = [None] * len(offsets)
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 1 << 31, len(offsets))
    # largest partitions first: a graph's cost grows faster than its rows
    work = sorted((i for i in range(len(offsets)) if lengths[i]), key=lambda i: -int(lengths[i]))

    def run(i):
        o, n = int(offsets[i]), int(lengths[i])
        levels = _hnsw.random_levels(n, hp["m"], hp["max_level"], int(seeds[i]))
        graphs[i] = _hnsw.build(x[o:o + n], kernel_metric, hp["m"], hp["ef_construction"],
                                hp["max_level"], levels)

    each_in_parallel(work, run)
    return graphs


def graph_table(graphs: list, hp: dict) -> tuple[pa.Table, list, np.ndarray]:
    """(index.idx rows, per-partition JSON metadata, per-partition row counts)."""
    ids, offs, nbrs, dists, meta, counts = [], [], [], [], [], []
    base = 0
    for g in graphs:
        level_offsets = [0]
        rows = 0
        entry = 0
        if g is not None:
            levels, entry = g
            for L, (members, offsets, nb, ds) in enumerate(levels):
                nodes = np.arange(members.size, dtype=np.uint32) if L == 0 else members
                ids.append(nodes)
                offs.append(offsets[1:] + base)
                nbrs.append(nb)
                dists.append(ds)
                base += int(offsets[-1])
                rows += members.size
                level_offsets.append(rows)
        level_offsets += [rows] * (hp["max_level"] + 1 - len(level_offsets))
        counts.append(rows)
        meta.append(json.dumps({"entry_point": int(entry), "params": {
            "max_level": hp["max_level"], "m": hp["m"], "ef_construction": hp["ef_construction"],
            "prefetch_distance": PREFETCH}, "level_offsets": level_offsets}, separators=(",", ":")))
    value_offsets = np.concatenate([[0]] + offs).astype(np.int32) if offs else np.zeros(1, np.int32)
    flat_n = np.concatenate(nbrs).astype(np.uint32) if nbrs else np.zeros(0, np.uint32)
    flat_d = np.concatenate(dists).astype(np.float32) if dists else np.zeros(0, np.float32)
    table = pa.Table.from_arrays([
        pa.array(np.concatenate(ids) if ids else np.zeros(0, np.uint32), pa.uint32()),
        pa.ListArray.from_arrays(pa.array(value_offsets), pa.array(flat_n, pa.uint32())),
        pa.ListArray.from_arrays(pa.array(value_offsets), pa.array(flat_d, pa.float32()))],
        schema=graph_schema())
    return table, meta, np.asarray(counts, np.int64)


def write_graphs(store, kind: str, metric: str, ivf, graphs: list, params: dict, dtype) -> None:
    """``index.idx`` of an HNSW segment (see module docstring)."""
    hp = hnsw_params(params)
    table, meta, counts = graph_table(graphs, hp)
    gmodel = IvfModel(ivf.centroids, np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
                      if counts.size else counts, counts)
    imeta = {"lance:index": json.dumps({"type": kind, "distance_type": metric}, separators=(",", ":")),
             "lance:ivf": "1", "lance:hnsw": json.dumps(meta, separators=(",", ":"))}
    store.write_table(INDEX_FILE, table, imeta, [gmodel.to_proto(centroids=True, dtype=dtype)])
