"""``create_index`` for vector types (IVF_FLAT, IVF_PQ, IVF_SQ): arguments checked as pylance
checks them, then one segment built and committed as any index is (:mod:`.create`).

pylance's parameters are accepted under its names: ``num_partitions`` (or
``target_partition_size``), ``num_sub_vectors``, ``num_bits``, ``metric``, ``sample_rate``,
``max_iters``, ``ivf_centroids``, ``pq_codebook``; tuning knobs of its shuffle
(``shuffle_partition_batches``...) change nothing here. ``accelerator`` ("cuda", "cuda:N",
"mps" or a ``torch.device``) trains and assigns an IVF_PQ index with torch on that device
(:mod:`lancefmt.index.vector.accelerator`; the extra ``lancefmt[torch]``, else a
MissingDependencyError); other types are built on the CPU with a warning, as pylance does.
"""
from __future__ import annotations

import logging
import warnings

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError, NotSupportedError, UnsupportedColumnTypeError
from ...index.vector.accelerator import KINDS as ACCELERATED, device_for
from ...index.vector.vector_type import KINDS, VECTOR
from ..read.index_training import column_field
from .create import BuildRequest, create_from_request

LOGGER = logging.getLogger(__name__)
_METRICS = ("l2", "cosine", "euclidean", "dot", "hamming")


class VectorTypeNotSupported(NotSupportedError):
    """An index type pylance does not know (it raises NotImplementedError)."""


def check_vector_column(schema: pa.Schema, column: str, num_sub_vectors=None) -> tuple:
    """(field, path, dimension, element type) of a column a vector index can cover."""
    field, path = column_field(schema, column)
    t = field.type
    if isinstance(t, pa.FixedShapeTensorType) and len(t.shape) == 1:
        t = t.storage_type
    if pa.types.is_fixed_size_list(t):
        dim, elem = t.list_size, t.value_type
    elif pa.types.is_list(t) and pa.types.is_fixed_size_list(t.value_type):
        dim, elem = t.value_type.list_size, t.value_type.value_type   # multivector: every vector
    else:
        raise UnsupportedColumnTypeError(
            f"Vector column {column} must be FixedSizeListArray 1-dimensional "
            f"FixedShapeTensorArray, got {field.type}")
    if num_sub_vectors is not None and dim % int(num_sub_vectors):
        raise InvalidArgumentError(f"dimension ({dim}) must be divisible by num_sub_vectors "
                                   f"({num_sub_vectors})")
    if not (pa.types.is_floating(elem) or pa.types.is_uint8(elem)):
        raise UnsupportedColumnTypeError(f"Vector column {column} must have floating value type, "
                                         f"got {elem}")
    return field, path, dim, elem


def plan_vector_build(snapshot, column: str, index_type: str, name=None, metric="L2",
                      params=None) -> BuildRequest:
    params = dict(params or {})
    kind = str(index_type).upper()
    if kind not in KINDS:
        raise VectorTypeNotSupported(f"Only {list(KINDS)} index types supported. Got {index_type}")
    field, path, dim, elem = check_vector_column(snapshot.schema, column, params.get("num_sub_vectors"))
    if not isinstance(metric, str) or metric.lower() not in _METRICS:
        raise InvalidArgumentError(f"Metric {metric} not supported.")
    metric = "l2" if metric.lower() == "euclidean" else metric.lower()
    if (metric == "hamming") != bool(pa.types.is_uint8(elem)) or \
            (metric == "hamming" and kind != "IVF_FLAT"):
        raise InvalidArgumentError(f"Invalid user input: Unsupported training sample type "
                                   f"{_word(elem)} with metric {metric}")
    if params.get("accelerator") is not None:
        _accelerator(kind, params)
    nparts = params.get("num_partitions")
    if isinstance(nparts, float):
        warnings.warn("num_partitions is float, converting to int", stacklevel=4)
        params["num_partitions"] = int(nparts)
    elif nparts is not None and not isinstance(nparts, (int, np.integer)):
        raise UnsupportedColumnTypeError(f"num_partitions must be int, got {type(nparts)}")
    cents = params.get("ivf_centroids")
    if cents is not None and isinstance(cents, np.ndarray):
        if cents.ndim != 2:
            raise InvalidArgumentError(f"Ivf centroids must be 2D array: (clusters, dim), got {cents.shape}")
        if cents.shape[0] == 0:
            raise InvalidArgumentError(f"Ivf centroids must have at least one cluster, got {cents.shape}")
        if nparts is not None and cents.shape[0] != nparts:
            raise InvalidArgumentError(f"Ivf centroids has {cents.shape[0]} clusters, but "
                                       f"num_partitions={nparts}")
        if cents.dtype not in (np.float16, np.float32, np.float64):
            raise UnsupportedColumnTypeError(f"IVF centroids must be floating numbergot {cents.dtype}")
    if cents is None and params.get("pq_codebook") is not None:
        raise InvalidArgumentError("ivf_centroids must be specified when pq_codebook is provided")
    if "PQ" in kind and params.get("num_sub_vectors") is None:
        raise InvalidArgumentError("num_partitions and num_sub_vectors are required for IVF_PQ")
    params.update(index_type=kind, metric=metric)
    col = ".".join(path)
    if "index_file_version" in params:  # what a legacy index file records of itself
        params.update(_index_name=name or f"{col}_idx", _column=col, _dataset_version=snapshot.version)
    return BuildRequest(col, VECTOR, name or f"{col}_idx", params)


