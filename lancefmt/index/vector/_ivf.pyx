# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, nonecheck=False, cdivision=True
"""Hot loops of an IVF search: PQ distance tables and scans, SQ scans, and a bounded top-k.

A probed partition's rows are scored in one call (PQ: the per-sub-vector table of distances
from the query's residual to every centroid, then one table lookup per code, summed in
sub-vector order as Lance sums them; SQ: integer distances of uint8 codes, scaled back).
:class:`TopK` keeps the ``k`` best rows seen across partitions, ordered by (distance, row id),
so ties break as pylance breaks them; a row mask (deleted rows, a prefilter) and a distance
range are applied as rows are pushed. Callers check every length and offset before calling:
the loops below trust their arguments.
"""
import numpy as np
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.math cimport fabs, isfinite, rintf, sqrt
from libc.string cimport memcpy

from ._lanes cimport dot_f32, l2_f32


def pq_table(const float[::1] query, const float[::1] codebook_t, int m, int ncent, bint dot,
             float[::1] out):
    """``out[j * ncent + c]``: distance of the query's sub-vector ``j`` to centroid ``c`` of
    sub-vector ``j`` (L2, or ``1 - dot``), summed as ``l2_f32`` sums, computed for all
    centroids at once. ``codebook_t`` is the codebook transposed: ``[m][dim / m][ncent]``."""
    cdef Py_ssize_t dim = query.shape[0]
    cdef float* work
    if m <= 0 or dim % m or dim // m > 4096 or codebook_t.shape[0] != dim * ncent or \
            out.shape[0] < m * ncent:
        raise ValueError("PQ table shapes differ")
    work = <float*>malloc(9 * ncent * sizeof(float))
    if work == NULL:
        raise MemoryError()
    with nogil:
        table_core(&query[0], dim, &codebook_t[0], m, ncent, dot, &out[0], work)
    free(work)


cdef extern from "index/vector/pq_simd.h":
    void lancefmt_pq_table(const float *query, Py_ssize_t dim, const float *codebook_t,
                           Py_ssize_t m, Py_ssize_t ncent, int dot, float *out, float *work) nogil


cdef void table_core(const float* query, Py_ssize_t dim, const float* codebook_t, int m,
                     int ncent, bint dot, float* out, float* work) noexcept nogil:
    """:func:`pq_table` on raw buffers; ``work`` holds ``9 * ncent`` floats. Sub-vectors of at
    most 16 values go to the C kernel of ``pq_simd.h`` (pylance 14's summation order)."""
    if dim // m > 16:
        _pq_table_long(query, dim, codebook_t, m, ncent, dot, out)
        return
    lancefmt_pq_table(query, dim, codebook_t, m, ncent, dot, out, work)


cdef void _pq_table_long(const float* query, Py_ssize_t dim, const float* codebook_t, int m,
                         int ncent, bint dot, float* out) noexcept nogil:
    """Sub-vectors of more than 16 values: one centroid at a time, 16 lanes."""
    cdef Py_ssize_t sub = dim // m, j, c, i
    cdef float buf[4096]
    cdef float v
    if sub > 4096:
        return
    for j in range(m):
        for c in range(ncent):
            for i in range(sub):
                buf[i] = codebook_t[(j * sub + i) * ncent + c]
            if dot:
                v = 1.0 - dot_f32(&query[j * sub], buf, sub)
            else:
                v = l2_f32(&query[j * sub], buf, sub)
            out[j * ncent + c] = v


def pq_scan(const float[::1] table, const uint8_t[::1] codes, Py_ssize_t start, Py_ssize_t n,
            int m, int nbits, float[::1] out):
    """Distances of rows ``start .. start + n`` whose codes are stored transposed from byte
    ``start * width``: for each code byte column, ``n`` bytes (``width`` = m, or m / 2 at 4
    bits: low nibble sub-vector 2b, high nibble 2b + 1)."""
    cdef Py_ssize_t width = m if nbits == 8 else m // 2
    if codes.shape[0] < start * width + n * width or out.shape[0] < n or \
            table.shape[0] < m * (1 << nbits):
        raise ValueError("PQ codes shorter than the partition")
    with nogil:
        scan_core(&table[0], &codes[0], start, n, m, nbits, &out[0])


