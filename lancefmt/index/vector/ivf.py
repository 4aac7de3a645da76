"""The IVF model: partition centroids, and which partitions a query probes.

Lance stores the model as an ``IVF`` message (``protos/index.proto``) in a global buffer of
``index.idx`` (centroids as a Tensor) and again in ``auxiliary.idx`` (each partition's first
row and length there, no centroids). Vectors are assigned to their nearest centroid with one
BLAS product per block (``|x|^2 - 2 x.c + |c|^2``); a query ranks the centroids with the exact
kernels and probes the nearest partitions first, as pylance does: at least
``minimum_nprobes``, raised by Lance's early pruning to every partition whose centroid is
within a factor (0.6, 7 or 81 by ``k``) of the nearest one, more while fewer than ``k`` rows
were found, never more than ``maximum_nprobes``.
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..._proto import index_pb2
from ...errors import CorruptFileError
from ...io.cores import cores
from . import _kmeans
from .distance import COSINE, DOT, HAMMING, L2, distances
from .tensor import from_tensor, to_tensor

ASSIGN_BLOCK = 1 << 13


class IvfModel:
    """Centroids (``partitions x dim``) and, once built, each partition's rows (``offsets``,
    ``lengths`` into the storage file)."""

    def __init__(self, centroids: np.ndarray, offsets=None, lengths=None, loss=None):
        self.centroids = np.ascontiguousarray(centroids)
        n = self.centroids.shape[0]
        self.offsets = np.zeros(n, np.int64) if offsets is None else np.asarray(offsets, np.int64)
        self.lengths = np.zeros(n, np.int64) if lengths is None else np.asarray(lengths, np.int64)
        self.loss = loss

    @property
    def num_partitions(self) -> int:
        return int(self.centroids.shape[0])

    @property
    def dim(self) -> int:
        return int(self.centroids.shape[1])

    # -- storage ------------------------------------------------------------------------------
    def to_proto(self, *, centroids: bool, partitions: bool = True, dtype=None) -> bytes:
        msg = index_pb2.IVF()
        if partitions:
            msg.offsets.extend(int(o) for o in self.offsets)
            msg.lengths.extend(int(n) for n in self.lengths)
        else:
            msg.offsets.extend([0] * self.num_partitions)
            msg.lengths.extend([0] * self.num_partitions)
        if centroids:
            cents = self.centroids if dtype is None else self.centroids.astype(dtype)
            msg.centroids_tensor.CopyFrom(to_tensor(cents))
        if self.loss is not None and centroids:
            msg.loss = float(self.loss)
        return msg.SerializeToString()

    @staticmethod
    def parse(raw: bytes, path: str | None = None) -> index_pb2.IVF:
        msg = index_pb2.IVF()
        try:
            msg.ParseFromString(raw)
        except Exception as e:  # noqa: BLE001 -- protobuf's DecodeError and friends
            raise CorruptFileError(f"bad IVF metadata ({e})", path) from None
        if len(msg.offsets) != len(msg.lengths):
            raise CorruptFileError(f"IVF metadata has {len(msg.offsets)} offsets and "
                                   f"{len(msg.lengths)} lengths", path)
        return msg

    @classmethod
    def from_proto(cls, msg: index_pb2.IVF, path: str | None = None) -> "IvfModel":
        if msg.HasField("centroids_tensor"):
            cents = from_tensor(msg.centroids_tensor, path, ndim=2)
        elif len(msg.centroids):
            n = len(msg.lengths)
            flat = np.asarray(msg.centroids, np.float32)
            if not n or flat.size % n:
                raise CorruptFileError("IVF centroids do not divide into the partitions", path)
            cents = flat.reshape(n, -1)
        else:
            raise CorruptFileError("IVF metadata has no centroids", path)
        if cents.shape[0] != len(msg.lengths):
            raise CorruptFileError(f"IVF has {cents.shape[0]} centroids and {len(msg.lengths)} "
                                   f"partitions", path)
        return cls(cents, np.asarray(msg.offsets, np.int64), np.asarray(msg.lengths, np.int64),
                   msg.loss if msg.HasField("loss") else None)

    # -- searching ----------------------------------------------------------------------------
    def ranked_partitions(self, query: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(partition ids nearest first, their distances) for ``query`` (normalized already
        for cosine indices, whose centroids are compared by L2)."""
        if metric == HAMMING:
            d = distances(np.asarray(query, np.uint8), np.asarray(self.centroids, np.uint8), HAMMING)
            order = np.argsort(d, kind="stable")
            return order, d[order]
        m = L2 if metric in (L2, COSINE) else DOT
        cents = self.centroids
        q = query
        if cents.dtype != np.float64:
            cents = cents.astype(np.float32, copy=False)
            q = np.asarray(q, np.float32)
        else:
            q = np.asarray(q, np.float64)
        d = distances(q, cents, m)
        order = np.argsort(d, kind="stable")
        return order, d[order]

    # -- assigning ----------------------------------------------------------------------------
    def assign(self, vectors: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(nearest partition, distance to it) for every row of ``vectors`` (blocks of BLAS)."""
        return nearest_centroids(vectors, self.centroids, metric)


SMALL_DIM = 32
_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(8, thread_name_prefix="lancefmt-kmeans")  # threads start as used
    return _POOL


def _forget_pool_after_fork() -> None:
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def in_parallel(n: int, fn, min_rows: int = 8192) -> None:
    """``fn(start, stop)`` over row ranges on the pool (the kernels release the GIL): one range
    per core this process may use (:func:`~lancefmt.io.cores.cores`: a Spark task's share), the
    first on the calling thread."""
    workers = max(1, min(cores(), 8, n // min_rows))
    if workers <= 1:
        fn(0, n)
        return
    step = -(-n // workers)
    futures = [_pool().submit(fn, s, min(n, s + step)) for s in range(step, n, step)]
    try:
        fn(0, min(n, step))
    finally:
        for f in futures:
            f.result()


def each_in_parallel(items, fn) -> None:
    """``fn(item)`` for every item, on the pool's threads (one per core this process may use,
    :func:`~lancefmt.io.cores.cores`), each thread taking the next item when it is done with
    one: items of uneven cost (IVF partitions) keep every core busy until the last few. Listed
    costliest first, they finish together."""
    queue = deque(items)
    workers = max(1, min(cores(), 8, len(queue)))

    def drain():
        while True:
            try:
                item = queue.popleft()
            except IndexError:
                return
            fn(item)

    if workers <= 1:
        drain()
        return
    futures = [_pool().submit(drain) for _ in range(workers)]
    for f in futures:
        f.result()


def nearest_centroids(vectors: np.ndarray, centroids: np.ndarray, metric: str):
    """(index of the nearest centroid, its distance) per row: L2 (squared) or dot (1 - x.c).
    Short vectors go through the fused Cython kernel, long ones through one BLAS product per
    block; rows are split over threads."""
    n = vectors.shape[0]
    labels = np.empty(n, np.int64)
    dists = np.empty(n, np.float32)
    if not n:
        return labels, dists
    if metric == HAMMING:  # uint8 vectors: one kernel pass per centroid
        x = np.ascontiguousarray(vectors, np.uint8)
        cu = np.ascontiguousarray(centroids, np.uint8)
        best = np.full(n, np.inf, np.float32)
        for i in range(cu.shape[0]):
            d = distances(cu[i], x, HAMMING)
            better = d < best
            labels[better], best[better] = i, d[better]
        dists[:] = best
        return labels, dists
    c = np.ascontiguousarray(centroids, dtype=np.float32)
    if metric != DOT and c.shape[1] <= SMALL_DIM:
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        cT = np.ascontiguousarray(c.T)
        cn = (c.astype(np.float64) ** 2).sum(1).astype(np.float32)
        in_parallel(n, lambda s, e: _kmeans.assign_small(x[s:e], cT, cn, labels[s:e], dists[s:e]))
        return labels, dists
    cn = (c.astype(np.float64) ** 2).sum(1).astype(np.float32) if metric != DOT else None

    def block(s0, e0):
        for s in range(s0, e0, ASSIGN_BLOCK):
            x = np.asarray(vectors[s:min(e0, s + ASSIGN_BLOCK)], dtype=np.float32)
            prod = x @ c.T
            rows = np.arange(x.shape[0])
            if metric == DOT:
                best = np.argmax(prod, axis=1)
                labels[s:s + x.shape[0]] = best
                dists[s:s + x.shape[0]] = 1.0 - prod[rows, best]
            else:
                prod *= -2.0
                prod += cn
                best = np.argmin(prod, axis=1)
                xn = np.einsum("ij,ij->i", x, x)
                labels[s:s + x.shape[0]] = best
                dists[s:s + x.shape[0]] = np.maximum(prod[rows, best] + xn, 0.0)

    in_parallel(n, block, min_rows=ASSIGN_BLOCK)
    return labels, dists


def early_pruning(sorted_dists: np.ndarray, k: int) -> int:
    """How many partitions Lance probes at least: those within a factor of the nearest."""
    if not sorted_dists.size:
        return 0
    factor = 0.6 if k <= 1 else (7.0 if k <= 10 else 81.0)
    threshold = np.float32(sorted_dists[0]) * np.float32(factor)
    return int(np.searchsorted(sorted_dists, threshold, side="right"))


def probe_counts(sorted_dists: np.ndarray, k: int, minimum: int, maximum: int | None,
                 metric: str = L2):
    """(partitions probed first, most partitions probed) for one query. pylance 14 probes
    every partition up to the maximum for a dot index (its answers match only then)."""
    total = sorted_dists.size
    hi = total if maximum is None else min(int(maximum), total)
    if metric == DOT:
        return hi, hi
    lo = max(int(minimum), early_pruning(sorted_dists, k))
    return min(lo, hi), hi
