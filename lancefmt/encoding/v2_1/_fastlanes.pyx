# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""FastLanes bit-packing as Lance 2.1/2.2 uses it (1024-value transposed blocks).

A block holds 1024 values of a T-bit unsigned type (T in 8/16/32/64) packed at W bits each
(0 <= W <= T) as ``1024*W/T`` T-bit words. There are ``LANES = 1024/T`` independent lanes; word
``k*LANES + lane`` is the k-th word of lane ``lane``; each lane is an LSB-first bit stream of T
rows of W bits. Row r of a lane holds the logical value at
``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + lane`` with ``FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]``.

Packed input is a uint8 buffer (little-endian words); the caller hands an aligned buffer (the
Python wrappers copy a misaligned one). Every entry point checks the whole range once, then runs
its loop without the GIL.
"""
import numpy as np

from lancefmt.encoding.pool_memory import pool_empty

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from lancefmt.encoding.v2_1._chunk_header cimport CHUNK_OK, CHUNK_OUTSIDE, chunk_values

cnp.import_array()

ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

cdef int[8] FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]

BLOCK = 1024


cdef inline uint64_t _mask(int w) noexcept nogil:
    if w >= 64:
        return <uint64_t>0xFFFFFFFFFFFFFFFF
    return (<uint64_t>1 << w) - 1


cdef void _unpack_block(const word_t* packed, word_t* out, int w) noexcept nogil:
    """Unpack one block of ``1024*w/T`` words into 1024 values."""
    cdef int t = sizeof(word_t) * 8
    cdef int lanes = 1024 // t
    cdef int r, lane, k, sh, base
    cdef const word_t* src
    cdef const word_t* nxt
    cdef word_t* dst
    cdef word_t m = <word_t>_mask(w)
    cdef int hi
    if w == 0:
        memset(out, 0, 1024 * sizeof(word_t))
        return
    if w == t:  # full width (e.g. random doubles): row r is word row r, moved as a whole
        for r in range(t):
            memcpy(out + FL_ORDER[r // 8] * 16 + (r % 8) * 128, packed + r * lanes,
                   lanes * sizeof(word_t))
        return
    for r in range(t):
        k = (r * w) // t
        sh = (r * w) % t
        base = FL_ORDER[r // 8] * 16 + (r % 8) * 128
        src = packed + k * lanes
        dst = out + base
        if sh + w > t:
            nxt = src + lanes
            hi = t - sh
            for lane in range(lanes):
                dst[lane] = <word_t>(((src[lane] >> sh) | (nxt[lane] << hi)) & m)
        else:
            for lane in range(lanes):
                dst[lane] = <word_t>((src[lane] >> sh) & m)


cdef void _pack_block(const word_t* values, word_t* packed, int w) noexcept nogil:
    """Pack 1024 values (only their low ``w`` bits) into ``1024*w/T`` words."""
    cdef int t = sizeof(word_t) * 8
    cdef int lanes = 1024 // t
    cdef int r, lane, k, sh, base, hi
    cdef word_t v
    cdef word_t m = <word_t>_mask(w)
    if w == 0:
        return
    memset(packed, 0, lanes * w * sizeof(word_t))
    for r in range(t):
        k = (r * w) // t
        sh = (r * w) % t
        base = FL_ORDER[r // 8] * 16 + (r % 8) * 128
        hi = t - sh
        for lane in range(lanes):
            v = values[base + lane] & m
            packed[k * lanes + lane] |= <word_t>(v << sh)
            if sh + w > t:
                packed[(k + 1) * lanes + lane] |= <word_t>(v >> hi)


cdef inline word_t _get_one(const word_t* packed, int w, Py_ssize_t i) noexcept nogil:
    """Value number ``i`` (0..1023) of one packed block."""
    cdef int t = sizeof(word_t) * 8
    cdef int lanes = 1024 // t
    cdef int s = i // 128
    cdef int r = i % 128
    cdef int q = r // lanes
    cdef int lane = r % lanes
    cdef int row = 8 * FL_ORDER[q * 64 // t] + s
    cdef int b = row * w
    cdef int k = b // t
    cdef int sh = b % t
    cdef word_t v
    if w == 0:
        return 0
    v = <word_t>(packed[k * lanes + lane] >> sh)
    if sh + w > t:
        v = <word_t>(v | (packed[(k + 1) * lanes + lane] << (t - sh)))
    return <word_t>(v & <word_t>_mask(w))


def _check_width(int t, int w):
    if t not in (8, 16, 32, 64):
        raise ValueError(f"FastLanes word width {t} is not 8, 16, 32 or 64")
    if w < 0 or w > t:
        raise ValueError(f"bit width {w} outside 0..{t}")


_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
           64: np.dtype(np.uint64)}


cdef object _dtype(int t):
    return _DTYPES[t]


def packed_block_bytes(int t, int w):
    """Bytes of one packed block: ``128 * w`` (independent of ``t``)."""
    _check_width(t, w)
    return 128 * w


cdef void _unpack_many(const uint8_t* src, uint8_t* dst, int t, int w,
                       Py_ssize_t nblocks) noexcept nogil:
    cdef Py_ssize_t b
    cdef Py_ssize_t in_step = 128 * w
    cdef Py_ssize_t out_step = 1024 * (t // 8)
    for b in range(nblocks):
        if t == 8:
            _unpack_block(<const uint8_t*>(src + b * in_step), <uint8_t*>(dst + b * out_step), w)
        elif t == 16:
            _unpack_block(<const uint16_t*>(src + b * in_step), <uint16_t*>(dst + b * out_step), w)
        elif t == 32:
            _unpack_block(<const uint32_t*>(src + b * in_step), <uint32_t*>(dst + b * out_step), w)
        else:
            _unpack_block(<const uint64_t*>(src + b * in_step), <uint64_t*>(dst + b * out_step), w)


def unpack_into(const uint8_t[::1] packed, int t, int w, Py_ssize_t nblocks, out,
                Py_ssize_t out_block=0):
    """Unpack ``nblocks`` consecutive blocks of width ``w`` from ``packed`` into ``out`` (a
    C-contiguous array of T-bit unsigned words), starting at block ``out_block`` of ``out``."""
    _check_width(t, w)
    cdef Py_ssize_t need = nblocks * 128 * w
    if nblocks < 0 or packed.shape[0] < need:
        raise ValueError(f"{nblocks} packed blocks at width {w} need {need} bytes, "
                         f"the buffer holds {packed.shape[0]}")
    if out.dtype != _dtype(t) or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("output must be a writable C-contiguous array of the word type")
    if out_block < 0 or (out_block + nblocks) * 1024 > out.shape[0]:
        raise ValueError("output too small for the unpacked blocks")
    if need and (<size_t>&packed[0]) % (t // 8):
        raise ValueError("packed buffer is not aligned to its word size")
    cdef uint8_t[::1] dst = out.view(np.uint8)
    cdef const uint8_t* src = &packed[0] if need else NULL
    cdef uint8_t* dptr = &dst[0] if dst.shape[0] else NULL
    if nblocks == 0:
        return out
    with nogil:
        _unpack_many(src, dptr + out_block * 1024 * (t // 8), t, w, nblocks)
    return out


def unpack(const uint8_t[::1] packed, int t, int w, Py_ssize_t nblocks):
    """``nblocks * 1024`` values (a new array of T-bit words) unpacked from ``packed``."""
    _check_width(t, w)
    out = pool_empty(max(nblocks, 0) * 1024, dtype=_dtype(t))
    return unpack_into(packed, t, w, nblocks, out)


def pack(values, int t, int w):
    """Pack ``values`` (T-bit unsigned words, a multiple of 1024 of them) at ``w`` bits each;
    only the low ``w`` bits of each value are kept. Returns the packed bytes as a uint8 array."""
    _check_width(t, w)
    arr = np.ascontiguousarray(values, dtype=_dtype(t))
    cdef Py_ssize_t n = arr.shape[0]
    if n % 1024:
        raise ValueError(f"{n} values is not a multiple of 1024")
    cdef Py_ssize_t nblocks = n // 1024
    cdef Py_ssize_t out_step = 128 * w
    out = np.zeros(nblocks * out_step, dtype=np.uint8)
    if nblocks == 0 or w == 0:
        return out
    cdef uint8_t[::1] src = arr.view(np.uint8)
    cdef uint8_t[::1] dst = out
    cdef Py_ssize_t in_step = 1024 * (t // 8)
    cdef Py_ssize_t b
    with nogil:
        for b in range(nblocks):
            if t == 8:
                _pack_block(<const uint8_t*>(&src[0] + b * in_step), <uint8_t*>(&dst[0] + b * out_step), w)
            elif t == 16:
                _pack_block(<const uint16_t*>(&src[0] + b * in_step), <uint16_t*>(&dst[0] + b * out_step), w)
            elif t == 32:
                _pack_block(<const uint32_t*>(&src[0] + b * in_step), <uint32_t*>(&dst[0] + b * out_step), w)
            else:
                _pack_block(<const uint64_t*>(&src[0] + b * in_step), <uint64_t*>(&dst[0] + b * out_step), w)
    return out


def take(const uint8_t[::1] packed, int t, int w, const int64_t[::1] indices):
    """Random access: the values at ``indices`` (logical positions over consecutive blocks of
    width ``w``) without unpacking whole blocks."""
    _check_width(t, w)
    cdef Py_ssize_t n = indices.shape[0]
    cdef Py_ssize_t block_bytes = 128 * w
    cdef Py_ssize_t nblocks = packed.shape[0] // block_bytes if block_bytes else 0
    cdef Py_ssize_t i
    cdef int64_t idx
    cdef int64_t limit = <int64_t>(nblocks * 1024) if w else <int64_t>0x7FFFFFFFFFFFFFFF
    out = pool_empty(n, dtype=_dtype(t))
    if n == 0:
        return out
    if (w and (<size_t>&packed[0]) % (t // 8)):
        raise ValueError("packed buffer is not aligned to its word size")
    cdef int64_t lo = 0, hi = 0
    with nogil:
        lo = indices[0]
        hi = indices[0]
        for i in range(n):
            if indices[i] < lo:
                lo = indices[i]
            if indices[i] > hi:
                hi = indices[i]
    if lo < 0 or hi >= limit:
        raise ValueError(f"index out of range 0..{limit}")
    if w == 0:
        out[:] = 0
        return out
    cdef uint8_t[::1] dst = out.view(np.uint8)
    cdef const uint8_t* src = &packed[0]
    with nogil:
        for i in range(n):
            idx = indices[i]
            if t == 8:
                (<uint8_t*>&dst[0])[i] = _get_one(<const uint8_t*>(src + (idx >> 10) * block_bytes), w, idx & 1023)
            elif t == 16:
                (<uint16_t*>&dst[0])[i] = _get_one(<const uint16_t*>(src + (idx >> 10) * block_bytes), w, idx & 1023)
            elif t == 32:
                (<uint32_t*>&dst[0])[i] = _get_one(<const uint32_t*>(src + (idx >> 10) * block_bytes), w, idx & 1023)
            else:
                (<uint64_t*>&dst[0])[i] = _get_one(<const uint64_t*>(src + (idx >> 10) * block_bytes), w, idx & 1023)
    return out


cdef Py_ssize_t _walk_inline(const uint8_t* buf, Py_ssize_t size, int t, Py_ssize_t groups,
                             int* bad_width) noexcept nogil:
    """Check the ``[width word][128*W bytes]`` groups fit; -1 if so, else the bad group."""
    cdef Py_ssize_t g, pos = 0
    cdef int wb = t // 8
    cdef uint64_t w
    for g in range(groups):
        if pos + wb > size:
            return g
        w = 0
        memcpy(&w, buf + pos, wb)
        if w > <uint64_t>t:
            bad_width[0] = <int>(w if w < 1000 else 1000)
            return g
        if pos + wb + 128 * <Py_ssize_t>w > size:
            return g
        pos += wb + 128 * <Py_ssize_t>w
    return -1


def decode_inline(const uint8_t[::1] buf, int t, Py_ssize_t n):
    """Inline bit-packed values: ``ceil(n/1024)`` groups of a T-bit width word followed by
    ``128*W`` packed bytes. Returns the first ``n`` values as T-bit words. The whole layout is
    checked before the output is allocated (ValueError on a bad width or a short buffer)."""
    _check_width(t, 0)
    if n < 0:
        raise ValueError("negative value count")
    cdef Py_ssize_t groups = (n + 1023) // 1024
    cdef Py_ssize_t size = buf.shape[0]
    cdef const uint8_t* src = &buf[0] if size else NULL
    cdef int bad_width = -1
    cdef Py_ssize_t bad
    with nogil:
        bad = _walk_inline(src, size, t, groups, &bad_width)
    if bad != -1:
        if bad_width != -1:
            raise ValueError(f"bit width {bad_width} of block {bad} exceeds the {t}-bit word")
        raise ValueError(f"bit-packed buffer of {size} bytes ends inside block {bad} of "
                         f"{groups}")
    out = pool_empty(groups * 1024, dtype=_dtype(t))
    if groups == 0:
        return out
    cdef uint8_t[::1] dst = out.view(np.uint8)
    cdef uint8_t* dptr = &dst[0]
    cdef int wb = t // 8
    cdef Py_ssize_t g, pos = 0
    cdef uint64_t w
    cdef uint64_t[1024] scratch   # 8 KiB: one aligned packed block at the widest width
    cdef const uint8_t* p
    with nogil:
        for g in range(groups):
            w = 0
            memcpy(&w, src + pos, wb)
            p = src + pos + wb
            if (<size_t>p) % wb:
                memcpy(scratch, p, 128 * w)
                p = <const uint8_t*>scratch
            _unpack_many(p, dptr + g * 1024 * wb, t, <int>w, 1)
            pos += wb + 128 * <Py_ssize_t>w
    return out[:n]


def decode_inline_chunks(const uint8_t[::1] data, const int64_t[::1] starts,
                         const int64_t[::1] sizes, const int64_t[::1] counts, int t):
    """Many mini-block chunks of inline bit-packed values at once (one page): chunk i's value
    buffer is ``data[starts[i]:starts[i]+sizes[i]]`` holding ``counts[i]`` values. Returns all
    values, concatenated, as T-bit words. Every chunk's layout is checked before allocating."""
    _check_width(t, 0)
    cdef Py_ssize_t nchunks = starts.shape[0]
    if sizes.shape[0] != nchunks or counts.shape[0] != nchunks:
        raise ValueError("starts, sizes and counts must have the same length")
    cdef Py_ssize_t i, g, groups, pos, end, total = 0, bad = -1
    cdef int bad_width = -1
    cdef Py_ssize_t size = data.shape[0]
    cdef const uint8_t* src = &data[0] if size else NULL
    with nogil:
        for i in range(nchunks):
            if starts[i] < 0 or sizes[i] < 0 or counts[i] < 0 or starts[i] > size \
                    or sizes[i] > size - starts[i]:
                bad = i
                break
            groups = (counts[i] + 1023) // 1024
            if _walk_inline(src + starts[i], sizes[i], t, groups, &bad_width) != -1:
                bad = i
                break
            total += counts[i]
    if bad != -1:
        if bad_width != -1:
            raise ValueError(f"chunk {bad}: bit width {bad_width} exceeds the {t}-bit word")
        raise ValueError(f"chunk {bad}: bit-packed values run past their buffer")
    out = pool_empty(total, dtype=_dtype(t))
    if total == 0:
        return out
    cdef uint8_t[::1] dst = out.view(np.uint8)
    cdef uint8_t* dptr = &dst[0]
    cdef int wb = t // 8
    cdef uint64_t w
    cdef uint64_t[1024] scratch_in
    cdef uint64_t[1024] scratch_out
    cdef const uint8_t* p
    cdef Py_ssize_t left, opos = 0
    with nogil:
        for i in range(nchunks):
            pos = starts[i]
            left = counts[i]
            while left > 0:
                w = 0
                memcpy(&w, src + pos, wb)
                p = src + pos + wb
                if (<size_t>p) % wb:
                    memcpy(scratch_in, p, 128 * w)
                    p = <const uint8_t*>scratch_in
                if left >= 1024:
                    _unpack_many(p, dptr + opos * wb, t, <int>w, 1)
                    opos += 1024
                    left -= 1024
                else:
                    _unpack_many(p, <uint8_t*>scratch_out, t, <int>w, 1)
                    memcpy(dptr + opos * wb, scratch_out, left * wb)
                    opos += left
                    left = 0
                pos += wb + 128 * <Py_ssize_t>w
    return out