cdef void scan_core(const float* table, const uint8_t* codes, Py_ssize_t start, Py_ssize_t n,
                    int m, int nbits, float* out) noexcept nogil:
    cdef Py_ssize_t width = m if nbits == 8 else m // 2, b, i
    cdef const uint8_t* col
    cdef uint8_t v
    for i in range(n):
        out[i] = 0.0
    cdef Py_ssize_t b4 = m - m % 4
    cdef const uint8_t* c0
    cdef const uint8_t* c1
    cdef const uint8_t* c2
    cdef const uint8_t* c3
    cdef const float* t0
    cdef float o
    if nbits == 8:
        # four sub-vectors per pass over the rows, still added in sub-vector order
        for b in range(0, b4, 4):
            c0 = &codes[start * width + b * n]
            c1 = c0 + n
            c2 = c1 + n
            c3 = c2 + n
            t0 = &table[b * 256]
            for i in range(n):
                o = out[i]
                o += t0[c0[i]]
                o += t0[256 + c1[i]]
                o += t0[512 + c2[i]]
                o += t0[768 + c3[i]]
                out[i] = o
        for b in range(b4, m):
            col = &codes[start * width + b * n]
            for i in range(n):
                out[i] += table[b * 256 + col[i]]
    else:
        for b in range(width):
            col = &codes[start * width + b * n]
            for i in range(n):
                v = col[i]
                out[i] += table[(2 * b) * 16 + (v & 15)] + table[(2 * b + 1) * 16 + (v >> 4)]


def sq_scan(const uint8_t[::1] query, const uint8_t[:, ::1] codes, Py_ssize_t start, Py_ssize_t n,
            bint dot, float scale, float[::1] out):
    """Distances of SQ rows ``start .. start + n``: integer L2 (or ``1 - dot``) of the uint8
    codes, times ``scale`` (range^2, then / 255^2, as Lance scales them back)."""
    cdef Py_ssize_t dim = codes.shape[1], i, j
    cdef uint32_t acc
    cdef int d
    if query.shape[0] != dim or codes.shape[0] < start + n or out.shape[0] < n:
        raise ValueError("SQ codes shorter than the partition")
    with nogil:
        for i in range(n):
            acc = 0
            if dot:
                for j in range(dim):
                    acc += <uint32_t>codes[start + i, j] * <uint32_t>query[j]
                out[i] = ((1.0 - <float>acc) * scale) / 65025.0
            else:
                for j in range(dim):
                    d = <int>codes[start + i, j] - <int>query[j]
                    acc += <uint32_t>(d * d)
                out[i] = (<float>acc * scale) / 65025.0


cdef inline bint worse(float da, uint64_t ia, float db, uint64_t ib) noexcept nogil:
    """Whether (da, ia) ranks after (db, ib)."""
    return da > db or (da == db and ia > ib)


