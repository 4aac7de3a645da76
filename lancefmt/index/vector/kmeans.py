"""k-means (Lloyd's algorithm) for IVF centroids and PQ codebooks, over numpy/BLAS.

As Lance trains: centroids start at ``k`` distinct random rows (or given ones), each iteration
assigns every row to its nearest centroid (one matrix product per block,
:func:`~.ivf.nearest_centroids`) and moves each centroid to its rows' mean; it stops after
``max_iters`` or when the mean distance improves by less than ``tolerance`` (relative). An
empty cluster takes half of the largest one (its farthest rows), so no centroid is wasted.
"""
from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError
from . import _kmeans
from .ivf import nearest_centroids


class KMeansError(InvalidArgumentError):
    """Too few rows to train the requested clusters (pylance raises ValueError)."""


def sample_rows(n: int, wanted: int, seed=None) -> np.ndarray | None:
    """Sorted positions of a random sample of ``wanted`` of ``n`` rows (None: all rows)."""
    if n <= wanted:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, wanted, replace=False))


def means(data: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(per-cluster means, sizes); empty clusters' rows are zero."""
    sums = np.zeros((k, data.shape[1]), np.float64)
    sizes = np.zeros(k, np.int64)
    _kmeans.accumulate(data, labels, sums, sizes)
    nonempty = sizes > 0
    sums[nonempty] /= sizes[nonempty, None]
    return sums.astype(np.float32), sizes


def train_kmeans(data: np.ndarray, k: int, *, max_iters: int = 50, tolerance: float = 1e-4,
                 metric: str = "l2", init: np.ndarray | None = None, seed=None):
    """(centroids ``k x dim`` float32, final loss: the sum of distances to the centroids)."""
    data = np.ascontiguousarray(data, dtype=np.float32)
    n = data.shape[0]
    if n < k:
        raise KMeansError(f"KMeans: can not train {k} centroids with {n} vectors, choose a "
                          f"smaller K (< {n}) instead")
    rng = np.random.default_rng(seed)
    if init is not None:
        cents = np.array(init, dtype=np.float32, copy=True)
    else:
        cents = data[rng.choice(n, k, replace=False)].copy()
    prev = None
    loss = 0.0
    for _ in range(max(1, int(max_iters))):
        labels, dists = nearest_centroids(data, cents, metric)
        loss = float(dists.astype(np.float64).sum())
        new, sizes = means(data, labels, k)
        _fill_empty(new, sizes, data, labels, dists, rng)
        cents = new
        if prev is not None and prev > 0 and abs(prev - loss) / prev < tolerance:
            break
        prev = loss
    return cents, loss


def _fill_empty(cents, sizes, data, labels, dists, rng) -> None:
    """Give each empty cluster the farther half of the largest cluster's rows."""
    for e in np.flatnonzero(sizes == 0):
        big = int(np.argmax(sizes))
        if sizes[big] < 2:
            cents[e] = data[rng.integers(0, data.shape[0])]
            continue
        members = np.flatnonzero(labels == big)
        far = members[np.argsort(dists[members])[members.size // 2:]]
        cents[e] = data[far].mean(axis=0)
        near = np.setdiff1d(members, far, assume_unique=True)
        cents[big] = data[near].mean(axis=0)
        labels[far] = e
        sizes[e], sizes[big] = far.size, near.size