def gather_fixed_chunks(const uint8_t[::1] data, const int64_t[::1] starts,
                        const int64_t[::1] counts, Py_ssize_t width):
    """Concatenate ``counts[i]`` values of ``width`` bytes from ``data[starts[i]:]`` for every
    chunk i (flat mini-block values of one page) after checking every range."""
    cdef Py_ssize_t nchunks = starts.shape[0]
    if counts.shape[0] != nchunks or width <= 0:
        raise ValueError("bad chunk description")
    cdef Py_ssize_t i, total = 0, bad = -1
    cdef Py_ssize_t size = data.shape[0]
    with nogil:
        for i in range(nchunks):
            if starts[i] < 0 or counts[i] < 0 or starts[i] > size or \
                    counts[i] > (size - starts[i]) // width:
                bad = i
                break
            total += counts[i]
    if bad != -1:
        raise ValueError(f"chunk {bad}: flat values run past their buffer")
    out = pool_empty(total * width, dtype=np.uint8)
    if total == 0:
        return out
    cdef uint8_t[::1] dst = out
    cdef Py_ssize_t opos = 0
    with nogil:
        for i in range(nchunks):
            memcpy(&dst[0] + opos, &data[0] + starts[i], counts[i] * width)
            opos += counts[i] * width
    return out