cdef class TopK:
    """The ``k`` best (distance, row id) pairs pushed so far (a max-heap on the worst)."""
    cdef float[::1] d
    cdef uint64_t[::1] ids
    cdef int64_t[::1] pos
    cdef Py_ssize_t k, n
    cdef public Py_ssize_t seen

    def __init__(self, Py_ssize_t k):
        self.k = max(k, 1)
        self.n = 0
        self.seen = 0
        self.d = np.empty(self.k, np.float32)
        self.ids = np.empty(self.k, np.uint64)
        self.pos = np.empty(self.k, np.int64)

    cdef void _sift_down(self, Py_ssize_t i) noexcept nogil:
        cdef Py_ssize_t c, best
        cdef float td
        cdef uint64_t ti
        cdef int64_t tp
        while True:
            best = i
            c = 2 * i + 1
            if c < self.n and worse(self.d[c], self.ids[c], self.d[best], self.ids[best]):
                best = c
            c += 1
            if c < self.n and worse(self.d[c], self.ids[c], self.d[best], self.ids[best]):
                best = c
            if best == i:
                return
            td = self.d[i]; ti = self.ids[i]; tp = self.pos[i]
            self.d[i] = self.d[best]; self.ids[i] = self.ids[best]; self.pos[i] = self.pos[best]
            self.d[best] = td; self.ids[best] = ti; self.pos[best] = tp
            i = best

    cdef void _push(self, float d, uint64_t rid, int64_t p) noexcept nogil:
        cdef Py_ssize_t i, parent
        cdef float td
        cdef uint64_t ti
        cdef int64_t tp
        if self.n < self.k:
            i = self.n
            self.n += 1
            self.d[i] = d; self.ids[i] = rid; self.pos[i] = p
            while i > 0:
                parent = (i - 1) // 2
                if not worse(self.d[i], self.ids[i], self.d[parent], self.ids[parent]):
                    break
                td = self.d[i]; ti = self.ids[i]; tp = self.pos[i]
                self.d[i] = self.d[parent]; self.ids[i] = self.ids[parent]; self.pos[i] = self.pos[parent]
                self.d[parent] = td; self.ids[parent] = ti; self.pos[parent] = tp
                i = parent
        elif worse(self.d[0], self.ids[0], d, rid):
            self.d[0] = d; self.ids[0] = rid; self.pos[0] = p
            self._sift_down(0)

    def push(self, const float[::1] dist, const uint64_t[::1] row_ids, Py_ssize_t start,
             const uint8_t[::1] mask, bint use_mask, double lo, double hi):
        """Push rows ``start .. start + len(dist)`` (``row_ids``/``mask`` are indexed by that
        position); rows masked out, NaN, or outside ``[lo, hi)`` are skipped. Returns how
        many rows were eligible."""
        cdef Py_ssize_t n = dist.shape[0], i
        cdef Py_ssize_t count = 0
        cdef float v
        if row_ids.shape[0] < start + n or (use_mask and mask.shape[0] < start + n):
            raise ValueError("row ids shorter than the partition")
        with nogil:
            for i in range(n):
                if use_mask and not mask[start + i]:
                    continue
                v = dist[i]
                if v != v or v < lo or v >= hi:
                    continue
                count += 1
                self._push(v, row_ids[start + i], start + i)
        self.seen += count
        return count

    def result(self):
        """(row ids, distances, positions) ranked by (distance, row id)."""
        d = np.asarray(self.d[:self.n]).copy()
        ids = np.asarray(self.ids[:self.n]).copy()
        pos = np.asarray(self.pos[:self.n]).copy()
        order = np.lexsort((ids, d))
        return ids[order], d[order], pos[order]


