"""IVF_PQ builds on an accelerator, as pylance's ``create_index(..., accelerator="cuda")``.

pylance runs the heavy steps with PyTorch on the device: k-means of the IVF centroids, k-means
of each PQ sub-vector's codebook (on residuals), and every row's partition and PQ code. So does
this; the rest (sampling, ordering, the files written) is the CPU build's
(:func:`.ivf_build.build`), so the segment has the CPU build's layout and pylance reads it.
The distances are the CPU build's too: L2 (on normalized vectors for cosine), ``1 - x.c`` for
dot, PQ codes by L2 (on residuals for L2 and cosine).

``accelerator`` is "cuda", "cuda:N", "mps" or a ``torch.device`` (any device, "cpu" too), as
pylance accepts. torch is the optional extra ``lancefmt[torch]``; without it the build raises
:class:`~lancefmt.errors.MissingDependencyError`.
"""
from __future__ import annotations

import re

import numpy as np

from ...errors import InvalidArgumentError, MissingDependencyError
from .distance import COSINE, DOT, L2
from .ivf import IvfModel
from .ivf_build import ENCODE_BLOCK, build as cpu_build, centroids_array, num_partitions_for
from .kmeans import sample_rows
from .quantizers import ProductQuantizer, normalize

CUDA = re.compile(r"^cuda(:\d+)?$")
EXTRA = "lancefmt[torch]"
KINDS = ("IVF_PQ",)           # the only type pylance builds on an accelerator
DIST_CELLS = 1 << 24          # rows x centroids of one block's distance matrix
TOLERANCE = 1e-4


def import_torch(accelerator):
    try:
        import torch
    except ImportError:
        raise MissingDependencyError(
            f"accelerator={accelerator!r} needs PyTorch, which is not installed: "
            f"pip install '{EXTRA}'") from None
    return torch


