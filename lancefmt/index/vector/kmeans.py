"""k-means (Lloyd's algorithm) for IVF centroids and PQ codebooks, over numpy/BLAS.

IVF centroids start with k-means++ seeding (each next centroid a row drawn with probability
proportional to its squared distance to the nearest centroid so far), which avoids the poor
local optima of Lance's random start, while that costs less than a few iterations (a budget
of rows x k x dim); beyond it, and for PQ codebooks (many small clusters, where a random start does well), at
``k`` distinct random rows as Lance starts. Each iteration
assigns every row to its nearest centroid (:func:`~.ivf.nearest_centroids`) and moves each
centroid to its rows' mean; it stops after ``max_iters`` or when the mean distance improves by
less than ``tolerance`` (relative). An empty cluster takes half of the largest one (its
farthest rows), so no centroid is wasted.
"""
from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError
from . import _kmeans
from .distance import DOT, HAMMING
from .ivf import in_parallel, nearest_centroids


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


PLUS_PLUS_BUDGET = 4e9


def plus_plus(data: np.ndarray, k: int, rng) -> np.ndarray:
    """k-means++ seeding (see module docstring)."""
    n = data.shape[0]
    cents = np.empty((k, data.shape[1]), np.float32)
    cents[0] = data[rng.integers(n)]
    d2 = np.full(n, np.inf)

    def update(c):   # rows split over the CPU's threads (the kernel releases the GIL)
        in_parallel(n, lambda a, b: _kmeans.update_min_dist(data[a:b], c, d2[a:b]))
    update(cents[0])
    for i in range(1, k):
        total = d2.sum()
        if total <= 0:   # every row sits on a centroid already: any row will do
            cents[i:] = data[rng.choice(n, k - i, replace=False)]
            break
        pick = int(np.searchsorted(np.cumsum(d2), rng.random() * total))
        cents[i] = data[min(pick, n - 1)]
        update(cents[i])
    return cents


def train_kmeans(data: np.ndarray, k: int, *, max_iters: int = 50, tolerance: float = 1e-4,
                 metric: str = "l2", init: np.ndarray | None = None, seed=None,
                 plus_plus_seeding: bool = True):
    """(centroids ``k x dim`` float32, final loss: the sum of distances to the centroids)."""
    raw = data
    data = np.ascontiguousarray(data, dtype=np.float32)
    n = data.shape[0]
    if n < k:
        raise KMeansError(f"KMeans: can not train {k} centroids with {n} vectors, choose a "
                          f"smaller K (< {n}) instead")
    rng = np.random.default_rng(seed)
    if init is not None:
        cents = np.array(init, dtype=np.float32, copy=True)
    elif plus_plus_seeding and n * k * data.shape[1] <= PLUS_PLUS_BUDGET and metric != DOT:
        cents = plus_plus(data, k, rng)
    else:
        cents = data[rng.choice(n, k, replace=False)].copy()
    prev = None
    loss = 0.0
    if metric == HAMMING:
        return _hamming_kmeans(np.ascontiguousarray(raw, np.uint8), cents.astype(np.uint8),
                               max_iters, tolerance)
    for _ in range(max(1, int(max_iters))):
        labels, dists = nearest_centroids(data, cents, metric)
        loss = float(dists.astype(np.float64).sum())
        new, sizes = means(data, labels, k)
        _fill_empty(new, sizes, data, labels, dists, rng)
        if metric == DOT:   # spherical, as pylance 14's dot centroids: unit vectors
            norms = np.linalg.norm(new, axis=1, keepdims=True)
            new = np.divide(new, norms, out=new, where=norms > 0)
        cents = new
        # relative to |prev|: a dot loss (sum of 1 - x.c) is often negative
        if prev is not None and prev != 0 and abs(prev - loss) / abs(prev) < tolerance:
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


def _hamming_kmeans(data: np.ndarray, cents: np.ndarray, max_iters: int, tolerance: float):
    """k-means of uint8 vectors under hamming distance: each centroid's bits are its rows'
    majority bits."""
    k = cents.shape[0]
    bits = np.unpackbits(data, axis=1)
    prev, loss = None, 0.0
    for _ in range(max(1, int(max_iters))):
        labels, dists = nearest_centroids(data, cents, HAMMING)
        loss = float(dists.sum())
        sums = np.zeros((k, bits.shape[1]), np.int64)
        np.add.at(sums, labels, bits)
        sizes = np.bincount(labels, minlength=k)
        for c in np.flatnonzero(sizes):
            cents[c] = np.packbits(sums[c] * 2 >= sizes[c])
        if prev is not None and prev > 0 and abs(prev - loss) / prev < tolerance:
            break
        prev = loss
    return cents, loss