def pq_search(const float[::1] query, const int64_t[::1] order, Py_ssize_t lo, Py_ssize_t hi,
              Py_ssize_t k, const float[:, ::1] centroids, const float[::1] codebook_t, int m,
              int nbits, const uint8_t[::1] codes, const int64_t[::1] offsets,
              const int64_t[::1] lengths, const uint64_t[::1] row_ids, const uint8_t[::1] mask,
              bint use_mask, bint residual, bint dot, double dlo, double dhi, TopK top):
    """One IVF_PQ query in one call, without the GIL: partitions ``order[:hi]`` in order, at
    least ``lo`` of them and more while fewer than ``k`` rows were found; each one's table
    (of the query's residual to its centroid, for L2) and scan, pushed into ``top``.
    Returns (partitions probed, rows found). Offsets and lengths must have been checked
    against ``codes`` and ``row_ids`` (a loaded index does at load)."""
    cdef Py_ssize_t dim = query.shape[0], ncent = 1 << nbits, i, p, n, start, j, maxlen = 0
    cdef Py_ssize_t probed = 0, found = 0, got, nparts = offsets.shape[0]
    cdef float* table
    cdef float* work
    cdef float* resid
    cdef float* dist
    cdef float v, diff = <float>(m - 1)
    cdef const float* qp
    if hi > order.shape[0] or centroids.shape[1] != dim or lengths.shape[0] != nparts or \
            codebook_t.shape[0] != dim * ncent or m <= 0 or dim % m or dim // m > 4096:
        raise ValueError("PQ search shapes differ")
    for i in range(hi):
        p = order[i]
        if p < 0 or p >= nparts or p >= centroids.shape[0]:
            raise ValueError("partition out of range")
        if lengths[p] > maxlen:
            maxlen = lengths[p]
    table = <float*>malloc(m * ncent * sizeof(float))
    work = <float*>malloc(9 * ncent * sizeof(float))
    resid = <float*>malloc(dim * sizeof(float))
    dist = <float*>malloc((maxlen + 1) * sizeof(float))
    if table == NULL or work == NULL or resid == NULL or dist == NULL:
        free(table); free(work); free(resid); free(dist)
        raise MemoryError()
    with nogil:
        for i in range(hi):
            if i >= lo and found >= k:
                break
            p = order[i]
            probed += 1
            n = lengths[p]
            if n <= 0:
                continue
            start = offsets[p]
            qp = &query[0]
            if residual:
                for j in range(dim):
                    resid[j] = query[j] - centroids[p, j]
                qp = resid
            table_core(qp, dim, &codebook_t[0], m, ncent, dot, table, work)
            scan_core(table, &codes[0], start, n, m, nbits, dist)
            got = 0
            for j in range(n):
                if use_mask and not mask[start + j]:
                    continue
                v = dist[j] - diff if dot else dist[j]
                if v != v or v < dlo or v >= dhi:
                    continue
                got += 1
                if top.n == top.k and v > top.d[0]:  # worse than the k-th: no heap work
                    continue
                top._push(v, row_ids[start + j], start + j)
            top.seen += got
            found += got if got < k else k
    free(table); free(work); free(resid); free(dist)
    return probed, found


cdef inline float ex_dot(const float* q, const uint8_t* e, Py_ssize_t dim) noexcept nogil:
    """``sum q[j] * e[j]`` in 16 lanes (``j mod 16``, as Lance's kernels sum), then the lanes
    pairwise: a fixed order the compiler vectorizes."""
    cdef float acc[16]
    cdef Py_ssize_t j, l, body = dim - dim % 16
    for l in range(16):
        acc[l] = 0
    j = 0
    while j < body:
        for l in range(16):
            acc[l] += q[j + l] * <float>e[j + l]
        j += 16
    for j in range(body, dim):
        acc[j - body] += q[j] * <float>e[j]
    for l in range(8):
        acc[l] += acc[l + 8]
    for l in range(4):
        acc[l] += acc[l + 4]
    return (acc[0] + acc[2]) + (acc[1] + acc[3])


cdef void _fwht(float* x, Py_ssize_t n) noexcept nogil:
    """Walsh-Hadamard butterflies in place (``n`` a power of two), numpy's order in rabitq."""
    cdef Py_ssize_t h = 1, b, i
    cdef float a, c
    while h < n:
        b = 0
        while b < n:
            for i in range(b, b + h):
                a = x[i]
                c = x[i + h]
                x[i] = a + c
                x[i + h] = a - c
            b += 2 * h
        h *= 2


