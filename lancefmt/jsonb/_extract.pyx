# cython: language_level=3, boundscheck=False, wraparound=False
"""One JSONB value per document at a simple path (member names and array indices), without
decoding the documents: the walk reads only the headers and JEntries on the way down (see
:mod:`lancefmt.jsonb.codec` for the format). Every offset is checked against the document's
bounds; a document that does not hold together stops the walk with its row number."""
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

import numpy as np

# what a row's value is (``kinds``)
DEF MISSING = 0
DEF JNULL = 1
DEF JFALSE = 2
DEF JTRUE = 3
DEF JSTRING = 4
DEF JINT = 5
DEF JFLOAT = 6
DEF JARRAY = 7
DEF JOBJECT = 8

cdef uint32_t ARRAY = 0x80000000
cdef uint32_t OBJECT = 0x40000000
cdef uint32_t SCALAR = 0x20000000
cdef uint32_t HEADER_TYPE_MASK = 0xE0000000
cdef uint32_t HEADER_LEN_MASK = 0x1FFFFFFF
cdef uint32_t NULL_TAG = 0x00000000
cdef uint32_t STRING_TAG = 0x10000000
cdef uint32_t NUMBER_TAG = 0x20000000
cdef uint32_t FALSE_TAG = 0x30000000
cdef uint32_t TRUE_TAG = 0x40000000
cdef uint32_t CONTAINER_TAG = 0x50000000
cdef uint32_t JENTRY_TYPE_MASK = 0x70000000
cdef uint32_t JENTRY_LEN_MASK = 0x0FFFFFFF
cdef uint64_t I64_MAX = 0x7FFFFFFFFFFFFFFF
cdef uint64_t ALL_ONES = 0xFFFFFFFFFFFFFFFF
cdef uint64_t F64_NAN = 0x7FF8000000000000
cdef uint64_t F64_INF = 0x7FF0000000000000
cdef uint64_t F64_NEG_INF = 0xFFF0000000000000


cdef union union_f64:
    uint64_t u
    double d


cdef inline uint32_t be32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3]


cdef int number(const uint8_t* p, int64_t n, int64_t* ival, double* fval) noexcept nogil:
    """JINT or JFLOAT for a number payload (an unsigned value above i64 is a float), -1 when
    malformed."""
    cdef uint8_t tag
    cdef uint64_t u = 0
    cdef int64_t k, width
    cdef union_f64 conv
    if n < 1:
        return -1
    tag = p[0]
    width = n - 1
    if tag == 0x00 and width == 0:
        ival[0] = 0
        return JINT
    if tag == 0x10 and width == 0:
        conv.u = F64_NAN
        fval[0] = conv.d
        return JFLOAT
    if tag == 0x20 and width == 0:
        conv.u = F64_INF
        fval[0] = conv.d
        return JFLOAT
    if tag == 0x30 and width == 0:
        conv.u = F64_NEG_INF
        fval[0] = conv.d
        return JFLOAT
    if (tag == 0x40 or tag == 0x50) and (width == 1 or width == 2 or width == 4 or width == 8):
        for k in range(width):
            u = (u << 8) | p[1 + k]
        if tag == 0x40:
            if width < 8 and (u >> (8 * width - 1)) & 1:  # sign-extend
                u |= ALL_ONES << (8 * width)
            ival[0] = <int64_t>u
            return JINT
        if u > I64_MAX:
            fval[0] = <double>u
            return JFLOAT
        ival[0] = <int64_t>u
        return JINT
    if tag == 0x60 and width == 8:
        for k in range(8):
            u = (u << 8) | p[1 + k]
        conv.u = u
        fval[0] = conv.d
        return JFLOAT
    return -1


cdef int entry_kind(uint32_t tag) noexcept nogil:
    if tag == NULL_TAG:
        return JNULL
    if tag == FALSE_TAG:
        return JFALSE
    if tag == TRUE_TAG:
        return JTRUE
    if tag == STRING_TAG:
        return JSTRING
    if tag == NUMBER_TAG:
        return JINT  # refined by number()
    if tag == CONTAINER_TAG:
        return JARRAY  # refined from the container's header
    return -1