def _word(t) -> str:
    return {"halffloat": "Float16", "float": "Float32", "double": "Float64", "uint8": "UInt8"}.get(str(t), str(t))


def _accelerator(kind: str, params: dict) -> None:
    """Check ``accelerator`` before any work (a bad string, no torch, no such device); a type
    pylance does not accelerate drops it, with pylance's warning."""
    if kind not in ACCELERATED:
        LOGGER.warning("Index type %s does not support GPU acceleration; falling back to CPU", kind)
        params.pop("accelerator")
        return
    device_for(params["accelerator"])


def create_vector_index(snapshot, column, index_type, name=None, metric="L2", *, replace=False,
                        train=True, fragment_ids=None, index_uuid=None, **params):
    """Build and commit (or, with ``fragment_ids``, return uncommitted) a vector index."""
    req = plan_vector_build(snapshot, column, index_type, name, metric, params)
    return create_from_request(snapshot, req, replace=replace, train=train,
                               fragment_ids=fragment_ids, index_uuid=index_uuid)


def train_shared_model(snapshot, req: BuildRequest, *, seed: int = 20240601) -> dict:
    """Train the model of a distributed build once, on a sample of the column's live rows (read
    by random take, never the whole column): the parameters every segment then encodes with
    (``ivf_centroids`` and, by quantizer, ``pq_codebook`` or ``sq_bounds``)."""
    from ...index.vector.ivf_build import sample_size, train_model, vector_batches
    from ..read.scan import live_counts
    from ..read.take import take_rows

    params = dict(req.params)
    kind, metric = params["index_type"], params["metric"]
    total = int(live_counts(snapshot.ctx, snapshot.fragment_pbs()).sum())
    wanted = min(total, sample_size(kind, params, total))
    rng = np.random.default_rng(seed)
    picks = np.sort(rng.choice(total, wanted, replace=False)) if wanted < total else np.arange(total)
    field, path, _, _ = check_vector_column(snapshot.schema, req.column)
    table = take_rows(snapshot, picks, [path[0]])
    col = table.column(path[0])
    for name in path[1:]:
        import pyarrow.compute as pc
        col = pc.struct_field(col, [col.type.get_field_index(name)])
    batch = pa.record_batch({"value": col.combine_chunks(),
                             "_rowid": pa.array(np.arange(len(col), dtype=np.uint64))})
    mats = [m for m, _ in vector_batches([batch])]
    if not mats:
        raise InvalidArgumentError("no vectors to train the index on")
    from ...index.vector.quantizers import normalize
    sample = mats[0] if metric != "cosine" else normalize(mats[0])
    if metric != "hamming":
        sample = np.asarray(sample, np.float32)
    ivf, quantizer = train_model(kind, metric, sample, {**params, "seed": seed,
                                                        "_value_type": field.type.value_type},
                                 rows=total)
    out = {"ivf_centroids": ivf.centroids}
    extra = quantizer.params()
    if hasattr(quantizer, "codebook"):
        out["pq_codebook"] = quantizer.codebook.reshape(quantizer.m, quantizer.ncent, -1)
    if hasattr(quantizer, "start") and hasattr(quantizer, "end"):
        out["sq_bounds"] = (quantizer.start, quantizer.end)
    return {**extra, **out}