def rq_prepare(const float[::1] query, const uint8_t[::1] signs, float[::1] rq,
               float[::1] table, uint8_t[::1] qtable):
    """One query's rotation (Lance's fast rotation: four rounds of sign flips and scaled
    Walsh-Hadamard transforms, as :func:`rabitq.fast_rotate` computes it), its table of
    subset sums per 4 rotated dimensions and that table quantized to u8 as pylance does.
    Returns (qmin, step, sum of the rotated query), each a float32 value."""
    cdef Py_ssize_t code_dim = rq.shape[0], dim = query.shape[0], per, trunc, half, r, i, j
    cdef Py_ssize_t lo, ntab = code_dim * 4, low
    cdef float scale, a, b, qmin, qmax, rng, factor, sum_q = 0, v
    cdef int bit
    per = (code_dim + 7) // 8
    if code_dim <= 0 or code_dim % 4 or signs.shape[0] < 4 * per or table.shape[0] < ntab or \
            qtable.shape[0] < ntab:
        raise ValueError("RQ query shapes differ")
    trunc = 1
    while trunc * 2 <= code_dim:
        trunc *= 2
    scale = <float>1.0 / <float>sqrt(<float>trunc)
    with nogil:
        for i in range(code_dim):
            rq[i] = query[i] if i < dim else 0
        for r in range(4):
            for i in range(code_dim):
                j = r * per * 8 + i
                bit = (signs[j >> 3] >> (j & 7)) & 1
                rq[i] = rq[i] * (<float>1.0 - <float>2.0 * <float>bit)
            lo = 0 if trunc == code_dim or r % 2 == 0 else code_dim - trunc
            _fwht(&rq[lo], trunc)
            for i in range(lo, lo + trunc):
                rq[i] = rq[i] * scale
            if trunc != code_dim:
                half = code_dim // 2
                for i in range(half):
                    a = rq[i]
                    b = rq[i + half]
                    rq[i] = a + b
                    rq[i + half] = a - b
        if trunc != code_dim:
            for i in range(code_dim):
                rq[i] = rq[i] * <float>0.25
        for i in range(0, code_dim, 4):
            table[4 * i] = 0
            for j in range(1, 16):
                low = 0
                while not (j >> low) & 1:
                    low += 1
                table[4 * i + j] = table[4 * i + (j & (j - 1))] + rq[i + low]
        qmin = table[0]
        qmax = table[0]
        for i in range(ntab):
            if table[i] != table[i]:    # NaN: numpy's min and max are NaN
                qmin = table[i]
                qmax = table[i]
                break
            if table[i] < qmin:
                qmin = table[i]
            if table[i] > qmax:
                qmax = table[i]
        rng = qmax - qmin
        factor = <float>255.0 / rng if rng != 0 else <float>1e39
        for i in range(ntab):
            if not (isfinite(rng) and isfinite(factor)):
                qtable[i] = 0
            else:
                v = rintf((table[i] - qmin) * factor)
                qtable[i] = 0 if v < 0 else (255 if v > 255 else <uint8_t>v)
        for i in range(code_dim):
            sum_q = sum_q + rq[i]
    return qmin, <float>(rng / <float>255.0), sum_q