cdef int walk(const uint8_t* base, int64_t pos, int64_t end, Py_ssize_t nsteps,
              const int8_t[::1] step_is_index, const int64_t[::1] step_index,
              const uint8_t* names, const int64_t[::1] name_off,
              int64_t* out_pos, int64_t* out_end) noexcept nogil:
    """The value at the path in the container at ``[pos, end)``: its kind (its payload at
    ``[out_pos, out_end)``), MISSING when the path selects nothing, -1 when malformed."""
    cdef Py_ssize_t s
    cdef uint32_t header, kind_bits, cnt, e, tag
    cdef int64_t count, j, key_off, key_len, val_off, vlen, want
    for s in range(nsteps):
        if end - pos < 4:
            return -1
        header = be32(base + pos)
        kind_bits = header & HEADER_TYPE_MASK
        cnt = header & HEADER_LEN_MASK
        if kind_bits == SCALAR:
            return MISSING  # a step into a scalar document
        if kind_bits != ARRAY and kind_bits != OBJECT:
            return -1
        count = <int64_t>cnt * 2 if kind_bits == OBJECT else <int64_t>cnt
        if end - pos - 4 < 4 * count:
            return -1
        val_off = pos + 4 + 4 * count
        if step_is_index[s]:
            want = step_index[s]
            if kind_bits != ARRAY or want < 0 or want >= cnt:
                return MISSING
            for j in range(want):
                val_off += be32(base + pos + 4 + 4 * j) & JENTRY_LEN_MASK
            e = be32(base + pos + 4 + 4 * want)
        else:
            if kind_bits != OBJECT:
                return MISSING
            key_len = name_off[s + 1] - name_off[s]
            key_off = val_off
            want = -1
            for j in range(cnt):
                vlen = be32(base + pos + 4 + 4 * j) & JENTRY_LEN_MASK
                if key_off + vlen > end:
                    return -1
                if want < 0 and vlen == key_len and (
                        key_len == 0 or memcmp(base + key_off, names + name_off[s], key_len) == 0):
                    want = j
                key_off += vlen
            if want < 0:
                return MISSING
            val_off = key_off
            for j in range(want):
                val_off += be32(base + pos + 4 + 4 * (cnt + j)) & JENTRY_LEN_MASK
            e = be32(base + pos + 4 + 4 * (cnt + want))
        tag = e & JENTRY_TYPE_MASK
        vlen = e & JENTRY_LEN_MASK
        if val_off + vlen > end:
            return -1
        pos = val_off
        end = val_off + vlen
        if tag != CONTAINER_TAG:
            if s + 1 < nsteps:
                return MISSING  # steps left over a scalar
            out_pos[0] = pos
            out_end[0] = end
            return entry_kind(tag)
    # the path ends at a container: the document itself or a nested one
    if end - pos < 4:
        return -1
    header = be32(base + pos)
    kind_bits = header & HEADER_TYPE_MASK
    if kind_bits == ARRAY:
        return JARRAY
    if kind_bits == OBJECT:
        return JOBJECT
    if kind_bits != SCALAR or end - pos < 8:
        return -1
    e = be32(base + pos + 4)
    tag = e & JENTRY_TYPE_MASK
    vlen = e & JENTRY_LEN_MASK
    if tag == CONTAINER_TAG or pos + 8 + vlen > end:
        return -1
    out_pos[0] = pos + 8
    out_end[0] = pos + 8 + vlen
    return entry_kind(tag)


def extract(const uint8_t[::1] data, const int64_t[::1] offsets, const uint8_t[::1] valid,
            const int8_t[::1] step_is_index, list step_names, const int64_t[::1] step_index):
    """For every document ``data[offsets[i]:offsets[i + 1]]`` (``valid[i]`` = 0: a null
    document) the value at the path: ``(kinds, ints, floats, starts, lengths, bad_row)`` where
    strings are ``data[starts[i]:starts[i] + lengths[i]]`` and ``bad_row`` is the first
    malformed document (-1: none)."""
    cdef Py_ssize_t n = offsets.shape[0] - 1
    cdef Py_ssize_t nsteps = step_is_index.shape[0]
    kinds_a = np.zeros(n, dtype=np.int8)
    ints_a = np.zeros(n, dtype=np.int64)
    floats_a = np.zeros(n, dtype=np.float64)
    starts_a = np.zeros(n, dtype=np.int64)
    lengths_a = np.zeros(n, dtype=np.int64)
    cdef int8_t[::1] kinds = kinds_a
    cdef int64_t[::1] ints = ints_a
    cdef double[::1] floats = floats_a
    cdef int64_t[::1] starts = starts_a
    cdef int64_t[::1] lengths = lengths_a
    names = b"".join(step_names) + b"\0"
    name_off_a = np.zeros(nsteps + 1, dtype=np.int64)
    for i in range(nsteps):
        name_off_a[i + 1] = name_off_a[i] + len(step_names[i])
    cdef const uint8_t[::1] name_buf = names
    cdef int64_t[::1] name_off = name_off_a
    cdef Py_ssize_t row
    cdef int64_t doc_start, doc_end, vpos = 0, vend = 0
    cdef int kind
    cdef Py_ssize_t bad = -1
    cdef Py_ssize_t size = data.shape[0]
    cdef const uint8_t* base = &data[0] if size else <const uint8_t*>&name_buf[0]
    with nogil:
        for row in range(n):
            if not valid[row]:
                continue
            doc_start = offsets[row]
            doc_end = offsets[row + 1]
            if doc_start < 0 or doc_end < doc_start or doc_end > size:
                bad = row
                break
            kind = walk(base, doc_start, doc_end, nsteps, step_is_index, step_index,
                        &name_buf[0], name_off, &vpos, &vend)
            if kind == JINT:
                kind = number(base + vpos, vend - vpos, &ints[row], &floats[row])
            elif kind == JSTRING:
                starts[row] = vpos
                lengths[row] = vend - vpos
            if kind < 0:
                bad = row
                break
            kinds[row] = kind
    return kinds_a, ints_a, floats_a, starts_a, lengths_a, bad


def gather(const uint8_t[::1] data, const int64_t[::1] starts, const int64_t[::1] lengths,
           const uint8_t[::1] keep):
    """The byte slices of rows ``keep`` concatenated, with int32 offsets (every row; a row not
    kept is empty)."""
    cdef Py_ssize_t n = starts.shape[0], i
    cdef int64_t total = 0
    for i in range(n):
        if keep[i]:
            total += lengths[i]
    if total > 0x7FFFFFFF:
        raise OverflowError("more than 2 GiB of strings in one batch")
    out_a = np.empty(total, dtype=np.uint8)
    offs_a = np.empty(n + 1, dtype=np.int32)
    cdef uint8_t[::1] out = out_a
    cdef int32_t[::1] offs = offs_a
    cdef int64_t at = 0
    with nogil:
        offs[0] = 0
        for i in range(n):
            if keep[i] and lengths[i]:
                memcpy(&out[at], &data[starts[i]], lengths[i])
                at += lengths[i]
            offs[i + 1] = <int32_t>at
    return out_a, offs_a

