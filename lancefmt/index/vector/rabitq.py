"""The RaBitQ quantizer of IVF_RQ indices, as pylance 14 writes it (read, search, build).

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
that distances and ties come out as pylance's. Dot indices store Lance's dot factors and are
scored with pylance 14's dot estimate (:func:`_dot_terms`).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, InvalidArgumentError, NotSupportedError
from . import _ivf
from .distance import COSINE, DOT, L2, distances
from .ivf import in_parallel

RABIT_CODE = "_rabit_codes"
ADD = "__add_factors"
SCALE = "__scale_factors"
ERROR = "__error_factors"
EX_CODE = "__blocked_ex_codes"
EX_ADD = "__add_factors_ex"
EX_SCALE = "__scale_factors_ex"
ROUNDS = 4
_PERM0 = np.array([0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15])
_EX_BITS = tuple(range(9))   # extended bits per dimension (num_bits 1 .. 9)


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
    flips = np.unpackbits(signs, bitorder="little").reshape(ROUNDS, per * 8)[:, :code_dim]
    flips = (np.float32(1) - np.float32(2) * flips).astype(np.float32)   # +1 / -1 per dimension
    trunc = 1 << (code_dim.bit_length() - 1)
    scale = np.float32(1.0) / np.sqrt(np.float32(trunc))
    for r in range(ROUNDS):
        out *= flips[r]
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


def _top_bit_order() -> np.ndarray:
    """Bit of a group's 64-bit top plane holding dimension ``16k + b``: ``8(b % 8) + 2k + b // 8``."""
    k, b = np.divmod(np.arange(64), 16)
    return 8 * (b % 8) + 2 * k + b // 8


_TOP = _top_bit_order()


