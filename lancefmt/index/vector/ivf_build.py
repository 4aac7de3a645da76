"""Building an IVF index segment (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ) as pylance 14 writes it.

1. a random sample of the column (``sample_rate`` rows per partition, null vectors left out;
   normalized for cosine) trains the IVF centroids by k-means, unless ``ivf_centroids`` are
   given; the quantizer is trained on its own sample (PQ on residuals for L2 and cosine);
2. every vector is assigned to its nearest centroid and encoded, block by block (BLAS);
3. rows are ordered by partition (row ids ascending inside one) and written: ``auxiliary.idx``
   (row ids and codes, PQ codes transposed per partition) and ``index.idx`` (the FLAT
   sub-index: no rows, the centroids in the IVF global buffer; or each partition's HNSW
   graph, :mod:`.hnsw_build`).

:func:`write_segment` is the last step alone: an update or a remap re-writes stored rows
with the same model.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from ..core.store import IndexStore
from .distance import COSINE, DOT, HAMMING, L2, fsl_matrix
from .ivf import IvfModel, nearest_centroids
from .hnsw_build import build_graphs, write_graphs
from .layout import AUX_FILE, FLAT_MARKER, INDEX_FILE, ROW_ID
from .legacy_write import wants_legacy, write_legacy
from .kmeans import sample_rows, train_kmeans
from .quantizers import FlatQuantizer, ProductQuantizer, ScalarQuantizer, normalize
from .rabitq import RabitQuantizer, encode_rows, rows_table

# rows per partition pylance aims at when num_partitions is not given
TARGET_PARTITION_SIZE = {"IVF_FLAT": 4096, "IVF_PQ": 8192, "IVF_SQ": 8192, "IVF_RQ": 4096,
                         "IVF_HNSW_FLAT": 1 << 20, "IVF_HNSW_SQ": 1 << 20, "IVF_HNSW_PQ": 1 << 20}
MAX_PARTITIONS = 4096
ENCODE_BLOCK = 1 << 16


def num_partitions_for(kind: str, rows: int, target: int | None) -> int:
    target = int(target) if target else TARGET_PARTITION_SIZE.get(kind, 8192)
    return min(max(1, rows // target), MAX_PARTITIONS)


def vector_batches(batches, value="value", row_id=ROW_ID):
    """(vectors matrix, row ids) per batch, null vectors (and rows holding NaN) dropped."""
    for b in batches:
        col = b.column(value)
        if not len(col):
            continue
        ids = b.column(row_id).to_numpy()
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            # a multivector column: every vector of a row is indexed under the row's id
            lists = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            offsets = lists.offsets.to_numpy().astype(np.int64)
            counts = np.diff(offsets)
            if lists.null_count:
                counts = np.where(lists.is_valid().to_numpy(zero_copy_only=False), counts, 0)
            ids = np.repeat(ids, counts)
            flat = lists.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
            if lists.null_count:  # a null list's slots (if any) hold no vector
                valid_row = np.repeat(lists.is_valid().to_numpy(zero_copy_only=False), np.diff(offsets))
                flat = flat.filter(pa.array(valid_row))
            col = flat
        mat, valid = fsl_matrix(col)
        keep = np.ones(mat.shape[0], bool) if valid is None else valid.copy()
        if mat.dtype.kind == "f":  # row sums find the few rows to check (NaN or inf)
            odd = np.flatnonzero(~np.isfinite(mat.sum(axis=1)))
            if odd.size:
                keep[odd] &= ~np.isnan(mat[odd]).any(axis=1)
        if not keep.all():
            mat, ids = mat[keep], ids[keep]
        if mat.shape[0]:
            yield mat, ids


def centroids_array(centroids, dim: int) -> np.ndarray:
    """User ``ivf_centroids`` (numpy ``k x dim``, fixed-size lists, or a record batch of them)."""
    if isinstance(centroids, pa.RecordBatch):
        centroids = centroids.column(0)
    if isinstance(centroids, (pa.Array, pa.ChunkedArray)):
        if isinstance(centroids.type, pa.FixedShapeTensorType):
            centroids = centroids.storage
        centroids = fsl_matrix(centroids)[0]
    a = np.asarray(centroids)
    if a.ndim != 2 or a.shape[1] != dim or a.shape[0] == 0:
        raise InvalidArgumentError(f"Ivf centroids must be 2D array: (clusters, {dim}), got {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float32)


def sample_size(kind: str, params: dict, rows: int) -> int:
    """Rows a model is trained on: ``sample_rate`` per partition for the centroids (and per PQ
    centroid for the codebook), as pylance samples."""
    rate = int(params.get("sample_rate", 256))
    nparts = params.get("num_partitions")
    nparts = int(nparts) if nparts else num_partitions_for(kind, rows, params.get("target_partition_size"))
    bits = int(params.get("num_bits", 8))
    return max(nparts * rate, (rate << bits) if ("PQ" in kind or "SQ" in kind) else 0)


class Built:
    """What a build produced: model, quantizer, and the rows in storage order (``vectors``:
    the full-precision vectors in that order, which HNSW graphs are built from)."""

    def __init__(self, ivf: IvfModel, quantizer, row_ids: np.ndarray, codes: np.ndarray,
                 value_type: pa.DataType, vectors: np.ndarray | None = None, params=None):
        self.ivf = ivf
        self.quantizer = quantizer
        self.row_ids = row_ids
        self.codes = codes            # row-major (n x width), partition order
        self.value_type = value_type
        self.vectors = vectors
        self.params = dict(params or {})


def train_model(kind: str, metric: str, sample: np.ndarray, params: dict, *, rows: int):
    """(IvfModel, quantizer) trained on ``sample`` (already normalized for cosine)."""
    dim = sample.shape[1]
    given = params.get("ivf_centroids")
    loss = None
    if given is not None:
        cents = centroids_array(given, dim)
        if metric == HAMMING:
            cents = cents.astype(np.uint8)
    else:
        nparts = params.get("num_partitions")
        nparts = int(nparts) if nparts else num_partitions_for(kind, rows, params.get("target_partition_size"))
        if nparts > sample.shape[0]:
            raise InvalidArgumentError(
                f"KMeans: can not train {nparts} centroids with {sample.shape[0]} vectors, "
                f"choose a smaller K (< {sample.shape[0]}) instead")
        rate = int(params.get("sample_rate", 256))
        idx = sample_rows(sample.shape[0], nparts * rate, params.get("seed"))
        train = sample if idx is None else sample[idx]
        km = {DOT: DOT, HAMMING: HAMMING}.get(metric, L2)
        cents, loss = train_kmeans(train, nparts, max_iters=int(params.get("max_iters", 50)),
                                   metric=km, seed=params.get("seed"))
    ivf = IvfModel(cents, loss=loss if given is None else None)
    return ivf, train_quantizer(kind, metric, ivf, sample, params)


def train_quantizer(kind: str, metric: str, ivf: IvfModel, sample: np.ndarray, params: dict):
    dim = sample.shape[1]
    if kind.endswith("_FLAT"):
        return FlatQuantizer(dim, params.get("_value_type", pa.float32()))
    rate = int(params.get("sample_rate", 256))
    if kind.endswith("_SQ"):
        bits = int(params.get("num_bits", 8))
        if params.get("sq_bounds") is not None:
            lo, hi = params["sq_bounds"]
            return ScalarQuantizer(dim, bits, lo, hi)
        idx = sample_rows(sample.shape[0], rate * (1 << bits), params.get("seed"))
        return ScalarQuantizer.train(sample if idx is None else sample[idx], bits)
    if kind.endswith("_PQ"):
        m = params.get("num_sub_vectors")
        if m is None:
            raise InvalidArgumentError("num_partitions and num_sub_vectors are required for IVF_PQ")
        bits = int(params.get("num_bits", 8))
        ProductQuantizer.check(dim, int(m), bits)
        book = params.get("pq_codebook")
        if book is not None:
            return ProductQuantizer.train(sample, int(m), bits, codebook=book)
        idx = sample_rows(sample.shape[0], rate * (1 << bits), params.get("seed"))
        train = sample if idx is None else sample[idx]
        if metric in (L2, COSINE):
            labels, _ = nearest_centroids(train, ivf.centroids, L2)
            train = (train - ivf.centroids[labels]).astype(np.float32)
        return ProductQuantizer.train(train, int(m), bits, max_iters=int(params.get("max_iters", 50)),
                                      seed=params.get("seed"))
    if kind == "IVF_RQ":
        if metric not in (L2, COSINE, DOT):
            raise InvalidArgumentError(f"lancefmt builds IVF_RQ for l2, cosine and dot, not {metric}")
        return RabitQuantizer.train(dim, int(params.get("num_bits", 5)), params.get("seed"),
                                    params.get("rq_signs"))
    raise InvalidArgumentError(f"lancefmt cannot build {kind} indices yet")


def encode_all(ivf: IvfModel, quantizer, metric: str, parts) -> tuple:
    """(partition ids, row ids, row-major codes) of every (vectors, ids) part. Given centroids
    get a loss too: the sum of every vector's distance to its centroid."""
    labels, ids, codes = [], [], []
    loss = 0.0
    for mat, rid in blocks(parts, ENCODE_BLOCK):
        for s in range(0, mat.shape[0], ENCODE_BLOCK):
            x = mat[s:s + ENCODE_BLOCK]
            xf = normalize(x) if metric == COSINE else x
            lab, dist = nearest_centroids(xf, ivf.centroids, {DOT: DOT, HAMMING: HAMMING}.get(metric, L2))
            loss += float(dist.astype(np.float64).sum())
            if isinstance(quantizer, ProductQuantizer):
                if quantizer.use_residual(metric):
                    y = np.subtract(xf, ivf.centroids[lab], dtype=np.float32)
                else:
                    y = np.asarray(xf, np.float32)
                c = quantizer.pack(quantizer.codes(y))
            elif isinstance(quantizer, ScalarQuantizer):
                c = quantizer.scale(xf)
            elif isinstance(quantizer, RabitQuantizer):
                y = np.asarray(xf, np.float32)
                c = encode_rows(quantizer, y - ivf.centroids[lab], quantizer.rotated(ivf.centroids)[lab],
                                metric)
            else:
                c = np.asarray(xf if metric == COSINE else x)
            labels.append(lab)
            ids.append(rid[s:s + ENCODE_BLOCK])
            codes.append(c)
    if not labels:
        width = quantizer.width if isinstance(quantizer, ProductQuantizer) else \
            quantizer.row_width if isinstance(quantizer, RabitQuantizer) else quantizer.dim
        dtype = np.uint8 if not isinstance(quantizer, FlatQuantizer) else np.float32
        return np.empty(0, np.int64), np.empty(0, np.uint64), np.empty((0, width), dtype)
    if ivf.loss is None:
        ivf.loss = loss
    return np.concatenate(labels), np.concatenate(ids).astype(np.uint64), np.concatenate(codes)


