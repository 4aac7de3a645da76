"""The RaBitQ quantizer of IVF_RQ indices, as pylance 14 writes it (read and search).

``auxiliary.idx`` holds, per row: ``_rabit_codes`` (the sign bits of the residual to the
partition centroid after a random rotation, LSB first, packed per partition in blocks of 32
rows for FastScan, the rest of the partition transposed), ``__add_factors``,
``__scale_factors``, ``__error_factors`` and, with ``num_bits > 1``, the extended codes
(``__blocked_ex_codes``: ``num_bits - 1`` more bits per dimension, in blocks of 64
dimensions) with ``__add_factors_ex`` and ``__scale_factors_ex``. ``storage_metadata``
names the rotation (``fast``: four rounds of sign flips and Walsh-Hadamard transforms, the
signs in the JSON) and ``query_estimator`` (``raw_query``: the rotated query itself, not its
residual, is compared with the codes; the factors absorb the centroid).

A query is rotated once; the binary inner products come from a per-4-dimension table, which
pylance quantizes to u8 for whole blocks of 32 rows, and so does :func:`_ivf.rq_scan`, so
that distances and ties come out as pylance's.
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, NotSupportedError
from . import _ivf
from .distance import COSINE, L2

RABIT_CODE = "_rabit_codes"
ADD = "__add_factors"
SCALE = "__scale_factors"
ERROR = "__error_factors"
EX_CODE = "__blocked_ex_codes"
EX_ADD = "__add_factors_ex"
EX_SCALE = "__scale_factors_ex"
ROUNDS = 4
_PERM0 = np.array([0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15])
_EX_BITS = (0, 2, 4, 8)   # the blocked ex-code layouts lancefmt can decode


def _fwht(x: np.ndarray) -> np.ndarray:
    """In-place-order Walsh-Hadamard butterflies over the last axis (float32)."""
    n = x.shape[-1]
    h = 1
    while h < n:
        v = x.reshape(x.shape[:-1] + (n // (2 * h), 2, h))
        a = v[..., 0, :].copy()
        b = v[..., 1, :]
        v[..., 0, :] = a + b
        v[..., 1, :] = a - b
        h *= 2
    return x


def fast_rotate(x: np.ndarray, signs: np.ndarray, code_dim: int) -> np.ndarray:
    """Lance's fast rotation of ``x`` (rows) into ``code_dim`` dimensions, in float32."""
    x = np.asarray(x, np.float32)
    out = np.zeros(x.shape[:-1] + (code_dim,), np.float32)
    out[..., :min(x.shape[-1], code_dim)] = x[..., :code_dim]
    per = (code_dim + 7) // 8
    flips = np.unpackbits(signs, bitorder="little").reshape(ROUNDS, per * 8)[:, :code_dim].astype(bool)
    trunc = 1 << (code_dim.bit_length() - 1)
    scale = np.float32(1.0) / np.sqrt(np.float32(trunc))
    for r in range(ROUNDS):
        out[..., flips[r]] *= np.float32(-1)
        if trunc == code_dim:
            out = _fwht(out) * scale
            continue
        part = slice(0, trunc) if r % 2 == 0 else slice(code_dim - trunc, code_dim)
        out[..., part] = _fwht(np.ascontiguousarray(out[..., part])) * scale
        half = code_dim // 2
        a = out[..., :half].copy()
        b = out[..., half:2 * half].copy()
        out[..., :half] = a + b
        out[..., half:2 * half] = a - b
    if trunc != code_dim:
        out *= np.float32(0.25)
    return out


def unpack_codes(packed: np.ndarray) -> np.ndarray:
    """One partition's FastScan-packed binary codes back to one row per code."""
    n, width = packed.shape
    blocks = n // 32
    out = np.empty_like(packed)
    if blocks:
        b = packed[:blocks * 32].reshape(blocks, width, 32)
        lo, hi = b[:, :, :16], b[:, :, 16:]
        rows = out[:blocks * 32].reshape(blocks, 32, width)
        rows[:, _PERM0, :] = ((lo & 15) | ((hi & 15) << 4)).transpose(0, 2, 1)
        rows[:, _PERM0 + 16, :] = ((lo >> 4) | (hi & 0xF0)).transpose(0, 2, 1)
    rest = n - blocks * 32
    if rest:
        out[blocks * 32:] = packed[blocks * 32:].reshape(width, rest).T
    return out


