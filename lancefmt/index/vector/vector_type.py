"""The vector index types in the registry: one :class:`VectorIndexType` for every IVF kind.

pylance 14 writes every vector segment with ``/lance.index.pb.VectorIndexDetails`` details:
the metric, ``target_partition_size`` when given, the quantizer's parameters (``pq``, ``sq``,
``rq`` or ``flat``), HNSW's (``hnsw``) and build hints as strings. The kind
(``IVF_PQ``...) follows from those, so ``list_indices`` names it without opening a file.
Vector segments record stable row ids on datasets that have them (``index_version`` 1).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._proto import index_pb2
from ...errors import CorruptFileError, InvalidArgumentError
from ..core.registry import IndexType, TrainingData, register
from ..core.store import IndexStore
from .accelerator import KINDS as ACCELERATED, build as build_on_accelerator
from .distance import METRIC_CODES, metric_from_code, parse_metric
from .ivf_build import build, write_segment
from .hnsw import HnswIndex
from .hnsw_build import VECTOR_ID, hnsw_params
from .ivf import IvfModel
from .ivf_build import Built, arrange, write_segment
from .ivf_index import IvfIndex
from .layout import INDEX_FILE
from .legacy import load_legacy, read_legacy

KINDS = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ", "IVF_RQ")
BUILT = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ", "IVF_RQ")
READ = BUILT
DETAILS_URL = "/lance.index.pb.VectorIndexDetails"


def kind_of(details: index_pb2.VectorIndexDetails) -> str:
    q = details.WhichOneof("quantization")
    hnsw = details.HasField("hnsw")
    base = {"pq": "PQ", "sq": "SQ", "rq": "RQ", "flat": "FLAT", None: "PQ"}[q]
    return f"IVF_HNSW_{base}" if hnsw else f"IVF_{base}"


def make_details(kind: str, metric: str, params: dict) -> index_pb2.VectorIndexDetails:
    d = index_pb2.VectorIndexDetails()
    d.metric_type = METRIC_CODES[metric]
    if params.get("target_partition_size") and params.get("num_partitions") is None:
        d.target_partition_size = int(params["target_partition_size"])
    hints = {"lance.ivf.sample_rate": str(int(params.get("sample_rate", 256))),
             "lance.ivf.max_iters": str(int(params.get("max_iters", 50))),
             "lance.ivf.shuffle_partition_batches": "10240",
             "lance.ivf.shuffle_partition_concurrency": "2", "lance.skip_transpose": "false"}
    if kind.endswith("_PQ"):
        d.pq.num_bits = int(params.get("num_bits", 8))
        d.pq.num_sub_vectors = int(params["num_sub_vectors"])
        hints.update({"lance.pq.sample_rate": str(int(params.get("sample_rate", 256))),
                      "lance.pq.max_iters": str(int(params.get("max_iters", 50))),
                      "lance.pq.kmeans_redos": "1"})
    elif kind.endswith("_SQ"):
        d.sq.num_bits = int(params.get("num_bits", 8))
        hints["lance.sq.sample_rate"] = str(int(params.get("sample_rate", 256)))
    elif kind.endswith("_RQ"):
        d.rq.num_bits = int(params.get("num_bits", 5))
    else:
        d.flat.SetInParent()
    if "HNSW" in kind:
        hp = hnsw_params(params)
        d.hnsw.m, d.hnsw.ef_construction, d.hnsw.max_level = hp["m"], hp["ef_construction"], hp["max_level"]
        hints["lance.hnsw.prefetch_distance"] = "2"
    for k, v in hints.items():
        d.runtime_hints[k] = v
    return d


class VectorIndexType(IndexType):
    name = "IVF_PQ"
    aliases = tuple(k for k in KINDS if k != "IVF_PQ")
    type_name = "Vector"
    details_type_url = DETAILS_URL
    details_class = index_pb2.VectorIndexDetails
    index_version = 1
    queries = ()
    exact = False
    vector = True
    model_params = ("ivf_centroids", "pq_codebook", "sq_bounds", "rq_signs")

    def type_name_for(self, details) -> str:
        return kind_of(self.unpack_details(details))

    def supports(self, details) -> bool:
        return self.type_name_for(details) in READ

    def index_version_for(self, stable_row_ids: bool, params: dict | None = None) -> int:
        return 1

    def check_field(self, field: pa.Field) -> None:
        t = field.type
        if isinstance(t, pa.FixedShapeTensorType):
            t = t.storage_type
        if not pa.types.is_fixed_size_list(t):
            from ...errors import UnsupportedColumnTypeError
            raise UnsupportedColumnTypeError(
                f"Vector column {field.name} must be FixedSizeListArray 1-dimensional "
                f"FixedShapeTensorArray, got {field.type}")

    def metric_of(self, details) -> str:
        msg = self.unpack_details(details)
        return metric_from_code(int(msg.metric_type)) if msg is not None else "l2"

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        kind = str(params.get("index_type", "IVF_PQ")).upper()
        if kind not in BUILT:
            raise InvalidArgumentError(f"lancefmt does not build {kind} indices yet")
        metric = parse_metric(params.get("metric", "l2"))
        if params.get("accelerator") is not None and kind in ACCELERATED:
            built = build_on_accelerator(kind, metric, data, params)
        else:
            built = build(kind, metric, data, params)
        write_segment(store, kind, metric, built)
        return make_details(kind, metric, params)

    def merge(self, segments: list, dest: IndexStore):
        """One segment of every segment's rows (their fragments are disjoint), written without
        reading the dataset; the segments must share their model (centroids, codebook or
        bounds), as segments built with the same ``ivf_centroids`` (and ``pq_codebook``) do.
        NotImplementedError otherwise: the caller rebuilds from the data."""
        first = segments[0]
        if not all(_same_model(first, s) for s in segments[1:]):
            raise NotImplementedError("vector segments trained separately cannot be merged")
        parts = [s.rows() for s in segments]
        labels = np.concatenate([p[0] for p in parts])
        ids = np.concatenate([p[1] for p in parts])
        codes = np.concatenate([p[2] for p in parts])
        ivf = IvfModel(first.ivf.centroids, loss=first.ivf.loss)
        out_ids, out_codes, _ = arrange(ivf, labels, ids, codes)
        write_segment(dest, first.kind, first.metric,
                      Built(ivf, first.quantizer, out_ids, out_codes, first.value_type,
                            params=first.params()))
        return first.details

    def load(self, store: IndexStore, details) -> IvfIndex:
        try:
            # HNSW graphs come with their "lance:hnsw" levels; pylance's merge of distributed
            # segments writes a FLAT sub-index with the graph's (empty) columns but no levels
            reader = store.reader(INDEX_FILE)
            graph = VECTOR_ID in reader.schema.names and "lance:hnsw" in reader.schema_metadata
        except CorruptFileError:
            legacy = read_legacy(store)  # not a Lance file: a legacy index file, or corrupt
            if legacy is None:
                raise
            return load_legacy(store, *legacy, details)
        return (HnswIndex if graph else IvfIndex).load(store, details)


VECTOR = register(VectorIndexType())


def is_vector(itype) -> bool:
    return getattr(itype, "vector", False)


def _same_model(a, b) -> bool:
    """Whether two loaded segments encode with the same model."""
    if (a.kind, a.metric, type(a.quantizer)) != (b.kind, b.metric, type(b.quantizer)):
        return False
    if not np.array_equal(a.ivf.centroids, b.ivf.centroids):
        return False
    pa_, pb_ = a.params(), b.params()
    for key in ("pq_codebook", "sq_bounds", "num_sub_vectors", "num_bits", "rq_signs"):
        if key in pa_ or key in pb_:
            if not np.array_equal(np.asarray(pa_.get(key)), np.asarray(pb_.get(key))):
                return False
    return True
