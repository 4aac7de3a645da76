# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernels of the FTS index's posting lists (format version 2, as pylance 14 writes them).

A token's documents are cut into blocks of 128. A full block is ``[f32 block max score][u32
first doc][u8 bits][128 doc deltas, BitPacker4x][u8 bits][128 frequencies, BitPacker4x]``;
the last, shorter block is ``[f32 max score][doc deltas as varints, the first absolute]
[frequencies as varints]``. BitPacker4x packs 128 u32 in four interleaved lanes (value ``i``
in lane ``i % 4``, slot ``i / 4``; each lane's 32 values little-endian bit after bit, and the
lanes' 32-bit words interleaved), ``bits * 16`` bytes.

Impacts (block-max skip data) are one entry per block, then one per 32 blocks: ``[varint last
doc][varint pair count][pairs]``, the pairs being the block's (frequency, document length)
Pareto frontier with lengths quantized to a byte (Lucene's SmallFloat-like code), each pair a
varint ``(freq delta - 1) << 1 | explicit`` and, when ``explicit``, one byte of norm delta
(a delta of 1 is implied).

Positions (``shared_stream_v2`` / ``packed_delta_v1``): per block, each document's positions
as deltas (the first absolute), all of the block's deltas in groups of 128 (``[u8 bits]
[BitPacker4x]``) and the rest as varints; blocks are concatenated and their offsets kept.

Scores are BM25 with Lance's float32 arithmetic (k1 = 1.2, b = 0.75). Every decoder checks
each length and offset and raises ValueError; callers name the file.
"""
from libc.math cimport logf
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

import numpy as np

cimport numpy as cnp

cnp.import_array()

DEF BLOCK = 128
DEF LEVEL1_BLOCKS = 32
cdef float K1 = 1.2
cdef float B = 0.75


cdef struct ByteBuf:
    uint8_t* data
    Py_ssize_t n
    Py_ssize_t cap


cdef int bb_reserve(ByteBuf* b, Py_ssize_t extra) except -1 nogil:
    cdef Py_ssize_t cap
    cdef uint8_t* grown
    if b.n + extra <= b.cap:
        return 0
    cap = max(b.cap * 2, b.n + extra, 4096)
    grown = <uint8_t*>realloc(b.data, cap)
    if grown == NULL:
        with gil:
            raise MemoryError()
    b.data = grown
    b.cap = cap
    return 0


cdef inline int bb_byte(ByteBuf* b, uint8_t v) except -1 nogil:
    bb_reserve(b, 1)
    b.data[b.n] = v
    b.n += 1
    return 0


cdef inline int bb_varint(ByteBuf* b, uint64_t v) except -1 nogil:
    bb_reserve(b, 10)
    while v >= 0x80:
        b.data[b.n] = <uint8_t>(v & 0x7F) | 0x80
        b.n += 1
        v >>= 7
    b.data[b.n] = <uint8_t>v
    b.n += 1
    return 0


cdef inline int bb_u32(ByteBuf* b, uint32_t v) except -1 nogil:
    bb_reserve(b, 4)
    memcpy(b.data + b.n, &v, 4)
    b.n += 4
    return 0


cdef inline int bb_f32(ByteBuf* b, float v) except -1 nogil:
    bb_reserve(b, 4)
    memcpy(b.data + b.n, &v, 4)
    b.n += 4
    return 0


cdef object bb_take(ByteBuf* b):
    out = np.empty(b.n, dtype=np.uint8)
    cdef uint8_t[::1] view = out
    if b.n:
        memcpy(&view[0], b.data, b.n)
    free(b.data)
    b.data = NULL
    b.n = b.cap = 0
    return out


cdef inline int num_bits(uint32_t v) noexcept nogil:
    cdef int n = 0
    while v:
        n += 1
        v >>= 1
    return n


cdef int pack4x(const uint32_t* vals, int bits, ByteBuf* out) except -1 nogil:
    """Append 128 values of ``bits`` bits each, BitPacker4x layout."""
    cdef uint32_t words[32 * 4]
    cdef int lane, j, word, off
    cdef uint32_t v
    bb_reserve(out, bits * 16)
    if bits == 0:
        return 0
    memset(words, 0, sizeof(words))
    for lane in range(4):
        for j in range(32):
            v = vals[j * 4 + lane]
            if bits < 32:
                v &= (<uint32_t>1 << bits) - 1
            word = (j * bits) >> 5
            off = (j * bits) & 31
            words[word * 4 + lane] |= v << off
            if off + bits > 32:
                words[(word + 1) * 4 + lane] |= v >> (32 - off)
    memcpy(out.data + out.n, words, bits * 16)
    out.n += bits * 16
    return 0


cdef int unpack4x(const uint8_t* src, Py_ssize_t avail, int bits, uint32_t* vals) noexcept nogil:
    """Read 128 values; returns the bytes used, -1 when short or ``bits`` > 32."""
    cdef uint32_t words[32 * 4]
    cdef int lane, j, word, off
    cdef uint64_t v, mask
    if bits > 32 or avail < bits * 16:
        return -1
    if bits == 0:
        memset(vals, 0, BLOCK * sizeof(uint32_t))
        return 0
    memcpy(words, src, bits * 16)
    mask = (<uint64_t>1 << bits) - 1
    for lane in range(4):
        for j in range(32):
            word = (j * bits) >> 5
            off = (j * bits) & 31
            v = words[word * 4 + lane] >> off
            if off + bits > 32:
                v |= (<uint64_t>words[(word + 1) * 4 + lane]) << (32 - off)
            vals[j * 4 + lane] = <uint32_t>(v & mask)
    return bits * 16


cdef inline int read_varint(const uint8_t* p, Py_ssize_t n, Py_ssize_t* o, uint64_t* out) noexcept nogil:
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef uint8_t c
    while True:
        if o[0] >= n or shift > 63:
            return -1
        c = p[o[0]]
        o[0] += 1
        v |= (<uint64_t>(c & 0x7F)) << shift
        if c < 0x80:
            out[0] = v
            return 0
        shift += 7


cdef inline float idf(uint32_t token_docs, uint32_t num_docs) noexcept nogil:
    cdef float n = <float>num_docs
    cdef float t = <float>token_docs
    return logf((n - t + <float>0.5) / (t + <float>0.5) + <float>1.0)


cdef inline float doc_weight(uint32_t freq, uint32_t doc_len, float avgdl) noexcept nogil:
    cdef float f = <float>freq
    cdef float norm = K1 * ((<float>1.0 - B) + B * <float>doc_len / avgdl)
    return (K1 + <float>1.0) * f / (f + norm)


cdef inline float tf_part(uint32_t freq, uint32_t doc_len, float avgdl) noexcept nogil:
    cdef float f = <float>freq
    cdef float norm = K1 * ((<float>1.0 - B) + B * <float>doc_len / avgdl)
    return f / (f + norm)


def bm25_idf(token_docs, uint32_t num_docs):
    """Lance's float32 idf of each count in ``token_docs``."""
    counts = np.ascontiguousarray(token_docs, dtype=np.uint32)
    out = np.empty(counts.size, dtype=np.float32)
    cdef const uint32_t[::1] c = counts
    cdef float[::1] o = out
    cdef Py_ssize_t i
    for i in range(counts.size):
        o[i] = idf(c[i], num_docs)
    return out


def bm25_weights(freqs, doc_lens, float avgdl, float query_weight):
    """``query_weight * doc_weight`` of each (frequency, document length), float32."""
    f = np.ascontiguousarray(freqs, dtype=np.uint32)
    l = np.ascontiguousarray(doc_lens, dtype=np.uint32)
    out = np.empty(f.size, dtype=np.float32)
    cdef const uint32_t[::1] fv = f
    cdef const uint32_t[::1] lv = l
    cdef float[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(fv.shape[0]):
            o[i] = query_weight * doc_weight(fv[i], lv[i], avgdl)
    return out


# -- building --------------------------------------------------------------------------------
def group(const int32_t[::1] tokens, const uint32_t[::1] docs, Py_ssize_t n_tokens):
    """Occurrences (token, doc; in doc order) grouped by token: ``(token offsets, docs,
    frequencies, order)`` -- list ``t`` is entries ``off[t]:off[t+1]`` (docs ascending), and
    ``order`` lists the occurrences token by token (stable), for their positions."""
    cdef Py_ssize_t n = tokens.shape[0], i, t, k, e
    count = np.zeros(n_tokens + 1, dtype=np.int64)
    cdef int64_t[::1] cnt = count
    for i in range(n):
        cnt[tokens[i] + 1] += 1
    np.cumsum(count, out=count)
    order = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] od = order
    fill = count[:-1].copy()
    cdef int64_t[::1] fl = fill
    for i in range(n):
        t = tokens[i]
        od[fl[t]] = i
        fl[t] += 1
    # run lengths of equal docs within each token
    entry_off = np.zeros(n_tokens + 1, dtype=np.int64)
    cdef int64_t[::1] eo = entry_off
    out_docs = np.empty(n, dtype=np.uint32)
    out_freqs = np.empty(n, dtype=np.uint32)
    cdef uint32_t[::1] dv = out_docs
    cdef uint32_t[::1] fv = out_freqs
    e = 0
    for t in range(n_tokens):
        eo[t] = e
        for k in range(cnt[t], cnt[t + 1]):
            i = od[k]
            if k > cnt[t] and docs[i] == dv[e - 1]:
                fv[e - 1] += 1
            else:
                dv[e] = docs[i]
                fv[e] = 1
                e += 1
    eo[n_tokens] = e
    return entry_off, out_docs[:e].copy(), out_freqs[:e].copy(), order


cdef uint8_t quantize(uint32_t v) noexcept nogil:
    cdef int bits = num_bits(v)
    cdef int shift
    if bits < 4:
        return <uint8_t>v
    shift = bits - 4
    return <uint8_t>(((v >> shift) & 0x07) | ((shift + 1) << 3))


cdef int impact_entry(const uint32_t* docs, const uint32_t* freqs, const uint32_t* doc_lens,
                      Py_ssize_t a, Py_ssize_t b, ByteBuf* out, uint32_t* minlen,
                      uint32_t* pf, uint32_t* pl) except -1:
    """The impact entry of entries ``a:b`` (see module docstring)."""
    cdef Py_ssize_t i, m = 0, nf = 0
    cdef uint32_t maxf = 0, f, best, prev_f = 0
    cdef uint8_t norm, prev_norm = 0, delta
    cdef object pairs
    for i in range(a, b):
        if freqs[i] > maxf:
            maxf = freqs[i]
    if maxf <= 256:
        for i in range(maxf + 1):
            minlen[i] = 0xFFFFFFFF
        for i in range(a, b):
            if doc_lens[docs[i]] < minlen[freqs[i]]:
                minlen[freqs[i]] = doc_lens[docs[i]]
        # frontier: from the highest frequency down, strictly shorter documents
        best = 0xFFFFFFFF
        for i in range(maxf, -1, -1):
            if minlen[i] != 0xFFFFFFFF and minlen[i] < best:
                pf[nf] = <uint32_t>i
                pl[nf] = minlen[i]
                best = minlen[i]
                nf += 1
    else:
        pairs = sorted({(freqs[i], doc_lens[docs[i]]) for i in range(a, b)})
        mins = {}
        for f_, l_ in pairs:
            if f_ not in mins:
                mins[f_] = l_
        best = 0xFFFFFFFF
        for f_ in sorted(mins, reverse=True):
            if mins[f_] < best:
                pf[nf] = f_
                pl[nf] = mins[f_]
                best = mins[f_]
                nf += 1
    # pf/pl hold the frontier by descending frequency: quantize in ascending order
    cdef uint32_t qf[BLOCK * LEVEL1_BLOCKS + 1]
    cdef uint8_t qn[BLOCK * LEVEL1_BLOCKS + 1]
    for i in range(nf - 1, -1, -1):
        norm = quantize(pl[i])
        if m and qn[m - 1] == norm:
            qf[m - 1] = pf[i]
        else:
            qf[m] = pf[i]
            qn[m] = norm
            m += 1
    bb_varint(out, docs[b - 1])
    bb_varint(out, <uint64_t>m)
    for i in range(m):
        delta = qn[i] - prev_norm
        bb_varint(out, ((<uint64_t>(qf[i] - prev_f - 1)) << 1) | (1 if delta != 1 else 0))
        if delta != 1:
            bb_byte(out, delta)
        prev_f = qf[i]
        prev_norm = qn[i]
    return 0


def encode(const int64_t[::1] entry_off, const uint32_t[::1] docs, const uint32_t[::1] freqs,
           const uint32_t[::1] doc_lens, uint32_t num_docs, float avgdl, positions=None,
           pos_order=None):
    """Every token's posting blocks, max score, impacts and (with ``positions``, one per
    occurrence, taken in ``pos_order``) position stream. Returns a dict of flat arrays: the
    bytes of each column's binaries and their offsets, and per token how many binaries."""
    cdef Py_ssize_t n_tokens = entry_off.shape[0] - 1, t, a, b, s, e, i, blk, nb, g, k
    cdef Py_ssize_t total_blocks = 0
    cdef ByteBuf post, imp, pos
    memset(&post, 0, sizeof(ByteBuf))
    memset(&imp, 0, sizeof(ByteBuf))
    memset(&pos, 0, sizeof(ByteBuf))
    for t in range(n_tokens):
        total_blocks += (entry_off[t + 1] - entry_off[t] + BLOCK - 1) // BLOCK
    post_off = np.zeros(total_blocks + 1, dtype=np.int64)
    n_groups_total = 0
    for t in range(n_tokens):
        nb = (entry_off[t + 1] - entry_off[t] + BLOCK - 1) // BLOCK
        n_groups_total += nb + (nb + LEVEL1_BLOCKS - 1) // LEVEL1_BLOCKS
    imp_off = np.zeros(n_groups_total + 1, dtype=np.int64)
    max_score = np.zeros(n_tokens, dtype=np.float32)
    blocks_per_token = np.zeros(n_tokens, dtype=np.int32)
    imps_per_token = np.zeros(n_tokens, dtype=np.int32)
    cdef int64_t[::1] po = post_off
    cdef int64_t[::1] io = imp_off
    cdef float[::1] ms = max_score
    cdef int32_t[::1] bpt = blocks_per_token
    cdef int32_t[::1] ipt = imps_per_token
    cdef bint with_pos = positions is not None
    cdef const uint32_t[::1] pv
    cdef const int64_t[::1] pord
    pos_token_off = np.zeros(n_tokens + 1, dtype=np.int64)
    pos_block_off = np.zeros(total_blocks if with_pos else 0, dtype=np.uint32)
    cdef int64_t[::1] pto = pos_token_off
    cdef uint32_t[::1] pbo = pos_block_off
    if with_pos:
        pv = positions
        pord = pos_order
    cdef uint32_t deltas[BLOCK]
    cdef uint32_t fvals[BLOCK]
    cdef uint32_t pdeltas[BLOCK]
    cdef int npd, bits
    cdef uint32_t prev, first, maxd, maxf
    cdef float qw, w, bmax, tmax
    cdef int64_t occ = 0, token_pos_start
    cdef uint32_t* minlen = <uint32_t*>malloc(257 * sizeof(uint32_t))
    cdef uint32_t* pf = <uint32_t*>malloc((BLOCK * LEVEL1_BLOCKS + 1) * sizeof(uint32_t))
    cdef uint32_t* pl = <uint32_t*>malloc((BLOCK * LEVEL1_BLOCKS + 1) * sizeof(uint32_t))
    cdef Py_ssize_t blk_i = 0, imp_i = 0, p, pe
    cdef uint32_t pprev
    try:
        for t in range(n_tokens):
            s = entry_off[t]
            e = entry_off[t + 1]
            qw = idf(<uint32_t>(e - s), num_docs)
            tmax = 0
            nb = (e - s + BLOCK - 1) // BLOCK
            bpt[t] = <int32_t>nb
            token_pos_start = pos.n
            for blk in range(nb):
                a = s + blk * BLOCK
                b = min(a + BLOCK, e)
                # Lance: max of freq / (freq + norm) over the block, times idf * (k1 + 1)
                bmax = 0
                for i in range(a, b):
                    w = tf_part(freqs[i], doc_lens[docs[i]], avgdl)
                    if w > bmax:
                        bmax = w
                bmax = bmax * (qw * (K1 + <float>1.0))
                if bmax > tmax:
                    tmax = bmax
                bb_f32(&post, bmax)
                if b - a == BLOCK:
                    first = docs[a]
                    maxd = 0
                    maxf = 0
                    prev = first
                    for i in range(BLOCK):
                        deltas[i] = docs[a + i] - prev
                        prev = docs[a + i]
                        maxd |= deltas[i]
                        fvals[i] = freqs[a + i]
                        maxf |= fvals[i]
                    bb_u32(&post, first)
                    bits = num_bits(maxd)
                    bb_byte(&post, <uint8_t>bits)
                    pack4x(deltas, bits, &post)
                    bits = num_bits(maxf)
                    bb_byte(&post, <uint8_t>bits)
                    pack4x(fvals, bits, &post)
                else:
                    prev = 0
                    for i in range(a, b):
                        bb_varint(&post, docs[i] - prev if i > a else docs[i])
                        prev = docs[i]
                    for i in range(a, b):
                        bb_varint(&post, freqs[i])
                blk_i += 1
                po[blk_i] = post.n
                impact_entry(&docs[0], &freqs[0], &doc_lens[0], a, b, &imp, minlen, pf, pl)
                imp_i += 1
                io[imp_i] = imp.n
                if with_pos:
                    pbo[blk_i - 1] = <uint32_t>(pos.n - token_pos_start)
                    npd = 0
                    for i in range(a, b):
                        pprev = 0
                        for k in range(freqs[i]):
                            p = pv[pord[occ]]
                            occ += 1
                            pdeltas[npd] = <uint32_t>p - pprev if k else <uint32_t>p
                            pprev = <uint32_t>p
                            npd += 1
                            if npd == BLOCK:
                                maxd = 0
                                for g in range(BLOCK):
                                    maxd |= pdeltas[g]
                                bits = num_bits(maxd)
                                bb_byte(&pos, <uint8_t>bits)
                                pack4x(pdeltas, bits, &pos)
                                npd = 0
                    for g in range(npd):
                        bb_varint(&pos, pdeltas[g])
            for g in range((nb + LEVEL1_BLOCKS - 1) // LEVEL1_BLOCKS):
                a = s + g * LEVEL1_BLOCKS * BLOCK
                b = min(a + LEVEL1_BLOCKS * BLOCK, e)
                impact_entry(&docs[0], &freqs[0], &doc_lens[0], a, b, &imp, minlen, pf, pl)
                imp_i += 1
                io[imp_i] = imp.n
            ipt[t] = <int32_t>(nb + (nb + LEVEL1_BLOCKS - 1) // LEVEL1_BLOCKS)
            ms[t] = tmax
            pto[t + 1] = pos.n
    finally:
        free(minlen)
        free(pf)
        free(pl)
    return {"posting": bb_take(&post), "posting_offsets": post_off,
            "blocks_per_token": blocks_per_token, "max_score": max_score,
            "impacts": bb_take(&imp), "impact_offsets": imp_off,
            "impacts_per_token": imps_per_token, "positions": bb_take(&pos) if with_pos else None,
            "position_offsets": pos_token_off, "position_block_offsets": pos_block_off}


# -- reading ---------------------------------------------------------------------------------
def decode_posting(const int64_t[::1] offsets, const uint8_t[::1] data, Py_ssize_t length):
    """(docs, frequencies, block max scores) of one token: its blocks are
    ``data[offsets[i]:offsets[i+1]]`` and it lists ``length`` documents."""
    cdef Py_ssize_t nb = offsets.shape[0] - 1, blk, i, o, end, got = 0, want
    cdef uint64_t v
    cdef uint32_t vals[BLOCK]
    cdef uint32_t first, prev
    cdef int used
    cdef float m
    if length < 0 or nb != (length + BLOCK - 1) // BLOCK:
        raise ValueError(f"a posting list of {length} documents has {nb} blocks")
    docs = np.empty(length, dtype=np.uint32)
    freqs = np.empty(length, dtype=np.uint32)
    maxes = np.empty(nb, dtype=np.float32)
    cdef uint32_t[::1] dv = docs
    cdef uint32_t[::1] fv = freqs
    cdef float[::1] mv = maxes
    cdef const uint8_t* p
    for blk in range(nb):
        o = offsets[blk]
        end = offsets[blk + 1]
        if o < 0 or end < o or end > data.shape[0] or end - o < 4:
            raise ValueError(f"posting block {blk} has bad offsets")
        p = &data[0]
        memcpy(&m, p + o, 4)
        mv[blk] = m
        o += 4
        want = min(BLOCK, length - got)
        if want == BLOCK:
            if end - o < 5:
                raise ValueError(f"posting block {blk} is short")
            memcpy(&first, p + o, 4)
            used = unpack4x(p + o + 5, end - o - 5, p[o + 4], vals)
            if used < 0:
                raise ValueError(f"posting block {blk} is short")
            o += 5 + used
            if got and first <= dv[got - 1]:
                raise ValueError(f"posting block {blk} does not continue after the last one")
            prev = first
            for i in range(BLOCK):
                if i and vals[i] == 0:
                    raise ValueError(f"posting block {blk} repeats a document")
                prev = prev + vals[i]
                dv[got + i] = prev
            if o >= end:
                raise ValueError(f"posting block {blk} is short")
            used = unpack4x(p + o + 1, end - o - 1, p[o], vals)
            if used < 0:
                raise ValueError(f"posting block {blk} is short")
            o += 1 + used
            for i in range(BLOCK):
                fv[got + i] = vals[i]
        else:
            prev = 0
            for i in range(want):
                if read_varint(p, end, &o, &v) < 0 or v > 0xFFFFFFFF:
                    raise ValueError(f"posting block {blk} has a bad varint")
                if i and v == 0:
                    raise ValueError(f"posting block {blk} repeats a document")
                prev = <uint32_t>v if i == 0 else prev + <uint32_t>v
                if (i and prev < dv[got + i - 1]) or (i == 0 and got and prev <= dv[got - 1]):
                    raise ValueError(f"posting block {blk} has documents out of order")
                dv[got + i] = prev
            for i in range(want):
                if read_varint(p, end, &o, &v) < 0 or v > 0xFFFFFFFF:
                    raise ValueError(f"posting block {blk} has a bad varint")
                fv[got + i] = <uint32_t>v
        if o != end:
            raise ValueError(f"posting block {blk} has {end - o} trailing bytes")
        got += want
    return docs, freqs, maxes


def decode_positions(const uint8_t[::1] stream, const uint32_t[::1] block_offsets,
                     const uint32_t[::1] freqs):
    """Every document's positions of one token (flat, in posting order), from its position
    stream (blocks start at ``block_offsets``) and its frequencies."""
    cdef Py_ssize_t nb = block_offsets.shape[0], blk, a, b, i, o, end, k, total, full, tail, j
    cdef Py_ssize_t n = freqs.shape[0], out_i = 0, d
    cdef uint64_t v
    cdef uint32_t vals[BLOCK]
    cdef uint32_t prev
    cdef int used
    if nb != (n + BLOCK - 1) // BLOCK:
        raise ValueError(f"{nb} position blocks for {n} documents")
    total = 0
    for i in range(n):
        total += freqs[i]
    # a group of 128 positions takes at least one byte, a varint one: no more can be stored
    if total > BLOCK * (stream.shape[0] + 1):
        raise ValueError(f"{total} positions cannot fit in {stream.shape[0]} bytes")
    out = np.empty(total, dtype=np.uint32)
    cdef uint32_t[::1] ov = out
    deltas_arr = np.empty(BLOCK * 0 + 1, dtype=np.uint32)
    cdef const uint8_t* p = &stream[0] if stream.shape[0] else NULL
    for blk in range(nb):
        o = block_offsets[blk]
        end = block_offsets[blk + 1] if blk + 1 < nb else stream.shape[0]
        if end < o or end > stream.shape[0]:
            raise ValueError(f"position block {blk} has bad offsets")
        a = blk * BLOCK
        b = min(a + BLOCK, n)
        total = 0
        for i in range(a, b):
            total += freqs[i]
        full = total // BLOCK
        tail = total % BLOCK
        d = out_i
        for j in range(full):
            if o >= end:
                raise ValueError(f"position block {blk} is short")
            used = unpack4x(p + o + 1, end - o - 1, p[o], vals)
            if used < 0:
                raise ValueError(f"position block {blk} is short")
            o += 1 + used
            memcpy(&ov[d], vals, BLOCK * sizeof(uint32_t))
            d += BLOCK
        for j in range(tail):
            if read_varint(p, end, &o, &v) < 0 or v > 0xFFFFFFFF:
                raise ValueError(f"position block {blk} has a bad varint")
            ov[d] = <uint32_t>v
            d += 1
        if o != end:
            raise ValueError(f"position block {blk} has {end - o} trailing bytes")
        # deltas -> positions, document by document
        for i in range(a, b):
            prev = 0
            for k in range(freqs[i]):
                prev = ov[out_i] if k == 0 else prev + ov[out_i]
                ov[out_i] = prev
                out_i += 1
    return out