def blocks(parts, rows: int):
    """The (vectors, ids) parts regrouped into blocks of about ``rows`` rows (a scan's small
    batches joined: each block is split over the threads, which short batches are not)."""
    pending, n = [], 0
    for mat, rid in parts:
        pending.append((mat, rid))
        n += mat.shape[0]
        if n >= rows:
            yield _joined(pending)
            pending, n = [], 0
    if pending:
        yield _joined(pending)


def _joined(pending):
    if len(pending) == 1:
        return pending[0]
    return np.concatenate([m for m, _ in pending]), np.concatenate([r for _, r in pending])


def arrange(ivf: IvfModel, labels, ids, codes, vectors=None):
    """Rows ordered by (partition, row id); sets the model's offsets and lengths. Returns
    (row ids, codes, vectors or None) in that order."""
    order = np.lexsort((ids, labels))
    lengths = np.bincount(labels, minlength=ivf.num_partitions).astype(np.int64)
    ivf.lengths = lengths
    ivf.offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return ids[order], codes[order], (None if vectors is None else vectors[order])


DEFAULT_SEED = 20240601


def build(kind: str, metric: str, data, params: dict, *, train=None, encode=None) -> Built:
    """Train and encode ``data`` (a TrainingData); see module docstring. Sampling and k-means
    are seeded (``seed``, fixed by default), so the same data builds the same index.
    ``train``/``encode`` replace :func:`train_model`/:func:`encode_all` (the accelerator's
    versions, :mod:`.accelerator`); every other step is this one."""
    train, encode = train or train_model, encode or encode_all
    params = {**params, "seed": params.get("seed", DEFAULT_SEED)}
    if metric == HAMMING and not kind.endswith("_FLAT"):
        raise InvalidArgumentError(f"{kind} does not support hamming distance")
    value_type = data.field.type.value_type
    if pa.types.is_fixed_size_list(value_type):  # multivector: lists of vectors
        value_type = value_type.value_type
    parts = list(vector_batches(data.batches()))
    rows = sum(m.shape[0] for m, _ in parts)
    if not rows:
        raise InvalidArgumentError("no vectors to train the index on")
    everything = np.concatenate([m for m, _ in parts]) if len(parts) > 1 else parts[0][0]
    sample = everything if metric != COSINE else normalize(everything)
    if metric != HAMMING:
        sample = np.asarray(sample, np.float32)
    ivf, quantizer = train(kind, metric, sample, {**params, "_value_type": value_type}, rows=rows)
    if len(parts) > 1:  # blocks of the joined matrix are views: no second copy of the rows
        parts = [(everything, np.concatenate([r for _, r in parts]))]
    labels, ids, codes = encode(ivf, quantizer, metric, parts)
    graph_input = everything if "HNSW" in kind else None
    ids, codes, vectors = arrange(ivf, labels, ids, codes, graph_input)
    return Built(ivf, quantizer, ids, codes, value_type, vectors, params)


