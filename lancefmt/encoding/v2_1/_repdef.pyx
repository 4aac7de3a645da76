# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Rep/def level kernels of Lance 2.1 / 2.2: one list layer of the unravel (levels -> offsets and
validity), and the full-zip control-word walks (a page's zipped bytes -> levels and values).

Every loop runs without the GIL; array sizes are checked once before it, and the byte walks
check each entry against the buffer end (a sequential format cannot be checked up front).
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cnp.import_array()


def unravel_list(const uint16_t[::1] rep, const uint16_t[::1] defs, int lo, int null_code,
                 int empty_code, int top):
    """One list layer over the current entries (``rep``/``defs`` of equal length).

    An entry with rep != 0 and def <= ``top`` starts a list: valid with a first child
    (def <= ``lo``), valid and empty (def == ``empty_code``) or null (anything else: this
    layer's null or a null item layer right above). rep == 0 adds a child to the current list.
    Returns (offsets int64[lists+1], validity bool[lists], rep', def') where rep'/def' keep the
    entries with rep != 0 (rep lowered by one) for the next layer.
    """
    cdef Py_ssize_t n = rep.shape[0], i, nl = 0, nk = 0, li = 0, ki = 0
    cdef int64_t children = 0
    cdef uint16_t r, d
    if defs.shape[0] != n:
        raise ValueError("rep and def levels differ in length")
    with nogil:
        for i in range(n):
            if rep[i] != 0:
                nk += 1
                if defs[i] <= top:
                    nl += 1
    offsets = np.empty(nl + 1, dtype=np.int64)
    validity = np.empty(nl, dtype=np.bool_)
    rep_out = np.empty(nk, dtype=np.uint16)
    def_out = np.empty(nk, dtype=np.uint16)
    cdef int64_t[::1] off = offsets
    cdef uint8_t[::1] val = validity.view(np.uint8)
    cdef uint16_t[::1] ro = rep_out
    cdef uint16_t[::1] do = def_out
    with nogil:
        for i in range(n):
            r = rep[i]
            d = defs[i]
            if r != 0:
                ro[ki] = r - 1
                do[ki] = d
                ki += 1
                if d <= top:
                    off[li] = children
                    val[li] = d <= lo or (empty_code != 0 and d == empty_code)
                    li += 1
            if d <= lo:
                children += 1
        off[nl] = children
    return offsets, validity, rep_out, def_out


def row_starts(const uint16_t[::1] rep, int max_rep):
    """Positions of the entries that start a row (rep == ``max_rep``), as int64."""
    cdef Py_ssize_t n = rep.shape[0], i, k = 0
    with nogil:
        for i in range(n):
            if rep[i] == max_rep:
                k += 1
    out = np.empty(k, dtype=np.int64)
    cdef int64_t[::1] o = out
    k = 0
    with nogil:
        for i in range(n):
            if rep[i] == max_rep:
                o[k] = i
                k += 1
    return out


cdef inline uint32_t _word(const uint8_t* p, int width) noexcept nogil:
    if width == 1:
        return p[0]
    if width == 2:
        return p[0] | (<uint32_t>p[1] << 8)
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


def zip_walk_fixed(const uint8_t[::1] buf, Py_ssize_t num_entries, int ctrl_bytes, int bits_def,
                   int max_visible, Py_ssize_t value_bytes):
    """Walk a full-zip page of fixed-width values: control word (0/1/2/4 bytes) per entry, then
    ``value_bytes`` for each visible entry (def <= ``max_visible``).

    ``num_entries < 0``: walk every entry up to the end of ``buf`` (rows fetched apart).
    Returns (rep u16 | None, def u16 | None, values u8 [visible * value_bytes], visible).
    Raises ValueError when the entries run past the buffer.
    """
    cdef Py_ssize_t size = buf.shape[0], i, pos = 0, vis = 0, done = 0
    cdef bint to_end = num_entries < 0
    if to_end:
        if ctrl_bytes == 0:
            raise ValueError("walking to the end needs control words")
        num_entries = size // ctrl_bytes
    cdef uint32_t w, mask = (1u << bits_def) - 1 if bits_def < 32 else 0xffffffffu
    cdef int bad = 0
    if value_bytes < 0 or ctrl_bytes not in (0, 1, 2, 4):
        raise ValueError("bad full-zip parameters")
    if num_entries > size // max(ctrl_bytes, 1) + 1 and (ctrl_bytes or value_bytes):
        raise ValueError(f"{num_entries} entries cannot fit in {size} bytes")
    if ctrl_bytes == 0 and num_entries * value_bytes > size:
        raise ValueError(f"{num_entries} values of {value_bytes} bytes exceed {size} bytes")
    reps = np.zeros(num_entries if ctrl_bytes else 0, dtype=np.uint16)
    defs = np.zeros(num_entries if ctrl_bytes else 0, dtype=np.uint16)
    values = np.empty(min(num_entries * value_bytes, size), dtype=np.uint8)
    cdef uint16_t[::1] ro = reps
    cdef uint16_t[::1] do = defs
    cdef uint8_t[::1] vo = values
    if ctrl_bytes == 0:
        if num_entries * value_bytes:
            memcpy(&vo[0], &buf[0], num_entries * value_bytes)
        return None, None, values, num_entries
    with nogil:
        for i in range(num_entries):
            if to_end and pos >= size:
                break
            if pos + ctrl_bytes > size:
                bad = 1
                break
            w = _word(&buf[pos], ctrl_bytes)
            pos += ctrl_bytes
            ro[i] = <uint16_t>(w >> bits_def) if bits_def < 32 else 0
            do[i] = <uint16_t>(w & mask)
            done += 1
            if do[i] <= max_visible:
                if pos + value_bytes > size or (vis + 1) * value_bytes > vo.shape[0]:
                    bad = 1
                    break
                if value_bytes:
                    memcpy(&vo[vis * value_bytes], &buf[pos], value_bytes)
                pos += value_bytes
                vis += 1
    if bad:
        raise ValueError("full-zip entries run past the end of the page")
    return reps[:done], defs[:done], values[:vis * value_bytes], vis


def zip_walk_variable(const uint8_t[::1] buf, Py_ssize_t num_entries, int ctrl_bytes,
                      int bits_def, int max_visible, int offset_bits):
    """Walk a full-zip page of variable-width values: control word per entry, then for each
    visible *valid* entry (def == 0) a u32/u64 length and that many bytes.

    ``num_entries < 0``: walk every entry up to the end of ``buf``.
    Returns (rep u16 | None, def u16 | None, offsets int64 [visible+1], data u8, visible).
    """
    cdef Py_ssize_t size = buf.shape[0], i, pos = 0, vis = 0, dpos = 0, done = 0
    cdef bint to_end = num_entries < 0
    if to_end:
        num_entries = size // (ctrl_bytes if ctrl_bytes else offset_bits // 8)
    cdef uint32_t w, mask = (1u << bits_def) - 1 if bits_def < 32 else 0xffffffffu
    cdef uint64_t length
    cdef uint16_t d
    cdef int lb = offset_bits // 8, bad = 0
    if ctrl_bytes not in (0, 1, 2, 4) or offset_bits not in (32, 64):
        raise ValueError("bad full-zip parameters")
    if num_entries > size // max(ctrl_bytes, 1) + 1:
        raise ValueError(f"{num_entries} entries cannot fit in {size} bytes")
    reps = np.zeros(num_entries if ctrl_bytes else 0, dtype=np.uint16)
    defs = np.zeros(num_entries if ctrl_bytes else 0, dtype=np.uint16)
    offsets = np.zeros(num_entries + 1, dtype=np.int64)
    data = np.empty(size, dtype=np.uint8)
    cdef uint16_t[::1] ro = reps
    cdef uint16_t[::1] do = defs
    cdef int64_t[::1] oo = offsets
    cdef uint8_t[::1] dd = data
    with nogil:
        for i in range(num_entries):
            if to_end and pos >= size:
                break
            d = 0
            done += 1
            if ctrl_bytes:
                if pos + ctrl_bytes > size:
                    bad = 1
                    break
                w = _word(&buf[pos], ctrl_bytes)
                pos += ctrl_bytes
                ro[i] = <uint16_t>(w >> bits_def) if bits_def < 32 else 0
                d = <uint16_t>(w & mask)
                do[i] = d
            if d > max_visible:
                continue
            if d == 0:
                if pos + lb > size:
                    bad = 1
                    break
                if lb == 4:
                    length = _word(&buf[pos], 4)
                else:
                    length = _word(&buf[pos], 4) | (<uint64_t>_word(&buf[pos + 4], 4) << 32)
                pos += lb
                if length > <uint64_t>(size - pos):
                    bad = 1
                    break
                if length:
                    memcpy(&dd[dpos], &buf[pos], length)
                pos += length
                dpos += length
            vis += 1
            oo[vis] = dpos
    if bad:
        raise ValueError("full-zip entries run past the end of the page")
    return reps[:done], defs[:done], offsets[:vis + 1], data[:dpos], vis
