"""Distance types and brute-force distances, as Lance defines them.

``l2`` is the squared Euclidean distance, ``cosine`` is ``1 - cos``, ``dot`` is ``1 - x.y``
and ``hamming`` counts differing bits (uint8 vectors only). Distances are float32 whatever the
vectors' type; they come from the Cython kernels in :mod:`._distance`, which add in Lance's
order so the values equal pylance's. Arrow vector columns (fixed-size lists, with nulls, or
lists of them for multivectors) become numpy matrices without copying where Arrow allows.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from . import _distance

L2, COSINE, DOT, HAMMING = "l2", "cosine", "dot", "hamming"
METRICS = (L2, COSINE, DOT, HAMMING)
_ALIASES = {"l2": L2, "euclidean": L2, "cosine": COSINE, "dot": DOT, "hamming": HAMMING}
_KIND = {L2: 0, COSINE: 1, DOT: 2, HAMMING: 3}
# VectorMetricType in Lance's protos
METRIC_CODES = {L2: 0, COSINE: 1, DOT: 2, HAMMING: 3}


class MetricError(InvalidArgumentError):
    """A distance type Lance does not know, or one the vectors' type cannot use (ValueError
    in pylance)."""


def parse_metric(name) -> str:
    """The canonical name of ``name`` (any case; ``euclidean`` is ``l2``)."""
    key = str(name).lower()
    if key not in _ALIASES:
        raise MetricError(f"Invalid argument error: Metric type '{name}' is not supported")
    return _ALIASES[key]


def metric_from_code(code: int) -> str:
    for name, c in METRIC_CODES.items():
        if c == code:
            return name
    raise InvalidArgumentError(f"unknown vector metric code {code}")


def default_metric(value_type: pa.DataType) -> str:
    """Lance's default for vectors of ``value_type``: hamming for uint8, else l2."""
    return HAMMING if pa.types.is_uint8(value_type) else L2


def check_metric(metric: str, value_type: pa.DataType) -> None:
    """Refuse a metric the vectors' element type cannot use, as pylance does: hamming is for
    uint8 vectors and uint8 vectors take nothing else."""
    if (metric == HAMMING) != bool(pa.types.is_uint8(value_type)):
        raise MetricError(f"Invalid user input: Distance type hamming does not support "
                          f"{_type_word(value_type)} vectors")


def _type_word(t: pa.DataType) -> str:
    return {"halffloat": "Float16", "float": "Float32", "double": "Float64",
            "uint8": "UInt8"}.get(str(t), str(t))


def compute_dtype(value_type: pa.DataType):
    """The numpy type distances are computed in for vectors of ``value_type``."""
    if pa.types.is_uint8(value_type):
        return np.uint8
    if pa.types.is_float64(value_type):
        return np.float64
    return np.float32  # float32, float16 (widened), other integers


def as_query(q, value_type: pa.DataType) -> np.ndarray:
    """One query vector in the computing type of ``value_type``."""
    dtype = compute_dtype(value_type)
    a = np.asarray(q)
    if pa.types.is_float16(value_type):  # pylance casts the query to the column's type
        a = a.astype(np.float16)
    if dtype is np.uint8 and a.dtype != np.uint8:  # a float query is truncated, as in Rust
        a = np.clip(np.nan_to_num(a.astype(np.float64)), 0, 255)
    return np.ascontiguousarray(a, dtype=dtype).ravel()


def fsl_matrix(arr, dtype=None) -> tuple[np.ndarray, np.ndarray | None]:
    """(rows x dim matrix, validity mask or None) of a fixed-size-list array (or chunked)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    dim = arr.type.list_size
    n = len(arr)
    # the child array ignores the parent's slice: take this slice's rows (null rows included)
    values = arr.values.slice(arr.offset * dim, n * dim)
    if values.null_count:
        values = values.fill_null(0)
    mat = values.to_numpy(zero_copy_only=False).reshape(n, dim) if dim else np.zeros((n, 0))
    if dtype is not None and mat.dtype != dtype:
        mat = mat.astype(dtype)
    valid = None
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(mat), valid


def distances(query: np.ndarray, data: np.ndarray, metric: str) -> np.ndarray:
    """float32 distance of every row of ``data`` to ``query`` (both in one computing type)."""
    out = np.empty(data.shape[0], dtype=np.float32)
    kind = _KIND[metric]
    if data.dtype == np.uint8:
        if metric == COSINE:
            return distances(query.astype(np.float32), data.astype(np.float32), metric)
        _distance.fill_u8(query, data, out, kind)
    elif data.dtype == np.float64:
        _distance.fill_f64(query, data, out, kind)
    else:
        _distance.fill_f32(np.ascontiguousarray(query, np.float32),
                           np.ascontiguousarray(data, np.float32), out, kind)
    return out


def column_distances(queries: list, column, metric: str, value_type: pa.DataType) -> np.ndarray:
    """Distances of each row of a vector column (fixed-size lists, or lists of them for
    multivectors) to ``queries``: one query for a plain column; for a multivector column the
    sum over the queries of each row's nearest vector. NaN where a row has no vector."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if isinstance(column.type, pa.BaseExtensionType):  # fixed_shape_tensor: its storage lists
        column = column.storage
    dtype = compute_dtype(value_type)
    if pa.types.is_fixed_size_list(column.type):
        mat, valid = fsl_matrix(column, dtype)
        d = distances(queries[0], mat, metric)
        if valid is not None:
            d[~valid] = np.nan
        return d
    # list<fixed_size_list>: every row's vectors
    n = len(column)
    offsets = column.offsets.to_numpy().astype(np.int64)
    first = int(offsets[0])
    flat = column.values.slice(first, int(offsets[-1]) - first)
    offsets = offsets - first
    mat, valid = fsl_matrix(flat, dtype)
    total = np.zeros(n, dtype=np.float32)
    empty = np.zeros(n, dtype=np.uint8)
    for q in queries:
        d = distances(q, mat, metric)
        if valid is not None:
            d[~valid] = np.inf
        _distance.min_per_list(d, offsets, total, empty)
    if column.null_count:
        empty |= (~column.is_valid().to_numpy(zero_copy_only=False)).astype(np.uint8)
    total[empty.astype(bool)] = np.nan
    return total


def smallest(dist: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest (non-NaN) distances, and of every distance tied with
    the k-th (so a tie-break by row id can still pick among them)."""
    ok = np.flatnonzero(~np.isnan(dist))
    if ok.size <= k:
        return ok
    d = dist[ok]
    kth = np.partition(d, k - 1)[k - 1]
    return ok[d <= kth]


def ranked(dist: np.ndarray, ids: np.ndarray, k: int | None = None) -> np.ndarray:
    """Order of rows by (distance, row id), the first ``k``; NaN distances dropped."""
    keep = smallest(dist, k) if k is not None else np.flatnonzero(~np.isnan(dist))
    order = keep[np.lexsort((ids[keep], dist[keep]))]
    return order if k is None else order[:k]
