"""The quantizers of IVF indices: how a partition's vectors are stored in ``auxiliary.idx``
and scored against a query.

* :class:`FlatQuantizer` (IVF_FLAT): the vectors themselves (column ``flat``), exact
  distances;
* :class:`ScalarQuantizer` (IVF_SQ): each value scaled into a byte over the training data's
  ``[min, max]`` (``__sq_code``), integer distances scaled back;
* :class:`ProductQuantizer` (IVF_PQ): each of ``m`` sub-vectors replaced by its nearest of
  ``2^bits`` trained centroids (``__pq_code``, stored transposed per partition), distances
  from a per-query table. For L2 and cosine the codes describe the residual to the partition
  centroid, as in Lance.

Each one writes and reads its ``storage_metadata`` JSON (pylance's keys) and, for PQ, the
codebook tensor global buffer. Cosine indices work on normalized vectors with L2 throughout.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, InvalidArgumentError
from . import _ivf
from .distance import COSINE, DOT, HAMMING, L2, distances
from .kmeans import train_kmeans
from .tensor import parse_tensor, tensor_bytes

PQ_CODE = "__pq_code"
SQ_CODE = "__sq_code"
FLAT_COLUMN = "flat"


def rust_float(x: float) -> str:
    """``x`` as serde_json prints an f64 (shortest round trip, ``1e-6`` not ``1e-06``)."""
    if math.isinf(x) or math.isnan(x):
        return "null"
    text = repr(float(x))
    if "e" in text:
        mant, exp = text.split("e")
        return f"{mant}e{int(exp)}"
    return text


def storage_metric(metric: str) -> str:
    """What the stored vectors are compared with: cosine indices keep normalized vectors and
    compare them by L2."""
    return L2 if metric == COSINE else metric


def normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        n = np.linalg.norm(x)
        return x / n if n else x
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1
    return (x / n).astype(np.float32)


class Quantizer:
    name = ""
    column = ""

    def use_residual(self, metric: str) -> bool:
        return False

    def field(self, value_type: pa.DataType, dim: int) -> pa.Field:
        raise NotImplementedError

    def encode(self, vectors: np.ndarray) -> pa.Array:
        """The code column for ``vectors`` (residuals already taken when used)."""
        raise NotImplementedError

    def storage_metadata(self, buffer_index: int) -> str:
        raise NotImplementedError

    def global_buffers(self, dtype=np.float32) -> list:
        return []

    def stored(self, codes: pa.Array, offsets, lengths):
        """What a loaded index keeps of the code column (numpy, in storage order)."""
        raise NotImplementedError

    def params(self) -> dict:
        return {}

    def decode(self, codes: np.ndarray, ivf, metric: str) -> np.ndarray:
        """Approximate vectors of row-major ``codes`` in partition order (``ivf`` gives each
        partition's rows): what a graph is rebuilt from when the originals are gone."""
        return np.asarray(codes, np.float32)


# -- FLAT ---------------------------------------------------------------------------------
class FlatQuantizer(Quantizer):
    name = "FLAT"
    column = FLAT_COLUMN

    def __init__(self, dim: int, value_type: pa.DataType = pa.float32()):
        self.dim = dim
        self.value_type = value_type

    def field(self, value_type, dim):
        return pa.field(FLAT_COLUMN, pa.list_(pa.field("item", value_type), dim), nullable=False)

    def encode(self, vectors):
        flat = np.ascontiguousarray(vectors).ravel()
        return pa.FixedSizeListArray.from_arrays(pa.array(flat, self.value_type), self.dim)

    def storage_metadata(self, buffer_index):
        return json.dumps({"dim": self.dim}, separators=(",", ":"))

    @classmethod
    def from_metadata(cls, meta: dict, field: pa.Field, path=None):
        t = field.type
        if not pa.types.is_fixed_size_list(t):
            raise CorruptFileError(f"flat column of type {t}", path)
        return cls(int(meta.get("dim", t.list_size)), t.value_type)

    def stored(self, codes, offsets, lengths):
        from .distance import compute_dtype, fsl_matrix
        mat, _ = fsl_matrix(codes, compute_dtype(self.value_type))
        return mat

    def scorer(self, stored, query, metric):
        m = metric  # flat storage keeps cosine: normalized vectors, 1 - cos (not L2)
        q = np.asarray(query, dtype=stored.dtype)

        def score(start, n, part_query=None):
            return distances(q, stored[start:start + n], m)
        return score


# -- SQ -----------------------------------------------------------------------------------
class ScalarQuantizer(Quantizer):
    name = "SQ"
    column = SQ_CODE

    def __init__(self, dim: int, num_bits: int = 8, start: float = 0.0, end: float = 0.0):
        self.dim = dim
        self.num_bits = num_bits
        self.start = float(start)
        self.end = float(end)

    @classmethod
    def train(cls, sample: np.ndarray, num_bits: int = 8) -> "ScalarQuantizer":
        if int(num_bits) != 8:
            raise InvalidArgumentError(f"SQ supports num_bits=8 only, got {num_bits}")
        s = np.asarray(sample, dtype=np.float64)
        return cls(sample.shape[1], 8, float(s.min()) if s.size else 0.0,
                   float(s.max()) if s.size else 0.0)

    def field(self, value_type, dim):
        return pa.field(SQ_CODE, pa.list_(pa.field("item", pa.uint8()), dim))

    def scale(self, vectors: np.ndarray) -> np.ndarray:
        """Lance's ``scale_to_u8``: ``(v - start) * 255 / range`` truncated, saturating."""
        v = np.asarray(vectors, dtype=np.float64)
        if self.start == self.end:
            return np.zeros(v.shape, np.uint8)
        scaled = (v - self.start) * 255.0 / (self.end - self.start)
        scaled = np.nan_to_num(scaled, nan=0.0, posinf=255.0, neginf=0.0)
        return np.trunc(np.clip(scaled, 0, 255)).astype(np.uint8)

    def encode(self, vectors):
        codes = self.scale(vectors).ravel()
        return pa.FixedSizeListArray.from_arrays(pa.array(codes, pa.uint8()), self.dim)

    def storage_metadata(self, buffer_index):
        return (f'{{"dim":{self.dim},"num_bits":{self.num_bits},"bounds":{{"start":'
                f'{rust_float(self.start)},"end":{rust_float(self.end)}}}}}')

    @classmethod
    def from_metadata(cls, meta: dict, field, path=None):
        try:
            b = meta["bounds"]
            return cls(int(meta["dim"]), int(meta.get("num_bits", 8)), float(b["start"]), float(b["end"]))
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptFileError(f"bad SQ metadata ({e})", path) from None

    def stored(self, codes, offsets, lengths):
        from .distance import fsl_matrix
        mat, _ = fsl_matrix(codes, np.uint8)
        if mat.shape[1] != self.dim:
            raise CorruptFileError(f"SQ codes of {mat.shape[1]} values, dim {self.dim}")
        return mat

    def params(self):
        return {"num_bits": self.num_bits}

    def decode(self, codes, ivf, metric):
        step = (self.end - self.start) / 255.0
        return (np.asarray(codes, np.float32) * np.float32(step) + np.float32(self.start))

    def scorer(self, stored, query, metric):
        q = self.scale(np.asarray(query, np.float32)[None, :])[0]
        rng = np.float32(self.end - self.start)
        scale = float(np.float32(rng * rng))
        out = np.empty(0, np.float32)
        if storage_metric(metric) == DOT:
            # pylance 14 scores dot products on the decoded vectors against the float query
            qf = np.asarray(query, np.float32)
            step, base = np.float32(self.end - self.start) / np.float32(255), np.float32(self.start)

            def score_dot(start, n, part_query=None):
                decoded = stored[start:start + n].astype(np.float32) * step + base
                return distances(qf, decoded, DOT)
            return score_dot

        def score(start, n, part_query=None):
            nonlocal out
            if out.size < n:
                out = np.empty(n, np.float32)
            _ivf.sq_scan(q, stored, start, n, False, scale, out)
            return out[:n]
        return score


# -- PQ -----------------------------------------------------------------------------------
class ProductQuantizer(Quantizer):
    name = "PQ"
    column = PQ_CODE

    def __init__(self, dim: int, num_sub_vectors: int, num_bits: int, codebook: np.ndarray):
        self.dim = dim
        self.m = num_sub_vectors
        self.num_bits = num_bits
        self.codebook = np.ascontiguousarray(codebook, dtype=np.float32).reshape(-1)  # [m][K][sub]
        # [m][sub][K]: what the distance-table kernel reads
        self.codebook_t = np.ascontiguousarray(
            self.codebook.reshape(num_sub_vectors, 1 << num_bits, dim // num_sub_vectors)
            .transpose(0, 2, 1)).reshape(-1)

    @property
    def ncent(self) -> int:
        return 1 << self.num_bits

    @property
    def width(self) -> int:
        return self.m if self.num_bits == 8 else self.m // 2

    def use_residual(self, metric):
        return metric in (L2, COSINE)

    @staticmethod
    def check(dim: int, m: int, num_bits: int) -> None:
        if m <= 0 or dim % m:
            raise InvalidArgumentError(f"dimension ({dim}) must be divisible by num_sub_vectors ({m})")
        if num_bits not in (4, 8):
            raise InvalidArgumentError(f"num_bits must be 4 or 8, got {num_bits}")
        if num_bits == 4 and m % 2:
            raise InvalidArgumentError(f"PQ: num_sub_vectors must be divisible by 2 for num_bits=4, "
                                       f"but got {m}")

    @classmethod
    def train(cls, sample: np.ndarray, m: int, num_bits: int = 8, *, max_iters: int = 50,
              codebook=None, seed=None) -> "ProductQuantizer":
        dim = sample.shape[1]
        cls.check(dim, m, num_bits)
        k = 1 << num_bits
        if codebook is not None:
            return cls(dim, m, num_bits, codebook_array(codebook, m, k, dim))
        if sample.shape[0] < k:
            raise InvalidArgumentError(f"Not enough rows to train PQ. Requires {k} rows but only "
                                       f"{sample.shape[0]} available")
        sub = dim // m
        rng = np.random.default_rng(seed)
        books = []
        for j in range(m):
            cents, _ = train_kmeans(sample[:, j * sub:(j + 1) * sub], k, max_iters=max_iters,
                                    metric=L2, seed=int(rng.integers(1 << 31)),
                                    plus_plus_seeding=False)
            books.append(cents)
        return cls(dim, m, num_bits, np.stack(books))

    def field(self, value_type, dim):
        return pa.field(PQ_CODE, pa.list_(pa.field("item", pa.uint8()), self.width))

    def codes(self, vectors: np.ndarray) -> np.ndarray:
        """``n x m`` code of every vector: per sub-vector its nearest centroid by L2 (dot
        indices too: choosing by dot product favours long centroids and loses recall). One
        Cython call per thread's rows codes every sub-vector."""
        from . import _kmeans
        from .ivf import in_parallel
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        cT, cn = self._encode_tables()
        out = np.empty((x.shape[0], self.m), np.uint8)
        in_parallel(x.shape[0], lambda s, e: _kmeans.pq_encode(x[s:e], cT, cn, out[s:e]), min_rows=4096)
        return out

    def _encode_tables(self):
        """(codebooks transposed: ``m x sub x k``, their squared norms: ``m x k``), cached."""
        t = getattr(self, "_enc", None)
        if t is None:
            sub = self.dim // self.m
            book = np.asarray(self.codebook, np.float32).reshape(self.m, self.ncent, sub)
            cT = np.ascontiguousarray(book.transpose(0, 2, 1))
            cn = np.ascontiguousarray((book.astype(np.float64) ** 2).sum(2).astype(np.float32))
            t = self._enc = (cT, cn)
        return t

    def pack(self, codes: np.ndarray) -> np.ndarray:
        if self.num_bits == 8:
            return codes
        return ((codes[:, 1::2] << 4) | codes[:, 0::2]).astype(np.uint8)

    def encode(self, vectors):
        packed = self.pack(self.codes(vectors))
        return pa.FixedSizeListArray.from_arrays(pa.array(packed.ravel(), pa.uint8()), self.width)

    def storage_metadata(self, buffer_index):
        return (f'{{"codebook_position":{buffer_index},"nbits":{self.num_bits},'
                f'"num_sub_vectors":{self.m},"dimension":{self.dim},"codebook_tensor":[],'
                f'"transposed":true}}')

    def global_buffers(self, dtype=np.float32):
        return [tensor_bytes(self.codebook.reshape(self.ncent, self.dim).astype(dtype))]

    @classmethod
    def from_metadata(cls, meta: dict, field, path=None, read_buffer=None):
        try:
            m, nbits, dim = int(meta["num_sub_vectors"]), int(meta["nbits"]), int(meta["dimension"])
            pos = int(meta["codebook_position"])
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptFileError(f"bad PQ metadata ({e})", path) from None
        if nbits not in (4, 8) or m <= 0 or dim % m or (nbits == 4 and m % 2):
            raise CorruptFileError(f"bad PQ metadata (m={m}, nbits={nbits}, dim={dim})", path)
        book = parse_tensor(read_buffer(pos), path, ndim=2)
        if book.size != (1 << nbits) * dim:
            raise CorruptFileError(f"PQ codebook of shape {list(book.shape)} for dim {dim}, "
                                   f"{1 << nbits} centroids", path)
        out = cls(dim, m, nbits, book.astype(np.float32).reshape(-1))
        # pylance's distributed segments keep their codes row-major ("transposed": false)
        out.row_major_source = not meta.get("transposed", False)
        return out

    def stored(self, codes, offsets, lengths):
        t = codes.type
        if not pa.types.is_fixed_size_list(t) or t.list_size != self.width:
            raise CorruptFileError(f"PQ codes of type {t}, expected {self.width} bytes")
        from .distance import fsl_matrix
        mat, _ = fsl_matrix(codes, np.uint8)
        if getattr(self, "row_major_source", False):
            return self.transpose(np.ascontiguousarray(mat), offsets, lengths)
        return np.ascontiguousarray(mat).reshape(-1)

    def transpose(self, codes: np.ndarray, offsets, lengths) -> np.ndarray:
        """Row-major packed codes (``n x width``) -> the stored layout (each partition's
        block transposed)."""
        out = np.empty(codes.size, np.uint8)
        w = self.width
        for o, n in zip(offsets, lengths):
            if n:
                out[o * w:(o + n) * w] = codes[o:o + n].T.reshape(-1)
        return out

    def untranspose(self, stored: np.ndarray, offsets, lengths) -> np.ndarray:
        w = self.width
        out = np.empty((stored.size // w, w), np.uint8)
        for o, n in zip(offsets, lengths):
            if n:
                out[o:o + n] = stored[o * w:(o + n) * w].reshape(w, n).T
        return out

    def params(self):
        return {"num_sub_vectors": self.m, "num_bits": self.num_bits}

    def decode(self, codes, ivf, metric):
        c = np.asarray(codes, np.uint8)
        if self.num_bits == 4:
            c = np.stack([c & 15, c >> 4], axis=2).reshape(c.shape[0], -1)
        sub = self.dim // self.m
        book = self.codebook.reshape(self.m, self.ncent, sub)
        out = np.concatenate([book[j][c[:, j]] for j in range(self.m)], axis=1)
        if self.use_residual(metric):
            labels = np.repeat(np.arange(ivf.num_partitions), ivf.lengths)
            out = out + ivf.centroids[labels].astype(np.float32)
        return out.astype(np.float32)

    def scorer(self, stored, query, metric):
        dot = storage_metric(metric) == DOT
        table = np.empty(self.m * self.ncent, np.float32)
        out = np.empty(0, np.float32)
        q0 = np.ascontiguousarray(query, np.float32)
        diff = np.float32(self.m - 1)

        def score(start, n, part_query=None):
            nonlocal out
            qq = q0 if part_query is None else np.ascontiguousarray(part_query, np.float32)
            _ivf.pq_table(qq, self.codebook_t, self.m, self.ncent, dot, table)
            if out.size < n:
                out = np.empty(n, np.float32)
            _ivf.pq_scan(table, stored, start, n, self.m, self.num_bits, out)
            return out[:n] - diff if dot else out[:n]
        return score


def codebook_array(codebook, m: int, k: int, dim: int) -> np.ndarray:
    """A user's ``pq_codebook`` (``m x k x dim/m`` array, or fixed-size lists) as [m][k][sub]."""
    if isinstance(codebook, (pa.Array, pa.ChunkedArray)):
        from .distance import fsl_matrix
        codebook = fsl_matrix(codebook)[0]
    a = np.asarray(codebook, dtype=np.float32)
    if a.size != m * k * (dim // m):
        raise InvalidArgumentError(f"PQ codebook must be 3D array: (sub_vectors, {k}, dim) for "
                                   f"num_bits={int(math.log2(k))}, got {a.shape}")
    return a.reshape(-1)


def metric_allowed(metric: str, value_type: pa.DataType) -> None:
    if metric == HAMMING and not pa.types.is_uint8(value_type):
        raise InvalidArgumentError("hamming distance needs uint8 vectors")