def rq_scan(const uint8_t[:, ::1] codes, Py_ssize_t start, Py_ssize_t n,
            const uint8_t[::1] qtable, float qmin, float qrange, const float[::1] table,
            float sum_q, const float[::1] add, const float[::1] scale, const float[::1] err,
            const uint8_t[:, ::1] ex, const float[::1] ex_add, const float[::1] ex_scale,
            int ex_bits, const float[::1] rq, float am, float qf, float qerr, bint gate,
            const uint64_t[::1] row_ids, const uint8_t[::1] mask, bint use_mask,
            double dlo, double dhi, TopK top):
    """Score rows ``start .. start + n`` (one IVF_RQ partition) into ``top`` as pylance 14
    does: the binary inner product from the u8-quantized table for whole blocks of 32 rows
    (the float table for the rest), the 1-bit estimate, or with ``ex_bits`` the extended
    estimate, skipped (``gate``) when its lower bound cannot beat the heap. ``codes`` are
    row-major bits (LSB first), ``ex`` one code per rotated dimension. A row's add factor
    enters times ``am`` (1 for L2; pylance's dot estimate weighs it by q.c), then ``qf``
    is added. Returns rows found."""
    cdef Py_ssize_t L = codes.shape[1], dim = rq.shape[0], blocks = n - n % 32
    cdef Py_ssize_t i, j, r, got = 0
    cdef unsigned int qsum
    cdef float bip, v, lb, exd, half = 0.5 * sum_q
    cdef float code_scale = <float>(1 << ex_bits), code_bias = -(<float>(1 << ex_bits) - 0.5)
    cdef float sum_min = <float>(2 * L) * qmin
    cdef uint8_t c
    cdef const uint8_t* row
    cdef uint16_t* btab = NULL   # per code byte, its two nibbles' u8 entries summed
    if start < 0 or n < 0 or start + n > codes.shape[0] or row_ids.shape[0] < start + n or \
            add.shape[0] < start + n or scale.shape[0] < start + n or \
            table.shape[0] < 32 * L or qtable.shape[0] < 32 * L or dim < 8 * L or \
            (use_mask and mask.shape[0] < start + n):
        raise ValueError("RQ partition shapes differ")
    if ex_bits and (ex.shape[0] < start + n or ex.shape[1] < dim or ex_add.shape[0] < start + n
                    or ex_scale.shape[0] < start + n):
        raise ValueError("RQ ex-code shapes differ")
    if gate and err.shape[0] < start + n:
        raise ValueError("RQ error factors missing")
    if blocks >= 128 and L:
        btab = <uint16_t*>malloc(L * 256 * sizeof(uint16_t))
        if btab == NULL:
            raise MemoryError()
    with nogil:
        if btab != NULL:
            for j in range(L):
                for i in range(256):
                    btab[256 * j + i] = qtable[32 * j + (i & 15)] + qtable[32 * j + 16 + (i >> 4)]
        for i in range(n):
            r = start + i
            if use_mask and not mask[r]:
                continue
            if i < blocks:
                qsum = 0
                row = &codes[r, 0]
                if btab != NULL:
                    for j in range(L):
                        qsum += btab[256 * j + row[j]]
                else:
                    for j in range(L):
                        c = row[j]
                        qsum += qtable[32 * j + (c & 15)] + qtable[32 * j + 16 + (c >> 4)]
                bip = <float>qsum * qrange + sum_min
            else:
                bip = 0
                for j in range(L):
                    c = codes[r, j]
                    bip += table[32 * j + (c & 15)] + table[32 * j + 16 + (c >> 4)]
            if ex_bits == 0:
                v = (bip - half) * scale[r] + add[r] * am + qf
            else:
                if gate:
                    lb = (bip - half) * scale[r] + add[r] * am + qf - err[r] * qerr
                    if lb >= dhi:
                        continue
                    if top.n == top.k and lb >= top.d[0]:
                        got += 1
                        continue
                exd = ex_dot(&rq[0], &ex[r, 0], dim)
                v = (code_scale * bip + exd + code_bias * sum_q) * ex_scale[r] + ex_add[r] * am + qf
            if v != v or v < dlo or v >= dhi:
                continue
            got += 1
            if top.n == top.k and v > top.d[0]:
                continue
            top._push(v, row_ids[r], r)
    free(btab)
    top.seen += got
    return got


cdef extern from "index/vector/rq_simd.h":
    void lancefmt_rq_levels(const float *row, Py_ssize_t dim, int ex_bits, int steps,
                            uint8_t *out) nogil


cdef inline void best_levels_row(const float* row, Py_ssize_t dim, int ex_bits, int steps,
                                 uint8_t* out) noexcept nogil:
    """One row of :func:`rq_best_levels` (``rq_simd.h``: AVX2 where the CPU has it)."""
    lancefmt_rq_levels(row, dim, ex_bits, steps, out)


def rq_best_levels(const float[:, ::1] unit, int ex_bits, int steps, uint8_t[:, ::1] out):
    """Per row of ``unit`` (absolute rotated residuals over their maximum), the magnitudes
    ``k`` (0 .. 2^ex_bits - 1) whose codes ``k + 0.5`` have the largest cosine with the row,
    over ``steps`` scales ``t`` in [0.5, 2^ex_bits]: ``k = min(floor(t * unit), top)``. The
    sums run in float, 8 lanes (vectorized); the first best scale wins."""
    cdef Py_ssize_t n = unit.shape[0], dim = unit.shape[1], i
    if out.shape[0] < n or out.shape[1] < dim or steps < 2:
        raise ValueError("RQ level shapes differ")
    with nogil:
        for i in range(n):
            best_levels_row(&unit[i, 0], dim, ex_bits, steps, &out[i, 0])


