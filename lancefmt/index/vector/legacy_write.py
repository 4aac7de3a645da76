"""Writing the legacy single-file IVF_PQ layout (``index_file_version="Legacy"``), read back by
:mod:`.legacy`: each partition's row-major PQ codes then its u64 row ids, the ``Index``
message (u32 length first), and the footer (its position, version 0.1, ``LANC``)."""
from __future__ import annotations

import struct

import numpy as np

from ..._proto import index_pb2
from ..core.store import IndexStore
from .distance import METRIC_CODES
from .layout import INDEX_FILE
from .tensor import to_tensor


def wants_legacy(params: dict) -> bool:
    v = params.get("index_file_version")
    return str(getattr(v, "value", v) or "").upper() == "LEGACY"


def write_legacy(store: IndexStore, metric: str, built, dtype) -> None:
    """``index.idx`` of an IVF_PQ ``built`` (rows in partition order, codes row-major)."""
    ivf, q = built.ivf, built.quantizer
    chunks, offsets, at = [], [], 0
    codes = np.ascontiguousarray(built.codes, np.uint8)
    ids = np.ascontiguousarray(built.row_ids, "<u8")
    for o, n in zip(ivf.offsets.tolist(), ivf.lengths.tolist()):
        offsets.append(at)
        if n:
            part = codes[o:o + n].tobytes() + ids[o:o + n].tobytes()
            chunks.append(part)
            at += len(part)
    msg = index_pb2.Index()
    msg.name = str(built.params.get("_index_name", ""))
    if built.params.get("_column"):
        msg.columns.append(str(built.params["_column"]))
    msg.dataset_version = int(built.params.get("_dataset_version", 0))
    vi = msg.vector_index
    vi.spec_version = 1
    vi.dimension = ivf.dim
    vi.metric_type = METRIC_CODES[metric]
    stage = vi.stages.add().ivf
    stage.offsets.extend(offsets)
    stage.lengths.extend(int(n) for n in ivf.lengths)
    stage.centroids_tensor.CopyFrom(to_tensor(ivf.centroids.astype(dtype)))
    if ivf.loss is not None:
        stage.loss = float(ivf.loss)
    pq = vi.stages.add().pq
    pq.num_bits, pq.num_sub_vectors, pq.dimension = q.num_bits, q.m, q.dim
    pq.codebook_tensor.CopyFrom(to_tensor(q.codebook.reshape(q.ncent, q.dim).astype(dtype)))
    body = msg.SerializeToString()
    data = b"".join(chunks) + struct.pack("<I", len(body)) + body + \
        struct.pack("<QHH4s", at, 0, 1, b"LANC")
    store.write_bytes(INDEX_FILE, data)