def _unpack_group(g: np.ndarray, ex_bits: int) -> np.ndarray:
    """One 64-dimension group of blocked extended codes (rows x 8 * ex_bits bytes) to one
    code per dimension, in natural order."""
    n = g.shape[0]
    out = np.zeros((n, 64), np.uint8)
    if ex_bits == 8:
        return g.copy()
    if ex_bits == 1:    # LSB first
        return np.unpackbits(g, axis=1, bitorder="little")
    if ex_bits == 4:    # byte 8j+b: dimension 16j+b (low nibble), 16j+b+8 (high)
        v = g.reshape(n, 4, 8)
        o = out.reshape(n, 4, 2, 8)
        o[:, :, 0, :] = v & 15
        o[:, :, 1, :] = v >> 4
        return out
    if ex_bits in (2, 3):   # byte b: dimensions b, b+16, b+32, b+48 at bit pairs
        for k in range(4):
            out[:, 16 * k:16 * k + 16] = (g[:, :16] >> (2 * k)) & 3
    elif ex_bits == 5:      # nibbles of bytes 16(k // 2) + b: dimension 16k + b
        for k in range(4):
            out[:, 16 * k:16 * k + 16] = (g[:, 16 * (k // 2):16 * (k // 2) + 16] >> (4 * (k % 2))) & 15
    else:                   # 6, 7: three 6-bit blocks; the fourth 16 dims in their top bits
        out[:, :48] = g[:, :48] & 63
        out[:, 48:] = (g[:, :16] >> 6) | ((g[:, 16:32] >> 6) << 2) | ((g[:, 32:48] >> 6) << 4)
    if ex_bits in (3, 5, 7):   # the top bit of every code in a 64-bit plane after the rest
        start = {3: 16, 5: 32, 7: 48}[ex_bits]
        bits = np.unpackbits(g[:, start:start + 8], axis=1, bitorder="little")
        out |= bits[:, _TOP] << (ex_bits - 1)
    return out


def _pack_group(c: np.ndarray, ex_bits: int) -> np.ndarray:
    """Inverse of :func:`_unpack_group`."""
    n = c.shape[0]
    if ex_bits == 8:
        return c.copy()
    if ex_bits == 1:
        return np.packbits(c, axis=1, bitorder="little")
    if ex_bits == 4:
        v = c.reshape(n, 4, 2, 8)
        return np.ascontiguousarray((v[:, :, 0, :] | (v[:, :, 1, :] << 4)).reshape(n, 32))
    out = np.zeros((n, 8 * ex_bits), np.uint8)
    top_bit = ex_bits - 1 if ex_bits in (3, 5, 7) else None
    low = c & ((1 << top_bit) - 1) if top_bit is not None else c
    if ex_bits in (2, 3):
        for k in range(4):
            out[:, :16] |= low[:, 16 * k:16 * k + 16] << (2 * k)
    elif ex_bits == 5:
        for k in range(4):
            out[:, 16 * (k // 2):16 * (k // 2) + 16] |= low[:, 16 * k:16 * k + 16] << (4 * (k % 2))
    else:
        out[:, :48] = low[:, :48]
        for k in range(3):
            out[:, 16 * k:16 * k + 16] |= ((low[:, 48:] >> (2 * k)) & 3) << 6
    if top_bit is not None:
        bits = np.zeros((n, 64), np.uint8)
        bits[:, _TOP] = (c >> top_bit) & 1
        start = {3: 16, 5: 32, 7: 48}[ex_bits]
        out[:, start:start + 8] = np.packbits(bits, axis=1, bitorder="little")
    return out


def decode_ex(blocked: np.ndarray, ex_bits: int, code_dim: int) -> np.ndarray:
    """Blocked extended codes (64 dimensions per block) to one uint8 per dimension."""
    n = blocked.shape[0]
    groups = (code_dim + 63) // 64
    if blocked.shape[1] != groups * 8 * ex_bits:
        raise CorruptFileError(f"{EX_CODE} rows of {blocked.shape[1]} bytes, {code_dim} "
                               f"dimensions of {ex_bits} bits need {groups * 8 * ex_bits}")
    w = 8 * ex_bits
    out = np.concatenate([_unpack_group(np.ascontiguousarray(blocked[:, w * i:w * (i + 1)]), ex_bits)
                          for i in range(groups)], axis=1)
    return np.ascontiguousarray(out[:, :code_dim])


def encode_ex(codes: np.ndarray, ex_bits: int) -> np.ndarray:
    """Extended codes (one per dimension) in the blocked layout (inverse of :func:`decode_ex`)."""
    n, dim = codes.shape
    groups = (dim + 63) // 64
    c = np.zeros((n, groups * 64), np.uint8)
    c[:, :dim] = codes
    return np.ascontiguousarray(np.concatenate(
        [_pack_group(c[:, 64 * i:64 * (i + 1)], ex_bits) for i in range(groups)], axis=1))


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
            raise CorruptFileError(f"RQ num_bits {num_bits} is not 1 to 9", path)
        if not 0 < code_dim <= 1 << 16 or code_dim % 8 or code_dim < dim:
            raise CorruptFileError(f"RQ code_dim {code_dim} for vectors of dimension {dim}", path)
        if not isinstance(signs, list) or len(signs) != ROUNDS * code_dim // 8 or \
                not all(isinstance(s, int) and 0 <= s < 256 for s in signs):
            raise CorruptFileError("RQ fast_rotation_signs are not "
                                   f"{ROUNDS * code_dim // 8} bytes", path)
        return cls(dim, code_dim, num_bits, np.array(signs, np.uint8), meta)

    @classmethod
    def train(cls, dim: int, num_bits: int, seed=None, signs=None) -> "RabitQuantizer":
        """A fresh model: random rotation signs (seeded) unless ``signs`` (an existing
        model's, to encode more rows alike) are given; nothing is learnt from the data."""
        if dim % 8:
            raise InvalidArgumentError("vector dimension must be divisible by 8 for IVF_RQ, "
                                       f"got {dim}")
        if int(num_bits) - 1 not in _EX_BITS:
            raise InvalidArgumentError(f"IVF_RQ num_bits must be 1 to 9, got {num_bits}")
        if signs is None:
            signs = np.random.default_rng(seed).integers(0, 256, ROUNDS * dim // 8)
        signs = np.asarray(signs, np.uint8)
        if signs.shape != (ROUNDS * dim // 8,):
            raise InvalidArgumentError(f"rq_signs must be {ROUNDS * dim // 8} bytes")
        meta = {"rotate_mat_position": None, "fast_rotation_signs": signs.tolist(),
                "rotation_type": "fast", "code_dim": dim, "num_bits": int(num_bits),
                "packed": True, "query_estimator": "raw_query"}
        return cls(dim, dim, int(num_bits), signs, meta)

    @property
    def row_width(self) -> int:
        return self.code_dim // 8 + (self.code_dim if self.ex_bits else 0) + 20

    def rotation_matrix(self) -> np.ndarray:
        """The fast rotation as a matrix (it is linear), for encoding many rows by BLAS."""
        m = getattr(self, "_matrix", None)
        if m is None:
            eye = np.eye(self.code_dim, dtype=np.float64)
            m = self._matrix = fast_rotate(eye, self.signs, self.code_dim).astype(np.float64)
        return m

    def rotated(self, centroids: np.ndarray) -> np.ndarray:
        return fast_rotate(np.asarray(centroids, np.float32), self.signs, self.code_dim)

    def storage_metadata(self, buffer_index=None) -> str:
        return json.dumps(self.meta, separators=(",", ":"))

    def use_residual(self, metric: str) -> bool:
        return False

    def params(self) -> dict:
        return {"num_bits": self.num_bits, "rq_signs": self.signs}

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
        query's values over each of the 16 subsets, built in Lance's order (in Cython:
        :func:`_ivf.rq_prepare`, the same float32 steps as :func:`fast_rotate`)."""
        rq = np.empty(self.code_dim, np.float32)
        table = np.empty(self.code_dim * 4, np.float32)
        qt = np.empty(self.code_dim * 4, np.uint8)
        qmin, step, sum_q = _ivf.rq_prepare(np.ascontiguousarray(query, np.float32), self.signs,
                                            rq, table, qt)
        return rq, table, qt, qmin, step, sum_q

    def search(self, stored: RabitStored, probe, centroids, offsets, lengths, row_ids,
               metric: str) -> None:
        """Score the probed partitions of ``probe`` (pylance's order) into its heap."""
        q = np.asarray(probe.query, np.float32)
        rq, table, qt, qmin, step, sum_q = self.query_tables(q)
        gate = self.ex_bits > 0 and stored.error.size > 0
        cents = np.asarray(centroids, np.float32)
        if metric == DOT:
            ams, qfs, qerrs = _dot_terms(q, cents, gate)
        else:   # L2 (cosine: normalized query, L2 storage), by Lance's float32 kernel
            qfs = distances(q, cents, L2)
            ams = np.ones_like(qfs)
            qerrs = np.sqrt(np.maximum(qfs, 0)) if gate else np.zeros_like(qfs)
        for part, start, n in probe.partitions(offsets, lengths):
            am, qf, qerr = float(ams[part]), float(qfs[part]), float(qerrs[part])
            got = _ivf.rq_scan(stored.codes, start, n, qt, qmin, step, table, sum_q,
                               stored.add, stored.scale, stored.error, stored.ex,
                               stored.ex_add, stored.ex_scale, self.ex_bits, rq, am, qf, qerr,
                               gate, row_ids, probe.mask, probe.use_mask, probe.low,
                               probe.high, probe.top)
            probe.found += min(probe.k, got)

    def statistics(self) -> dict:
        """pylance's ``sub_index`` statistics: the storage metadata and the type."""
        return {**self.meta, "index_type": "RQ"}


SUPPORTED_METRICS = (L2, COSINE, DOT)


def _dot_terms(q: np.ndarray, centroids: np.ndarray, gate: bool) -> tuple:
    """(add weights, query terms, query errors) of every partition of a dot index, as
    pylance 14 scores them. With ``t = dist(q, c) - 1 = -q.c`` (float32) a row scores
    ``(bip - sum_q / 2) * scale + add * (-t) + (1 + 2t)`` (its ex estimate alike), and the
    lower bound that gates the ex estimate subtracts ``error * |q - (q.c) c|`` (c: a unit
    centroid). Neither is in Lance's published source (which adds ``add - q.c`` and
    ``|q - c|``); both were fitted to pylance 14's distances (to 1e-4) and answers."""
    t = distances(q, centroids, DOT) - np.float32(1)
    if gate:
        q64 = q.astype(np.float64)
        qc = centroids.astype(np.float64) @ q64
        qerr = np.sqrt(np.maximum(float(q64 @ q64) - qc * qc, 0.0))
    else:
        qerr = np.zeros(t.size)
    return -t, np.float32(1) + np.float32(2) * t, qerr


# -- building -----------------------------------------------------------------------------------
# Rows of a built (or re-written) segment travel as one uint8 matrix, so that ordering and
# remapping treat them like any quantizer's codes: the sign bits (code_dim / 8 bytes), the
# extended code of every dimension (code_dim bytes, none for 1 bit), then five float32
# factors (add, scale, error, extended add, extended scale).
ERROR_BOUND = 1.9   # RaBitQ's confidence multiplier; pylance's error factors use 2 x 1.9


def pack_codes(rows: np.ndarray) -> np.ndarray:
    """One partition's binary codes in the FastScan layout (inverse of :func:`unpack_codes`)."""
    n, width = rows.shape
    blocks = n // 32
    out = np.empty_like(rows)
    if blocks:
        b = rows[:blocks * 32].reshape(blocks, 32, width)
        lo, hi = b & 15, b >> 4
        packed = out[:blocks * 32].reshape(blocks, width, 32)
        packed[:, :, :16] = (lo[:, _PERM0, :] | (lo[:, _PERM0 + 16, :] << 4)).transpose(0, 2, 1)
        packed[:, :, 16:] = (hi[:, _PERM0, :] | (hi[:, _PERM0 + 16, :] << 4)).transpose(0, 2, 1)
    rest = n - blocks * 32
    if rest:
        out[blocks * 32:] = rows[blocks * 32:].T.reshape(rest, width)
    return out


def encode_rows(quantizer: "RabitQuantizer", residuals: np.ndarray,
                rotated_centroids: np.ndarray, metric: str = L2) -> np.ndarray:
    """The row matrix (see above) of ``residuals`` to centroids whose rotations are given.
    The factors are Lance's raw-query ones: for L2 they estimate |q - v|^2, for dot
    1 - q.v (hence ``1 - r.c`` in the add factors, and half the scales and errors). The
    rotation is one BLAS product; the rest is :func:`_ivf.rq_encode`, over the CPU's threads."""
    q = quantizer
    r = np.asarray(residuals, np.float32)
    pr = np.ascontiguousarray(r.astype(np.float64) @ q.rotation_matrix()[:r.shape[1]])
    pc = np.ascontiguousarray(rotated_centroids, np.float64)
    r64 = r.astype(np.float64)
    r2 = np.ascontiguousarray(np.einsum("ij,ij->i", r64, r64))
    out = np.empty((r.shape[0], q.row_width), np.uint8)
    in_parallel(r.shape[0], lambda a, b: _ivf.rq_encode(pr[a:b], pc[a:b], r2[a:b], q.ex_bits,
                                                        metric == DOT, ERROR_BOUND, out[a:b]))
    return out


def rows_table(quantizer: "RabitQuantizer", row_ids, rows: np.ndarray, offsets, lengths) -> pa.Table:
    """``auxiliary.idx``'s table for rows (the matrix above) in partition order."""
    q = quantizer
    width = q.code_dim // 8
    n = rows.shape[0]
    bits = np.empty((n, width), np.uint8)
    for off, ln in zip(offsets, lengths):
        bits[off:off + ln] = pack_codes(rows[off:off + ln, :width])
    factors = np.ascontiguousarray(rows[:, -20:]).view(np.float32).reshape(n, 5)

    def fsl(values, size):
        return pa.FixedSizeListArray.from_arrays(pa.array(values.ravel(), pa.uint8()), size)
    cols = {ROW_ID_COLUMN: pa.array(row_ids, pa.uint64()), RABIT_CODE: fsl(bits, width),
            ADD: pa.array(factors[:, 0]), SCALE: pa.array(factors[:, 1]), ERROR: pa.array(factors[:, 2])}
    if q.ex_bits:
        blocked = encode_ex(rows[:, width:width + q.code_dim], q.ex_bits)
        cols.update({EX_CODE: fsl(blocked, blocked.shape[1]), EX_ADD: pa.array(factors[:, 3]),
                     EX_SCALE: pa.array(factors[:, 4])})
    return pa.table(cols)


def stored_rows(stored: RabitStored, ex_bits: int) -> np.ndarray:
    """The row matrix of a loaded segment (storage order), for a re-write."""
    n = stored.codes.shape[0]
    zeros = np.zeros(n, np.float32)
    err = stored.error if stored.error.size else zeros
    ex_add = stored.ex_add if ex_bits else zeros
    ex_scale = stored.ex_scale if ex_bits else zeros
    factors = np.stack([stored.add, stored.scale, err, ex_add, ex_scale], axis=1).astype(np.float32)
    parts = [stored.codes] + ([stored.ex] if ex_bits else [])
    parts.append(factors.view(np.uint8).reshape(n, 20))
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


ROW_ID_COLUMN = "_rowid"