def decode_ex(blocked: np.ndarray, ex_bits: int, code_dim: int) -> np.ndarray:
    """Blocked extended codes (64 dimensions per block) to one uint8 per dimension."""
    n = blocked.shape[0]
    groups = (code_dim + 63) // 64
    if blocked.shape[1] != groups * 64 * ex_bits // 8:
        raise CorruptFileError(f"{EX_CODE} rows of {blocked.shape[1]} bytes, {code_dim} "
                               f"dimensions of {ex_bits} bits need {groups * 8 * ex_bits}")
    g = blocked.reshape(n, groups, 8 * ex_bits)
    out = np.empty((n, groups, 64), np.uint8)
    if ex_bits == 8:
        out[:] = g
    elif ex_bits == 4:   # byte 8j+b: dimension 16j+b (low nibble), 16j+b+8 (high)
        v = g.reshape(n, groups, 4, 8)
        o = out.reshape(n, groups, 4, 2, 8)
        o[:, :, :, 0, :] = v & 15
        o[:, :, :, 1, :] = v >> 4
    else:                # ex_bits 2, byte b: dimensions b, b+16, b+32, b+48
        for k in range(4):
            out[:, :, 16 * k:16 * k + 16] = (g >> (2 * k)) & 3
    return np.ascontiguousarray(out.reshape(n, groups * 64)[:, :code_dim])


class RabitStored:
    """Every row's codes and factors in storage order, codes unpacked."""

    def __init__(self, codes, add, scale, error, ex, ex_add, ex_scale):
        self.codes, self.add, self.scale, self.error = codes, add, scale, error
        self.ex, self.ex_add, self.ex_scale = ex, ex_add, ex_scale


def _f32(table, name, path) -> np.ndarray:
    col = table.column(name)
    if not pa.types.is_float32(col.type):
        raise CorruptFileError(f"{name} is {col.type}, not float", path)
    if col.null_count:
        raise CorruptFileError(f"{name} has nulls", path)
    return np.ascontiguousarray(col.to_numpy(), np.float32)


def _codes(table, name, width, path) -> np.ndarray:
    col = table.column(name)
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_fixed_size_list(col.type) or col.type.list_size != width or \
            not pa.types.is_uint8(col.type.value_type) or col.null_count:
        raise CorruptFileError(f"{name} is {col.type}, not {width} bytes per row", path)
    values = col.flatten().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(values.reshape(len(col), width), np.uint8)


