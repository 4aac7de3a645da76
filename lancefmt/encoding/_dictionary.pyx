# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Dictionary kernels of Lance 2.0 pages.

Two kinds of dictionary pages exist in 2.0 files:

* low-cardinality strings (the writer's own choice for ``utf8`` pages): u8 indices where 0 is
  null and ``k`` means item ``k - 1``; the reader expands them back into a plain string array
  (``expand_string_dictionary``: two passes, sizes then ``memcpy``);
* Arrow dictionary columns: indices point straight at the items, and a null row points at a
  null item. ``dictionary_validity`` checks every index against the dictionary size (an Arrow
  DictionaryArray with an out-of-range index is a crash waiting to happen) and derives the
  indices' validity from the items' validity, as pylance returns it.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                          uint64_t)
from libc.string cimport memcpy

cnp.import_array()

ctypedef fused index_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef inline bint _bit(const uint8_t* bits, Py_ssize_t i) noexcept nogil:
    return (bits[i >> 3] >> (i & 7)) & 1


def expand_string_dictionary(const uint8_t[::1] indices, const int64_t[::1] item_offsets,
                             item_validity, const uint8_t[::1] item_data, bint large):
    """Expand u8 low-cardinality indices (0 = null, k = item k-1) into Arrow string buffers.

    ``item_offsets`` are the ``m + 1`` Arrow offsets of the ``m`` items (already checked to be
    monotonic and within ``item_data``), ``item_validity`` their bitmap or ``None``.
    Returns ``(offsets, data, validity, null_count, bad_row)``; ``bad_row`` is -1, or the first
    row whose index is past the dictionary.
    """
    cdef Py_ssize_t n = indices.shape[0]
    cdef Py_ssize_t m = item_offsets.shape[0] - 1
    cdef Py_ssize_t i, bad = -1, nulls = 0
    cdef int64_t total = 0, pos = 0, start, length
    cdef unsigned int k
    cdef const uint8_t[::1] ivbits
    cdef const uint8_t* ivptr = NULL
    cdef cnp.ndarray validity = np.zeros((n + 7) >> 3, dtype=np.uint8)
    cdef uint8_t[::1] vview = validity
    cdef cnp.ndarray offsets
    cdef cnp.ndarray data
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    cdef uint8_t* dptr
    if m < 0:
        raise ValueError("item offsets must have at least one entry")
    if item_offsets[m] > item_data.shape[0]:
        raise ValueError("item offsets past the item data")
    if item_validity is not None:
        ivbits = memoryview(item_validity).cast("B")
        if ivbits.shape[0] * 8 < m:
            raise ValueError("item validity shorter than the items")
        if m > 0:
            ivptr = &ivbits[0]
    with nogil:
        for i in range(n):
            k = indices[i]
            if k == 0:
                nulls += 1
                continue
            if k > m:
                bad = i
                break
            if ivptr != NULL and not _bit(ivptr, k - 1):
                nulls += 1
                continue
            vview[i >> 3] |= <uint8_t>(1 << (i & 7))
            total += item_offsets[k] - item_offsets[k - 1]
    if bad >= 0:
        return None, None, None, 0, bad
    if not large and total > 2147483647:
        raise OverflowError("expanded strings exceed 2 GiB; read as large_string")
    data = np.empty(total, dtype=np.uint8)
    dptr = <uint8_t*>cnp.PyArray_DATA(data)
    if large:
        offsets = np.empty(n + 1, dtype=np.int64)
        o64 = offsets
        with nogil:
            o64[0] = 0
            for i in range(n):
                if _bit(&vview[0], i):
                    k = indices[i]
                    start = item_offsets[k - 1]
                    length = item_offsets[k] - start
                    if length:
                        memcpy(dptr + pos, &item_data[start], length)
                    pos += length
                o64[i + 1] = pos
    else:
        offsets = np.empty(n + 1, dtype=np.int32)
        o32 = offsets
        with nogil:
            o32[0] = 0
            for i in range(n):
                if _bit(&vview[0], i):
                    k = indices[i]
                    start = item_offsets[k - 1]
                    length = item_offsets[k] - start
                    if length:
                        memcpy(dptr + pos, &item_data[start], length)
                    pos += length
                o32[i + 1] = <int32_t>pos
    return offsets, data, (validity if nulls else None), nulls, -1