cdef inline bint _ool_raw_tail(Py_ssize_t size, Py_ssize_t n, int t, int w) noexcept nogil:
    """Whether an out-of-line buffer of ``size`` bytes holding ``n`` values ends in a raw tail
    (-1 cases are screened by the caller): told by its length, ties by the writer's rule."""
    cdef Py_ssize_t full = n // 1024
    cdef Py_ssize_t tail = n % 1024
    cdef Py_ssize_t packed = (full + (1 if tail else 0)) * 128 * w
    cdef Py_ssize_t raw = full * 128 * w + tail * (t // 8)
    if tail and size == raw and (raw != packed or not (w * (1024 - tail) < (t - w) * tail)):
        return True
    if size >= packed:
        return False
    return tail != 0 and size >= raw


def decode_ool_chunks(const uint8_t[::1] data, const int64_t[::1] starts,
                      const int64_t[::1] sizes, const int64_t[::1] counts, int t, int w):
    """Out-of-line bit-packed buffers of many chunks (width ``w`` for all): full blocks, then a
    tail packed as one more block or stored raw (told by the buffer length). Returns every
    chunk's values concatenated; ValueError names the first chunk too short for its count."""
    _check_width(t, w)
    cdef Py_ssize_t nchunks = starts.shape[0]
    if sizes.shape[0] != nchunks or counts.shape[0] != nchunks:
        raise ValueError("starts, sizes and counts must have the same length")
    cdef Py_ssize_t size = data.shape[0]
    cdef const uint8_t* src = &data[0] if size else NULL
    cdef Py_ssize_t i, n, full, tail, total = 0, bad = -1
    cdef Py_ssize_t block = 128 * w
    with nogil:
        for i in range(nchunks):
            n = counts[i]
            if starts[i] < 0 or sizes[i] < 0 or n < 0 or starts[i] > size \
                    or sizes[i] > size - starts[i]:
                bad = i
                break
            full = n // 1024
            tail = n % 1024
            if sizes[i] < (full + (1 if tail else 0)) * block and not (
                    tail and sizes[i] >= full * block + tail * (t // 8)):
                bad = i
                break
            total += n
    if bad != -1:
        raise ValueError(f"chunk {bad}: out-of-line bit-packed buffer too short for its values")
    out = pool_empty(total, dtype=_dtype(t))
    if total == 0:
        return out
    cdef uint8_t* dptr = <uint8_t*>cnp.PyArray_DATA(out)
    cdef int wb = t // 8
    cdef uint64_t[1024] scratch_in
    cdef uint64_t[1024] scratch_out
    cdef const uint8_t* p
    cdef Py_ssize_t b, opos = 0
    cdef bint raw
    with nogil:
        for i in range(nchunks):
            n = counts[i]
            full = n // 1024
            tail = n % 1024
            raw = _ool_raw_tail(sizes[i], n, t, w)
            for b in range(full + (1 if (tail and not raw) else 0)):
                p = src + starts[i] + b * block
                if (<size_t>p) % wb:
                    memcpy(scratch_in, p, block)
                    p = <const uint8_t*>scratch_in
                if b < full:
                    _unpack_many(p, dptr + (opos + b * 1024) * wb, t, w, 1)
                else:
                    _unpack_many(p, <uint8_t*>scratch_out, t, w, 1)
                    memcpy(dptr + (opos + b * 1024) * wb, scratch_out, tail * wb)
            if tail and raw:
                memcpy(dptr + (opos + full * 1024) * wb, src + starts[i] + full * block,
                       tail * wb)
            opos += n
    return out


def take_miniblock_rows(const uint8_t[::1] data, const int64_t[::1] chunk_offsets,
                        const int64_t[::1] chunk_sizes, const int64_t[::1] value_starts,
                        const int64_t[::1] rows, int size_width, bint bitpacked, int bits):
    """Random access into a mini-block page without levels (no nulls, no lists) and one value
    buffer per chunk: the values of the sorted ``rows``, read from each row's chunk without
    decoding the chunk. ``data`` is the page's chunk buffer; chunk ``c`` lies at
    ``chunk_offsets[c]`` (``chunk_sizes[c]`` bytes) and holds rows ``value_starts[c]`` up to
    ``value_starts[c + 1]``. Values are inline bit-packed T-bit words (``bitpacked``, T =
    ``bits``: ``[width word][128*W bytes]`` per 1024 values) or flat ``bits``-bit values.

    Chunk header: u16 num_levels, one u16/u32 (``size_width``) value-buffer size, padding to 8,
    then the buffer. Everything a row needs is checked against its chunk (ValueError)."""
    cdef Py_ssize_t n = rows.shape[0], nch = chunk_offsets.shape[0]
    cdef Py_ssize_t size = data.shape[0]
    if bitpacked:
        _check_width(bits, 0)
    elif bits <= 0 or bits % 8:
        raise ValueError(f"flat values of {bits} bits are not whole bytes")
    if size_width not in (2, 4):
        raise ValueError("bad chunk header width")
    if chunk_sizes.shape[0] != nch or value_starts.shape[0] != nch + 1:
        raise ValueError("chunk table arrays disagree in length")
    if n and (rows[0] < 0 or rows[n - 1] >= value_starts[nch]):
        raise ValueError("row outside the page")
    cdef int wb = bits // 8
    out = pool_empty(n * wb, dtype=np.uint8)
    if n == 0:
        return out
    cdef uint8_t* dst = <uint8_t*>cnp.PyArray_DATA(out)
    cdef const uint8_t* src = &data[0]
    cdef Py_ssize_t k = 0, c = 0, cached_c = -1, cached_g = -1, g, j, glen
    cdef int64_t row, vlen, vstart, i, pos
    cdef int r
    cdef uint64_t w = 0, v
    cdef uint64_t[1024] scratch
    cdef uint64_t[1024] block
    cdef const uint8_t* p = NULL
    cdef bint whole
    cdef int bad = 0   # 1: rows not sorted, 2: chunk outside data, 3: header/buffer, 4: width
    with nogil:
        while k < n:
            row = rows[k]
            if k and row < rows[k - 1]:
                bad = 1
                break
            while c + 1 < nch and value_starts[c + 1] <= row:
                c += 1
            if row < value_starts[c]:
                bad = 2
                break
            i = row - value_starts[c]
            if not bitpacked:
                r = chunk_values(src, size, chunk_offsets[c], chunk_sizes[c], size_width,
                                 &vstart, &vlen)
                if r != CHUNK_OK:
                    bad = 2 if r == CHUNK_OUTSIDE else 3
                    break
                if (i + 1) * wb > vlen:
                    bad = 3
                    break
                memcpy(dst + k * wb, src + vstart + i * wb, wb)
                k += 1
                continue
            if cached_c != c or cached_g != (i >> 10):
                # the 1024-value group holding the row: its chunk's header, then a walk over
                # the groups before it (once per group, not per row)
                r = chunk_values(src, size, chunk_offsets[c], chunk_sizes[c], size_width,
                                 &vstart, &vlen)
                if r != CHUNK_OK:
                    bad = 2 if r == CHUNK_OUTSIDE else 3
                    break
                pos = 0
                for g in range(i >> 10):
                    if pos + wb > vlen:
                        break
                    w = 0
                    memcpy(&w, src + vstart + pos, wb)
                    pos += wb + 128 * <int64_t>w
                if pos + wb > vlen:
                    bad = 3
                    break
                w = 0
                memcpy(&w, src + vstart + pos, wb)
                if w > <uint64_t>bits:
                    bad = 4
                    break
                if pos + wb + 128 * <int64_t>w > vlen:
                    bad = 3
                    break
                p = src + vstart + pos + wb
                if (<size_t>p) % wb:  # a misaligned group is copied once
                    memcpy(scratch, p, 128 * w)
                    p = <const uint8_t*>scratch
                cached_c = c
                cached_g = i >> 10
            # a whole group of consecutive rows (an index page, a range): unpacked as a block
            glen = value_starts[c + 1] - value_starts[c] - (i & ~(<int64_t>1023))
            if glen > 1024:
                glen = 1024
            whole = (i & 1023) == 0 and glen > 1 and k + glen <= n and \
                rows[k + glen - 1] == row + glen - 1
            if whole:
                for j in range(1, glen):
                    if rows[k + j] != row + j:
                        whole = False
                        break
            if whole:
                if bits == 8:
                    _unpack_block(<const uint8_t*>p, <uint8_t*>block, <int>w)
                elif bits == 16:
                    _unpack_block(<const uint16_t*>p, <uint16_t*>block, <int>w)
                elif bits == 32:
                    _unpack_block(<const uint32_t*>p, <uint32_t*>block, <int>w)
                else:
                    _unpack_block(<const uint64_t*>p, <uint64_t*>block, <int>w)
                memcpy(dst + k * wb, block, glen * wb)
                k += glen
                continue
            if bits == 8:
                dst[k] = _get_one(<const uint8_t*>p, <int>w, i & 1023)
            elif bits == 16:
                (<uint16_t*>dst)[k] = _get_one(<const uint16_t*>p, <int>w, i & 1023)
            elif bits == 32:
                (<uint32_t*>dst)[k] = _get_one(<const uint32_t*>p, <int>w, i & 1023)
            else:
                (<uint64_t*>dst)[k] = _get_one(<const uint64_t*>p, <int>w, i & 1023)
            k += 1
    if bad == 1:
        raise ValueError("rows must be sorted")
    if bad == 2:
        raise ValueError(f"chunk {c} lies outside the page data")
    if bad == 3:
        raise ValueError(f"chunk {c}: header or values run past the chunk")
    if bad == 4:
        raise ValueError(f"chunk {c}: bit width {w} exceeds the {bits}-bit word")
    return out


# -- writing: per-block widths and whole-page packing ---------------------------------------------

cdef inline int _bit_length(uint64_t x) noexcept nogil:
    cdef int b = 0
    while x:
        x >>= 1
        b += 1
    return b


cdef uint64_t _or_words(const uint8_t* src, int t, Py_ssize_t count) noexcept nogil:
    """Bitwise OR of ``count`` T-bit words (its bit length is the bit length of the maximum)."""
    cdef Py_ssize_t i
    cdef uint64_t acc64 = 0
    cdef uint32_t acc32 = 0
    cdef uint16_t acc16 = 0
    cdef uint8_t acc8 = 0
    if t == 64:
        for i in range(count):
            acc64 |= (<const uint64_t*>src)[i]
        return acc64
    if t == 32:
        for i in range(count):
            acc32 |= (<const uint32_t*>src)[i]
        return acc32
    if t == 16:
        for i in range(count):
            acc16 |= (<const uint16_t*>src)[i]
        return acc16
    for i in range(count):
        acc8 |= src[i]
    return acc8


cdef object _aligned_words(data, int t, Py_ssize_t n):
    """``data`` (uint8) as a C-contiguous buffer of at least ``n`` T-bit words, aligned to T."""
    arr = np.asarray(data, dtype=np.uint8)
    if _check_words(arr, t, n):
        return arr
    return np.ascontiguousarray(arr[:n * (t // 8)]).view(_dtype(t)).view(np.uint8)


cdef bint _check_words(arr, int t, Py_ssize_t n) except -1:
    if n < 0 or arr.ndim != 1 or arr.shape[0] < n * (t // 8):
        raise ValueError(f"{n} {t}-bit values need {n * (t // 8)} bytes, the buffer holds "
                         f"{arr.shape[0] if arr.ndim == 1 else 0}")
    return arr.flags.c_contiguous and (arr.ctypes.data % (t // 8)) == 0


def block_widths(data, int t, Py_ssize_t n):
    """uint8 bit width of every 1024-value block of the first ``n`` T-bit values of ``data``
    (uint8): the bit length of the block's largest unsigned value."""
    _check_width(t, 0)
    src_arr = _aligned_words(data, t, n)
    cdef const uint8_t[::1] src = src_arr
    cdef Py_ssize_t nblocks = (n + 1023) // 1024
    out = np.zeros(nblocks, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    cdef Py_ssize_t b, count
    cdef int step = 1024 * (t // 8)
    if n == 0:
        return out
    with nogil:
        for b in range(nblocks):
            count = 1024 if (b + 1) * 1024 <= n else n - b * 1024
            o[b] = <uint8_t>_bit_length(_or_words(&src[0] + b * step, t, count))
    return out


cdef void _pack_any(const uint8_t* values, uint8_t* packed, int t, int w) noexcept nogil:
    if t == 8:
        _pack_block(<const uint8_t*>values, <uint8_t*>packed, w)
    elif t == 16:
        _pack_block(<const uint16_t*>values, <uint16_t*>packed, w)
    elif t == 32:
        _pack_block(<const uint32_t*>values, <uint32_t*>packed, w)
    else:
        _pack_block(<const uint64_t*>values, <uint64_t*>packed, w)


cdef inline void _put_le(uint8_t* dst, uint64_t v, int nbytes) noexcept nogil:
    cdef int i
    for i in range(nbytes):
        dst[i] = <uint8_t>(v >> (8 * i))


def pack_blocks(data, int t, Py_ssize_t n, const uint8_t[::1] widths, bint chunked=False,
                bint large=True):
    """Bit-pack the first ``n`` T-bit values of ``data`` block by block, each 1024-value block
    at its own width (the last block zero-padded), into one new buffer.

    ``chunked=False``: blocks ``[T-bit width][128*W bytes]`` back to back; returns (buffer,
    int64 block starts, n blocks + 1). ``chunked=True``: every block is a whole mini-block
    chunk without levels -- ``u16 0 | u16 or u32 (large) size | 0xFE pad`` then the block
    padded with 0xFE to 8 bytes; returns (buffer, uint32 chunk metadata words)."""
    _check_width(t, 0)
    src_arr = _aligned_words(data, t, n)
    cdef const uint8_t[::1] src = src_arr
    cdef Py_ssize_t nblocks = (n + 1023) // 1024
    if widths.shape[0] != nblocks:
        raise ValueError(f"{widths.shape[0]} widths for {nblocks} blocks")
    cdef Py_ssize_t b
    cdef int head = t // 8
    cdef int64_t total = 0, body
    for b in range(nblocks):
        if widths[b] > t:
            raise ValueError(f"block {b}: width {widths[b]} above {t}")
        body = head + 128 * <int64_t>widths[b]
        total += (8 + ((body + 7) & ~7)) if chunked else body
    out = pool_empty(total, np.uint8)
    starts = np.empty(nblocks + 1, dtype=np.int64)
    meta = np.empty(nblocks, dtype=np.uint32)
    cdef uint8_t[::1] o = out
    cdef int64_t[::1] st = starts
    cdef uint32_t[::1] m = meta
    cdef uint64_t tail[1024]
    cdef int64_t pos = 0, padded
    cdef Py_ssize_t count
    cdef int w
    cdef int step = 1024 * head
    cdef const uint8_t* vals
    with nogil:
        for b in range(nblocks):
            w = widths[b]
            body = head + 128 * w
            st[b] = pos
            if chunked:
                padded = (body + 7) & ~7
                o[pos] = 0
                o[pos + 1] = 0
                if large:
                    _put_le(&o[pos + 2], <uint64_t>body, 4)
                    o[pos + 6] = 0xFE
                    o[pos + 7] = 0xFE
                else:
                    _put_le(&o[pos + 2], <uint64_t>body, 2)
                    memset(&o[pos + 4], 0xFE, 4)
                m[b] = <uint32_t>((((8 + padded) // 8 - 1) << 4) | (10 if b + 1 < nblocks else 0))
                pos += 8
            _put_le(&o[pos], <uint64_t>w, head)
            count = 1024 if (b + 1) * 1024 <= n else n - b * 1024
            vals = &src[0] + b * step
            if count < 1024:
                memset(tail, 0, sizeof(tail))
                memcpy(tail, vals, count * head)
                vals = <const uint8_t*>tail
            _pack_any(vals, &o[pos + head], t, w)
            pos += body
            if chunked and padded > body:
                memset(&o[pos], 0xFE, padded - body)
                pos += padded - body
        st[nblocks] = pos
    if chunked:
        return out, meta
    return out, starts