class RabitQuantizer:
    """RaBitQ parameters from ``storage_metadata``; searches partitions with ``_ivf.rq_scan``."""
    name = "RQ"
    column = RABIT_CODE

    def __init__(self, dim: int, code_dim: int, num_bits: int, signs: np.ndarray, meta: dict):
        self.dim, self.code_dim, self.num_bits = dim, code_dim, num_bits
        self.ex_bits = num_bits - 1
        self.signs = signs
        self.meta = meta

    @classmethod
    def from_metadata(cls, meta: dict, dim: int, path=None) -> "RabitQuantizer":
        try:
            num_bits = int(meta["num_bits"])
            code_dim = int(meta.get("code_dim") or 0)
            rotation = meta.get("rotation_type", "matrix")
            estimator = meta.get("query_estimator", "residual_query")
            signs = meta.get("fast_rotation_signs")
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptFileError(f"bad RQ metadata ({e})", path) from None
        if rotation != "fast" or estimator != "raw_query" or not meta.get("packed", False):
            raise NotSupportedError(f"{path}: RQ index with rotation {rotation!r}, estimator "
                                    f"{estimator!r}: lancefmt reads pylance 14's fast, "
                                    "raw-query, packed layout only")
        if num_bits - 1 not in _EX_BITS:
            raise NotSupportedError(f"{path}: RQ index of {num_bits} bits: lancefmt reads 1, 3, 5 and 9")
        if not 0 < code_dim <= 1 << 16 or code_dim % 8 or code_dim < dim:
            raise CorruptFileError(f"RQ code_dim {code_dim} for vectors of dimension {dim}", path)
        if not isinstance(signs, list) or len(signs) != ROUNDS * code_dim // 8 or \
                not all(isinstance(s, int) and 0 <= s < 256 for s in signs):
            raise CorruptFileError("RQ fast_rotation_signs are not "
                                   f"{ROUNDS * code_dim // 8} bytes", path)
        return cls(dim, code_dim, num_bits, np.array(signs, np.uint8), meta)

    def use_residual(self, metric: str) -> bool:
        return False

    def params(self) -> dict:
        return {"num_bits": self.num_bits}

    def stored_from_table(self, table: pa.Table, offsets, lengths, path) -> RabitStored:
        names = table.column_names
        for name in (RABIT_CODE, ADD, SCALE) + ((EX_CODE, EX_ADD, EX_SCALE) if self.ex_bits else ()):
            if name not in names:
                raise CorruptFileError(f"RQ index without the {name} column", path)
        if self.ex_bits == 0 and EX_CODE in names:
            raise CorruptFileError("1-bit RQ index with extended codes", path)
        packed = _codes(table, RABIT_CODE, self.code_dim // 8, path)
        codes = np.empty_like(packed)
        for off, n in zip(offsets, lengths):
            codes[off:off + n] = unpack_codes(packed[off:off + n])
        error = _f32(table, ERROR, path) if ERROR in names else np.zeros(0, np.float32)
        ex = np.zeros((0, self.code_dim), np.uint8)
        ex_add = ex_scale = np.zeros(0, np.float32)
        if self.ex_bits:
            width = (self.code_dim + 63) // 64 * 8 * self.ex_bits
            try:
                ex = decode_ex(_codes(table, EX_CODE, width, path), self.ex_bits, self.code_dim)
            except CorruptFileError as e:
                raise CorruptFileError(e.reason, path) from None
            ex_add, ex_scale = _f32(table, EX_ADD, path), _f32(table, EX_SCALE, path)
        return RabitStored(codes, _f32(table, ADD, path), _f32(table, SCALE, path), error, ex,
                           ex_add, ex_scale)

    def query_tables(self, query: np.ndarray):
        """(rotated query, float table, u8 table, its min, its step, sum of the rotated
        query) for one query: the table holds, per 4 rotated dimensions, the sum of the
        query's values over each of the 16 subsets, built in Lance's order."""
        rq = fast_rotate(np.asarray(query, np.float32)[None, :], self.signs, self.code_dim)[0]
        seg = rq.reshape(-1, 4)
        table = np.zeros((seg.shape[0], 16), np.float32)
        for j in range(1, 16):
            low = (j & -j).bit_length() - 1
            table[:, j] = table[:, j & (j - 1)] + seg[:, low]
        table = table.ravel()
        qmin, qmax = np.float32(table.min()), np.float32(table.max())
        rng = np.float32(qmax - qmin)
        factor = np.float32(255.0) / rng if rng else np.float32(np.inf)
        if not (math.isfinite(rng) and math.isfinite(factor)):
            qt = np.zeros(table.size, np.uint8)
        else:
            qt = np.clip(np.rint((table - qmin) * factor), 0, 255).astype(np.uint8)
        step = np.float32(rng / np.float32(255.0))
        sum_q = np.cumsum(rq, dtype=np.float32)[-1]
        return rq, table, qt, float(qmin), float(step), float(sum_q)

    def search(self, stored: RabitStored, probe, centroids, offsets, lengths, row_ids,
               metric: str) -> None:
        """Score the probed partitions of ``probe`` (pylance's order) into its heap."""
        q = np.asarray(probe.query, np.float32)
        rq, table, qt, qmin, step, sum_q = self.query_tables(q)
        gate = self.ex_bits > 0 and stored.error.size > 0
        for part, start, n in probe.partitions(offsets, lengths):
            diff = q - centroids[part].astype(np.float32)
            dqc = float(np.dot(diff, diff))   # L2 (cosine: normalized query, L2 storage)
            qerr = math.sqrt(max(dqc, 0.0)) if gate else 0.0
            got = _ivf.rq_scan(stored.codes, start, n, qt, qmin, step, table, sum_q,
                               stored.add, stored.scale, stored.error, stored.ex,
                               stored.ex_add, stored.ex_scale, self.ex_bits, rq, dqc, qerr,
                               gate, row_ids, probe.mask, probe.use_mask, probe.low,
                               probe.high, probe.top)
            probe.found += min(probe.k, got)

    def statistics(self) -> dict:
        return {"num_bits": self.num_bits, "code_dim": self.code_dim, "index_type": "RQ"}


SUPPORTED_METRICS = (L2, COSINE)