cdef Py_ssize_t _check_indices(const index_t[::1] indices, Py_ssize_t m, const uint8_t* item_bits,
                               uint8_t[::1] validity, Py_ssize_t* null_count) noexcept nogil:
    cdef Py_ssize_t n = indices.shape[0]
    cdef Py_ssize_t i, nulls = 0
    cdef int64_t k
    for i in range(n):
        k = <int64_t>indices[i]
        if k < 0 or k >= m:
            return i
        if item_bits != NULL and not _bit(item_bits, k):
            nulls += 1
        else:
            validity[i >> 3] |= <uint8_t>(1 << (i & 7))
    null_count[0] = nulls
    return -1


def dictionary_validity(indices, Py_ssize_t num_items, item_validity):
    """Check ``0 <= index < num_items`` for every row; the rows' validity from the items'.

    ``indices`` is a 1-D numpy integer array. Returns ``(validity, null_count, bad_row)``:
    ``validity`` is ``None`` when no row points at a null item; ``bad_row`` is -1 or the first
    out-of-range row.
    """
    cdef Py_ssize_t n = indices.shape[0]
    cdef Py_ssize_t bad = -1, nulls = 0
    cdef cnp.ndarray validity = np.zeros((n + 7) >> 3, dtype=np.uint8)
    cdef uint8_t[::1] vview = validity
    cdef const uint8_t[::1] ivbits
    cdef const uint8_t* ivptr = NULL
    if n == 0:
        return None, 0, -1
    if item_validity is not None:
        ivbits = memoryview(item_validity).cast("B")
        if ivbits.shape[0] * 8 < num_items:
            raise ValueError("item validity shorter than the items")
        if num_items > 0:
            ivptr = &ivbits[0]
    dt = indices.dtype
    if dt == np.int8:
        bad = _dispatch_i8(indices, num_items, ivptr, vview, &nulls)
    elif dt == np.int16:
        bad = _dispatch_i16(indices, num_items, ivptr, vview, &nulls)
    elif dt == np.int32:
        bad = _dispatch_i32(indices, num_items, ivptr, vview, &nulls)
    elif dt == np.int64:
        bad = _dispatch_i64(indices, num_items, ivptr, vview, &nulls)
    elif dt == np.uint8:
        bad = _dispatch_u8(indices, num_items, ivptr, vview, &nulls)
    elif dt == np.uint16:
        bad = _dispatch_u16(indices, num_items, ivptr, vview, &nulls)
    elif dt == np.uint32:
        bad = _dispatch_u32(indices, num_items, ivptr, vview, &nulls)
    elif dt == np.uint64:
        bad = _dispatch_u64(indices, num_items, ivptr, vview, &nulls)
    else:
        raise TypeError(f"dictionary indices must be integers, not {dt}")
    if bad >= 0:
        return None, 0, bad
    return (validity if nulls else None), nulls, -1


cdef Py_ssize_t _dispatch_i8(const int8_t[::1] a, Py_ssize_t m, const uint8_t* b, uint8_t[::1] v, Py_ssize_t* nn):
    with nogil:
        return _check_indices(a, m, b, v, nn)

cdef Py_ssize_t _dispatch_i16(const int16_t[::1] a, Py_ssize_t m, const uint8_t* b, uint8_t[::1] v, Py_ssize_t* nn):
    with nogil:
        return _check_indices(a, m, b, v, nn)

cdef Py_ssize_t _dispatch_i32(const int32_t[::1] a, Py_ssize_t m, const uint8_t* b, uint8_t[::1] v, Py_ssize_t* nn):
    with nogil:
        return _check_indices(a, m, b, v, nn)

cdef Py_ssize_t _dispatch_i64(const int64_t[::1] a, Py_ssize_t m, const uint8_t* b, uint8_t[::1] v, Py_ssize_t* nn):
    with nogil:
        return _check_indices(a, m, b, v, nn)

cdef Py_ssize_t _dispatch_u8(const uint8_t[::1] a, Py_ssize_t m, const uint8_t* b, uint8_t[::1] v, Py_ssize_t* nn):
    with nogil:
        return _check_indices(a, m, b, v, nn)

cdef Py_ssize_t _dispatch_u16(const uint16_t[::1] a, Py_ssize_t m, const uint8_t* b, uint8_t[::1] v, Py_ssize_t* nn):
    with nogil:
        return _check_indices(a, m, b, v, nn)

cdef Py_ssize_t _dispatch_u32(const uint32_t[::1] a, Py_ssize_t m, const uint8_t* b, uint8_t[::1] v, Py_ssize_t* nn):
    with nogil:
        return _check_indices(a, m, b, v, nn)

cdef Py_ssize_t _dispatch_u64(const uint64_t[::1] a, Py_ssize_t m, const uint8_t* b, uint8_t[::1] v, Py_ssize_t* nn):
    with nogil:
        return _check_indices(a, m, b, v, nn)