def rq_encode(const double[:, ::1] pr, const double[:, ::1] pc, const double[::1] r2,
              int ex_bits, bint dot, double error_bound, uint8_t[:, ::1] out):
    """Each row's RaBitQ code in one pass (no temporaries): from its rotated residual ``pr``,
    its centroid rotated ``pc`` and ``|r|^2``, the sign bits (LSB first), the extended codes
    (levels by :func:`best_levels_row` over ``|pr| / max |pr|``; ``k`` for a positive value,
    ``top - k`` otherwise) and Lance's raw-query factors (add, scale, error, ex add, ex scale)
    as float32 bytes: L2 weighs the residual term 2 and adds from ``|r|^2``, dot weighs it 1
    and adds from ``1 - r.c``. Sums in float64, as numpy did."""
    cdef Py_ssize_t n = pr.shape[0], dim = pr.shape[1], i, j, b, nb = dim // 8
    cdef Py_ssize_t width = nb + (dim if ex_bits else 0) + 20
    cdef int top = (1 << ex_bits) - 1, steps = 4 * (1 << ex_bits)
    cdef double w = 1.0 if dot else 2.0, ip, spc, prpc, scale, a, err, base, add, m, x, uu
    cdef double uip, upc, ex_add, ex_scale, sd = sqrt(<double>dim), sd1 = sqrt(<double>(dim - 1 if dim > 1 else 1))
    cdef float f[5]
    cdef float* unit
    cdef uint8_t* lev
    cdef uint8_t* o
    cdef uint8_t byte
    if dim % 8 or pc.shape[0] != n or pc.shape[1] != dim or r2.shape[0] != n or \
            out.shape[0] != n or out.shape[1] != width:
        raise ValueError("RQ encode shapes differ")
    unit = <float*>malloc(dim * sizeof(float))
    lev = <uint8_t*>malloc(dim)
    if unit == NULL or lev == NULL:
        free(unit)
        free(lev)
        raise MemoryError()
    with nogil:
        for i in range(n):
            o = &out[i, 0]
            ip = 0
            spc = 0
            prpc = 0
            m = 0
            for j in range(dim):
                x = pr[i, j]
                if x > 0:
                    ip += x
                    spc += pc[i, j]
                else:
                    ip -= x
                    spc -= pc[i, j]
                prpc += x * pc[i, j]
                if fabs(x) > m:
                    m = fabs(x)
            for j in range(nb):
                byte = 0
                for b in range(8):
                    if pr[i, 8 * j + b] > 0:
                        byte |= <uint8_t>(1 << b)
                o[j] = byte
            scale = -2.0 * w * r2[i] / ip if ip != 0 else 0.0
            a = ip / (sd * sqrt(r2[i]))
            err = w * error_bound * sqrt(r2[i]) * sqrt(max(1 - a * a, 0.0)) / fabs(a) / sd1 \
                if fabs(a) > 0 else 0.0
            base = 1.0 - prpc if dot else r2[i]
            add = base - 0.5 * scale * spc
            ex_add = 0
            ex_scale = 0
            if ex_bits:
                if m == 0:
                    m = 1
                for j in range(dim):
                    unit[j] = <float>(fabs(pr[i, j]) / m)
                best_levels_row(unit, dim, ex_bits, steps, lev)
                uip = 0
                upc = 0
                for j in range(dim):
                    uu = lev[j] + 0.5
                    if pr[i, j] > 0:
                        o[nb + j] = lev[j]
                    else:
                        o[nb + j] = <uint8_t>(top - lev[j])
                        uu = -uu
                    uip += uu * pr[i, j]
                    upc += uu * pc[i, j]
                ex_scale = -w * r2[i] / uip if uip != 0 else 0.0
                ex_add = base - ex_scale * upc
            f[0] = <float>add
            f[1] = <float>scale
            f[2] = <float>err
            f[3] = <float>ex_add
            f[4] = <float>ex_scale
            memcpy(&o[width - 20], f, 20)
    free(unit)
    free(lev)
