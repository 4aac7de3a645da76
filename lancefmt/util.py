"""pylance's ``lance.util`` names that code imports: ``KMeans`` (the k-means lancefmt trains
IVF centroids with) and ``validate_vector_index``."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .errors import InvalidArgumentError
from .index.vector.ivf import nearest_centroids
from .index.vector.kmeans import train_kmeans
from .index.vector.quantizers import normalize

_METRICS = {"l2": "l2", "euclidean": "l2", "dot": "dot", "cosine": "cosine"}


class KMeans:
    """A k-means model of float32 vectors (pylance's ``lance.util.KMeans``): ``fit`` trains
    it, ``predict`` gives each vector's cluster. Metrics: ``l2``, ``cosine``, ``dot``."""

    def __init__(self, k: int, metric_type: str = "l2", max_iters: int = 50, centroids=None):
        key = str(metric_type).lower()
        if key not in _METRICS:
            raise InvalidArgumentError(f"Invalid metric_type: {metric_type}")
        self.k = int(k)
        self._metric_type = _METRICS[key]
        self.max_iters = int(max_iters)
        self._centroids = None
        if centroids is not None:
            self._centroids = _matrix(self._fsl(centroids))

    def __repr__(self) -> str:
        return f"lance.KMeans(k={self.k}, metric_type={self._metric_type})"

    @property
    def centroids(self):
        """The centroids as a ``FixedShapeTensorArray`` (None before ``fit``)."""
        if self._centroids is None:
            return None
        c = self._centroids
        storage = pa.FixedSizeListArray.from_arrays(pa.array(c.ravel(), pa.float32()), c.shape[1])
        return pa.FixedShapeTensorArray.from_storage(pa.fixed_shape_tensor(pa.float32(), (c.shape[1],)),
                                                     storage)

    @staticmethod
    def _fsl(data) -> pa.FixedSizeListArray:
        if isinstance(data, pa.ChunkedArray):
            data = data.combine_chunks()
        if isinstance(data, pa.FixedShapeTensorArray):
            if len(data.type.shape) != 1:
                raise InvalidArgumentError(f"Fixed shape tensor array must be a 1-D array, got "
                                           f"{len(data.type.shape)}-D")
            return KMeans._fsl(data.storage)
        if isinstance(data, pa.FixedSizeListArray):
            if data.type.value_type != pa.float32():
                raise InvalidArgumentError(f"Array must be float32 type, got: {data.type.value_type}")
            return data
        if isinstance(data, np.ndarray):
            if data.ndim != 2:
                raise InvalidArgumentError(f"Numpy array must be a 2-D array, got {data.ndim}-D")
            if data.dtype != np.float32:
                raise InvalidArgumentError(f"Numpy array must be float32 type, got: {data.dtype}")
            return pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1), pa.float32()),
                                                     data.shape[1])
        raise InvalidArgumentError("Data must be a FixedSizeListArray, Tensor or numpy array")

    def _prepared(self, data) -> np.ndarray:
        x = _matrix(self._fsl(data))
        return normalize(x) if self._metric_type == "cosine" else x

    def fit(self, data) -> None:
        """Train on ``data`` (a 2-D float32 array, fixed-size lists or a 1-D tensor array)."""
        x = self._prepared(data)
        metric = "dot" if self._metric_type == "dot" else "l2"
        self._centroids, _ = train_kmeans(x, self.k, max_iters=self.max_iters, metric=metric)

    def predict(self, data) -> pa.UInt32Array:
        """Each vector's nearest centroid."""
        if self._centroids is None:
            raise InvalidArgumentError("KMeans must be trained (fit) before predict")
        metric = "dot" if self._metric_type == "dot" else "l2"
        labels, _ = nearest_centroids(self._prepared(data), self._centroids, metric)
        return pa.array(labels.astype(np.uint32), pa.uint32())


def _matrix(fsl: pa.FixedSizeListArray) -> np.ndarray:
    from .index.vector.distance import fsl_matrix
    return fsl_matrix(fsl, np.float32)[0]


def validate_vector_index(dataset, column: str, refine_factor: int = 5, sample_size=None,
                          pass_threshold: float = 1.0) -> None:
    """In-sample queries (``k=1``, ``nprobes=1``): each vector must find itself (distance
    below 1e-6) in at least ``pass_threshold`` of the cases, else ValueError (as pylance)."""
    data = dataset.to_table() if sample_size is None else dataset.sample(sample_size)
    vecs = data[column].to_numpy(zero_copy_only=False)
    passes, total = 0, len(vecs)
    for vec in vecs:
        if np.isnan(vec).any():
            total -= 1
            continue
        d = dataset.to_table(nearest={"column": column, "q": vec, "k": 1, "nprobes": 1,
                                      "refine_factor": refine_factor})["_distance"].to_pylist()[0]
        passes += 1 if abs(d) < 1e-6 else 0
    if total and passes / total < pass_threshold:
        raise InvalidArgumentError(f"Vector index failed sanity check, only {passes}/{total} passed")


__all__ = ["KMeans", "validate_vector_index"]
