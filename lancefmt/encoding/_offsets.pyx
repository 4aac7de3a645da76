# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Offset kernels of Lance 2.0 pages: "end offsets with a null adjustment" <-> Arrow offsets.

Lance 2.0 stores string/binary indices and list offsets the same way: one u64 per row holding
the row's *end* offset relative to the page, plus ``adjustment`` when the row is null (the
adjustment is larger than any valid end, so ``v >= adjustment`` marks a null). Arrow wants
``n + 1`` start-inclusive offsets and a validity bitmap. Both directions run in ``nogil`` loops
over typed memoryviews; the decoder checks every value (monotonic, within ``limit``) so a
corrupt page can never produce an Arrow array that points outside its data.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

cnp.import_array()

ctypedef fused offset_t:
    int32_t
    int64_t


cdef Py_ssize_t _decode_ends(const uint64_t[::1] ends, uint64_t adjustment, uint64_t limit,
                             offset_t[::1] out, uint8_t[::1] validity,
                             Py_ssize_t* null_count) noexcept nogil:
    """Fill ``out`` (n + 1 offsets) and ``validity``; -1 on success, else the bad row index."""
    cdef Py_ssize_t n = ends.shape[0]
    cdef Py_ssize_t i
    cdef uint64_t v, prev = 0
    cdef Py_ssize_t nulls = 0
    out[0] = 0
    for i in range(n):
        v = ends[i]
        if v >= adjustment:
            v -= adjustment
            nulls += 1
        else:
            validity[i >> 3] |= <uint8_t>(1 << (i & 7))
        if v < prev or v > limit:
            return i
        out[i + 1] = <offset_t>v
        prev = v
    null_count[0] = nulls
    return -1


def decode_adjusted_offsets(const uint64_t[::1] ends, uint64_t adjustment, uint64_t limit,
                            bint large):
    """Arrow offsets and validity from Lance end offsets.

    Returns ``(offsets, validity, null_count, bad_row)``: ``offsets`` is an int32 (or int64 when
    ``large``) array of ``n + 1`` entries starting at 0, ``validity`` an LSB-first bitmap
    (``None`` when nothing is null), and ``bad_row`` is -1 or the first row whose offset goes
    backwards or past ``limit`` (then the other results are meaningless).
    """
    cdef Py_ssize_t n = ends.shape[0]
    cdef Py_ssize_t bad, nulls = 0
    cdef cnp.ndarray out
    cdef cnp.ndarray validity = np.zeros((n + 7) >> 3, dtype=np.uint8)
    cdef uint8_t[::1] vview = validity
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    if not large and limit > 2147483647:
        raise OverflowError("32-bit offsets cannot address more than 2 GiB")
    if large:
        out = np.empty(n + 1, dtype=np.int64)
        o64 = out
        with nogil:
            bad = _decode_ends(ends, adjustment, limit, o64, vview, &nulls)
    else:
        out = np.empty(n + 1, dtype=np.int32)
        o32 = out
        with nogil:
            bad = _decode_ends(ends, adjustment, limit, o32, vview, &nulls)
    if bad >= 0:
        return None, None, 0, bad
    return out, (validity if nulls else None), nulls, -1


cdef void _encode_ends(const offset_t[::1] offsets, const uint8_t* validity, Py_ssize_t bit_offset,
                       uint64_t[::1] out, uint64_t* adjustment) noexcept nogil:
    # adjustment[0] == 0 asks for the default (last end + 1)
    cdef Py_ssize_t n = out.shape[0]
    cdef Py_ssize_t i, b
    cdef uint64_t base = <uint64_t>offsets[0]
    cdef uint64_t adj
    for i in range(n):
        out[i] = <uint64_t>offsets[i + 1] - base
    adj = adjustment[0]
    if adj == 0:
        adj = (out[n - 1] + 1) if n > 0 else 1
        adjustment[0] = adj
    if validity != NULL:
        for i in range(n):
            b = i + bit_offset
            if not (validity[b >> 3] >> (b & 7)) & 1:
                out[i] += adj


def encode_adjusted_offsets(offsets, validity, Py_ssize_t bit_offset, uint64_t adjustment=0):
    """Lance end offsets (u64, relative to ``offsets[0]``) and the null adjustment.

    ``offsets`` holds the ``n + 1`` Arrow offsets of the rows (int32 or int64 numpy array),
    ``validity`` the Arrow validity bitmap (any buffer, or ``None``) whose bit ``bit_offset``
    belongs to row 0. The adjustment is ``last end + 1`` (what Lance writes for strings) unless
    one is given (lists use ``num_items + 1``); it must exceed every end offset.
    """
    cdef Py_ssize_t n = len(offsets) - 1
    cdef cnp.ndarray out = np.empty(max(n, 0), dtype=np.uint64)
    cdef uint64_t[::1] oview = out
    cdef uint64_t adj = adjustment
    cdef const uint8_t[::1] vbits
    cdef const uint8_t* vptr = NULL
    cdef const int32_t[::1] o32
    cdef const int64_t[::1] o64
    if n <= 0:
        return out, (adjustment or 1)
    if validity is not None:
        vbits = memoryview(validity).cast("B")
        if vbits.shape[0] * 8 < bit_offset + n:
            raise ValueError("validity bitmap shorter than the array")
        vptr = &vbits[0]
    if offsets.dtype == np.int32:
        o32 = offsets
        with nogil:
            _encode_ends(o32, vptr, bit_offset, oview, &adj)
    elif offsets.dtype == np.int64:
        o64 = offsets
        with nogil:
            _encode_ends(o64, vptr, bit_offset, oview, &adj)
    else:
        raise TypeError(f"offsets must be int32 or int64, not {offsets.dtype}")
    return out, adj