def write_segment(store: IndexStore, kind: str, metric: str, built: Built) -> None:
    """``auxiliary.idx`` and ``index.idx`` of ``built`` (see module docstring)."""
    q = built.quantizer
    ivf = built.ivf
    dim = ivf.dim
    if kind == "IVF_PQ" and wants_legacy(built.params):
        write_legacy(store, metric, built, model_dtype(built.value_type, metric))
        return
    dt = model_dtype(built.value_type, metric)
    if isinstance(q, RabitQuantizer):
        table = rows_table(q, built.row_ids, built.codes, ivf.offsets, ivf.lengths)
        meta = {"distance_type": metric, "lance:ivf": "1",
                "storage_metadata": json.dumps([q.storage_metadata()], separators=(",", ":"))}
        store.write_table(AUX_FILE, table, meta, [ivf.to_proto(centroids=False)])
        write_flat_index(store, kind, metric, ivf, dt)
        return
    if isinstance(q, ProductQuantizer):
        stored = q.transpose(built.codes, ivf.offsets, ivf.lengths)
        codes = pa.FixedSizeListArray.from_arrays(pa.array(stored, pa.uint8()), q.width)
    elif isinstance(q, ScalarQuantizer):
        codes = pa.FixedSizeListArray.from_arrays(pa.array(built.codes.ravel(), pa.uint8()), dim)
    else:
        values = np.ascontiguousarray(built.codes).ravel().astype(model_dtype(built.value_type, metric))
        codes = pa.FixedSizeListArray.from_arrays(pa.array(values, built.value_type), dim)
    field = q.field(built.value_type, dim)
    schema = pa.schema([pa.field(ROW_ID, pa.uint64()), field])
    table = pa.Table.from_arrays([pa.array(built.row_ids, pa.uint64()), codes], schema=schema)
    buffers = [ivf.to_proto(centroids=False)] + q.global_buffers(dt)
    meta = {"distance_type": metric, "lance:ivf": "1",
            "storage_metadata": json.dumps([q.storage_metadata(2)], separators=(",", ":"))}
    store.write_table(AUX_FILE, table, meta, buffers)
    if "HNSW" in kind:
        vectors = built.vectors if built.vectors is not None else \
            q.decode(built.codes, ivf, metric)
        graphs = build_graphs(vectors, ivf.offsets, ivf.lengths, metric, built.params,
                              built.params.get("seed", DEFAULT_SEED))
        write_graphs(store, kind, metric, ivf, graphs, built.params, dt)
        return
    write_flat_index(store, kind, metric, ivf, dt)


def write_flat_index(store: IndexStore, kind: str, metric: str, ivf: IvfModel, dt) -> None:
    """``index.idx`` of a FLAT sub-index: no rows, the centroids in the IVF buffer."""
    marker = pa.schema([pa.field(FLAT_MARKER, pa.uint64(), nullable=False)])
    imeta = {"lance:index": json.dumps({"type": kind, "distance_type": metric}, separators=(",", ":")),
             "lance:ivf": "1",
             "lance:flat": json.dumps([""] * ivf.num_partitions, separators=(",", ":"))}
    store.write_table(INDEX_FILE, marker.empty_table(), imeta,
                      [ivf.to_proto(centroids=True, partitions=False, dtype=dt)])


def model_dtype(value_type: pa.DataType, metric: str):
    """The type pylance keeps centroids and codebooks in: the vectors' own type."""
    if pa.types.is_uint8(value_type):
        return np.uint8
    return {"halffloat": np.float16, "double": np.float64}.get(str(value_type), np.float32)