def device_for(accelerator):
    """The ``torch.device`` of ``accelerator``, checked as pylance checks it (a string must be
    "cuda", "cuda:N" or "mps"); a device torch cannot reach is refused before any work."""
    if isinstance(accelerator, str) and not (CUDA.match(accelerator) or accelerator == "mps"):
        raise InvalidArgumentError(
            "Train ivf centroids on accelerator: only support 'cuda' or 'mps' as accelerator, "
            f"got '{accelerator}'.")
    torch = import_torch(accelerator)
    try:
        device = torch.device(accelerator)
    except (TypeError, RuntimeError) as e:
        raise InvalidArgumentError(f"accelerator {accelerator!r} is not a torch device: {e}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InvalidArgumentError(f"accelerator {accelerator!r}: torch finds no CUDA device here")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise InvalidArgumentError(f"accelerator {accelerator!r}: torch finds no MPS device here")
    return device


def build(kind: str, metric: str, data, params: dict):
    """:func:`.ivf_build.build` with training and encoding on ``params["accelerator"]``."""
    ops = _ops(params["accelerator"], metric)
    return cpu_build(kind, metric, data, params,
                     train=lambda *a, **k: train_model(ops, *a, **k),
                     encode=lambda *a: encode_all(ops, *a))


def train_ivf(accelerator, metric: str, sample: np.ndarray, params: dict) -> IvfModel:
    """IVF centroids alone, by k-means on the device (``IndicesBuilder.train_ivf``)."""
    return _train_centroids(_ops(accelerator, metric), "IVF_PQ", metric, sample, params,
                            rows=sample.shape[0])[0]


def assign_partitions(accelerator, centroids: np.ndarray, metric: str, parts):
    """(row ids, partition ids) of every block of every (vectors, ids) part: the nearest
    centroid, on the device (``IndicesBuilder.assign_ivf_partitions``)."""
    ops = _ops(accelerator, metric)
    cents = ops.tensor(centroids)
    with ops.torch.no_grad():
        for mat, rid in parts:
            for s in range(0, mat.shape[0], ENCODE_BLOCK):
                x = mat[s:s + ENCODE_BLOCK]
                x = ops.tensor(normalize(x) if metric == COSINE else x)
                yield rid[s:s + ENCODE_BLOCK], ops.nearest(x, cents, DOT if metric == DOT else L2)[0].cpu().numpy()


def _ops(accelerator, metric: str) -> "_Ops":
    device = device_for(accelerator)
    if metric not in (L2, COSINE, DOT):
        raise InvalidArgumentError(f"Only l2/cosine/dot is supported as metric type on an "
                                   f"accelerator, got: {metric}")
    return _Ops(import_torch(accelerator), device)


class _Ops:
    """The device kernels: nearest centroid and k-means over tensors."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def tensor(self, a: np.ndarray):
        return self.torch.from_numpy(np.require(a, np.float32, ["C", "W"])).to(self.device)

    def nearest(self, x, cents, metric: str):
        """(label int64, distance float32) tensors of each row of ``x``: L2 squared or dot."""
        torch = self.torch
        n, k = x.shape[0], cents.shape[0]
        labels = torch.empty(n, dtype=torch.int64, device=self.device)
        dists = torch.empty(n, dtype=torch.float32, device=self.device)
        # one fused product per block: |c|^2 - 2x.c (or -x.c); |x|^2 (or 1) added to the minimum
        cn = (cents * cents).sum(1) if metric != DOT else torch.zeros(k, device=self.device)
        alpha = -1.0 if metric == DOT else -2.0
        step = max(1, DIST_CELLS // max(k, 1))
        for s in range(0, n, step):
            xb = x[s:s + step]
            v, labels[s:s + step] = torch.addmm(cn, xb, cents.T, alpha=alpha).min(1)
            dists[s:s + step] = v + 1.0 if metric == DOT else (v + (xb * xb).sum(1)).clamp_(min=0)
        return labels, dists

    def kmeans(self, x, k: int, max_iters: int, metric: str, rng):
        """Lloyd's k-means from ``k`` distinct random rows; an empty cluster splits the largest
        (its centroid twice, with 0.5% noise, as pylance's torch k-means does). Returns
        (centroids tensor, loss: the sum of distances to the centroids)."""
        torch = self.torch
        n = x.shape[0]
        cents = x[torch.from_numpy(np.sort(rng.choice(n, k, replace=False))).to(self.device)].clone()
        prev, loss = None, 0.0
        for _ in range(max(1, int(max_iters))):
            labels, dists = self.nearest(x, cents, metric)
            loss = float(dists.double().sum())
            sums = torch.zeros_like(cents).index_add_(0, labels, x)
            counts = torch.bincount(labels, minlength=k)
            new = sums / counts.clamp(min=1).to(sums.dtype)[:, None]
            for e in torch.nonzero(counts == 0).flatten().tolist():
                big = int(torch.argmax(counts))
                base = new[big].clone()
                noise = self.tensor((rng.random((2, x.shape[1])) - 0.5) * 0.01 + 1)
                new[e], new[big] = base * noise[0], base * noise[1]
                counts[e] = counts[big] // 2
                counts[big] -= counts[e]
            cents = new
            if prev is not None and prev > 0 and abs(prev - loss) / prev < TOLERANCE:
                break
            prev = loss
        return cents, loss


def _train_centroids(ops: _Ops, kind: str, metric: str, sample: np.ndarray, params: dict, *,
                     rows: int):
    """(IvfModel, its centroids as a tensor): the given ``ivf_centroids`` or k-means on
    ``sample_rate`` rows per partition."""
    dim = sample.shape[1]
    rng = np.random.default_rng(params.get("seed"))
    rate = int(params.get("sample_rate", 256))
    max_iters = int(params.get("max_iters", 50))
    km = DOT if metric == DOT else L2
    loss = None
    if params.get("ivf_centroids") is not None:
        cents_t = ops.tensor(centroids_array(params["ivf_centroids"], dim))
    else:
        nparts = params.get("num_partitions")
        nparts = int(nparts) if nparts else num_partitions_for(kind, rows, params.get("target_partition_size"))
        if nparts > sample.shape[0]:
            raise InvalidArgumentError(
                f"KMeans: can not train {nparts} centroids with {sample.shape[0]} vectors, "
                f"choose a smaller K (< {sample.shape[0]}) instead")
        idx = sample_rows(sample.shape[0], nparts * rate, params.get("seed"))
        cents_t, loss = ops.kmeans(ops.tensor(sample if idx is None else sample[idx]), nparts,
                                   max_iters, km, rng)
    return IvfModel(cents_t.cpu().numpy(), loss=loss), cents_t


def train_model(ops: _Ops, kind: str, metric: str, sample: np.ndarray, params: dict, *, rows: int):
    """(IvfModel, ProductQuantizer) as :func:`.ivf_build.train_model` trains them, with both
    k-means on the device."""
    ivf, cents_t = _train_centroids(ops, kind, metric, sample, params, rows=rows)
    dim = sample.shape[1]
    rng = np.random.default_rng(params.get("seed") + 1 if params.get("seed") is not None else None)
    rate = int(params.get("sample_rate", 256))
    max_iters = int(params.get("max_iters", 50))
    m = params.get("num_sub_vectors")
    if m is None:
        raise InvalidArgumentError("num_partitions and num_sub_vectors are required for IVF_PQ")
    m, bits = int(m), int(params.get("num_bits", 8))
    ProductQuantizer.check(dim, m, bits)
    if params.get("pq_codebook") is not None:
        return ivf, ProductQuantizer.train(sample, m, bits, codebook=params["pq_codebook"])
    k = 1 << bits
    idx = sample_rows(sample.shape[0], rate * k, params.get("seed"))
    train = ops.tensor(sample if idx is None else sample[idx])
    if train.shape[0] < k:
        raise InvalidArgumentError(f"Not enough rows to train PQ. Requires {k} rows but only "
                                   f"{train.shape[0]} available")
    if metric in (L2, COSINE):
        train = train - cents_t[ops.nearest(train, cents_t, L2)[0]]
    sub = dim // m
    books = [ops.kmeans(train[:, j * sub:(j + 1) * sub].contiguous(), k, max_iters, L2, rng)[0]
             for j in range(m)]
    return ivf, ProductQuantizer(dim, m, bits, ops.torch.stack(books).cpu().numpy())


def encode_all(ops: _Ops, ivf: IvfModel, quantizer: ProductQuantizer, metric: str, parts):
    """(partition ids, row ids, row-major PQ codes) of every (vectors, ids) part, as
    :func:`.ivf_build.encode_all` returns them, computed on the device block by block."""
    torch = ops.torch
    cents = ops.tensor(ivf.centroids)
    sub = quantizer.dim // quantizer.m
    book = ops.tensor(quantizer.codebook.reshape(quantizer.m, quantizer.ncent, sub))
    labels, ids, codes = [], [], []
    loss = 0.0
    with torch.no_grad():
        for mat, rid in parts:
            for s in range(0, mat.shape[0], ENCODE_BLOCK):
                x = mat[s:s + ENCODE_BLOCK]
                x = ops.tensor(normalize(x) if metric == COSINE else x)
                lab, dist = ops.nearest(x, cents, DOT if metric == DOT else L2)
                loss += float(dist.double().sum())
                y = x - cents[lab] if quantizer.use_residual(metric) else x
                code = torch.stack([ops.nearest(y[:, j * sub:(j + 1) * sub].contiguous(), book[j], L2)[0]
                                    for j in range(quantizer.m)], dim=1)
                labels.append(lab.cpu().numpy())
                ids.append(rid[s:s + ENCODE_BLOCK])
                codes.append(quantizer.pack(code.to(torch.uint8).cpu().numpy()))
    if not labels:
        return np.empty(0, np.int64), np.empty(0, np.uint64), np.empty((0, quantizer.width), np.uint8)
    if ivf.loss is None:
        ivf.loss = loss
    return np.concatenate(labels), np.concatenate(ids).astype(np.uint64), np.concatenate(codes)
