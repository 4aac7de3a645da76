# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Checked kernels of the legacy (v0.1) page encodings.

Legacy pages point at their data with *positions*: a string/binary page is ``n + 1`` int64
absolute file offsets of the value bytes (a nullable field reads an empty value as null, as
Lance's ``BinaryDecoder`` does), a list page ``n + 1`` int32/int64 positions into the child's
page of the same batch. Arrow wants offsets starting at 0, so both are rebased here, in
``nogil`` loops that check every position (never backwards, never outside the bytes or rows
the page may address): a corrupt file can never yield an Arrow array pointing outside its data.
Dictionary keys are checked against the number of dictionary values the same way.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cnp.import_array()

ctypedef fused pos_t:
    int32_t
    int64_t

ctypedef fused key_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef Py_ssize_t _rebase(const pos_t[::1] pos, int64_t lo, int64_t hi, int64_t[::1] out,
                        uint8_t* validity, Py_ssize_t* nulls) noexcept nogil:
    """``out[i] = pos[i] - pos[0]``; -1 on success, else the index of the first bad position.
    ``validity`` (may be NULL) gets a set bit per non-empty value."""
    cdef Py_ssize_t n = pos.shape[0]
    cdef Py_ssize_t i
    cdef int64_t first, prev, v
    cdef Py_ssize_t count = 0
    if n == 0:
        return 0
    first = pos[0]
    if first < lo or first > hi:
        return 0
    prev = first
    out[0] = 0
    for i in range(1, n):
        v = pos[i]
        if v < prev or v > hi:
            return i
        out[i] = v - first
        if validity != NULL:
            if v != prev:
                validity[(i - 1) >> 3] |= <uint8_t>(1 << ((i - 1) & 7))
            else:
                count += 1
        prev = v
    nulls[0] = count
    return -1


def rebase_positions(const pos_t[::1] positions, int64_t lo, int64_t hi, bint large,
                     bint empty_is_null):
    """Arrow offsets (from 0) of ``n + 1`` legacy positions that must lie in ``[lo, hi]``.

    Returns ``(offsets, validity, null_count, bad)``: int32 offsets (int64 when ``large``),
    an LSB-first validity bitmap when ``empty_is_null`` and some value is empty (else None),
    and ``bad`` = -1 or the index of the first position that goes backwards or out of bounds
    (then the other results are meaningless). 32-bit offsets spanning 2 GiB or more are bad.
    """
    cdef Py_ssize_t n = positions.shape[0]
    cdef Py_ssize_t bad, nulls = 0
    cdef int64_t[::1] o64
    cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray validity = None
    cdef uint8_t* vptr = NULL
    cdef uint8_t[::1] vview
    if n == 0:
        return None, None, 0, 0
    o64 = out
    if empty_is_null:
        validity = np.zeros((n - 1 + 7) >> 3 if n > 1 else 1, dtype=np.uint8)
        vview = validity
        vptr = &vview[0]
    with nogil:
        bad = _rebase(positions, lo, hi, o64, vptr, &nulls)
    if bad >= 0:
        return None, None, 0, bad
    if not large:
        if out[n - 1] > 2147483647:
            return None, None, 0, n - 1
        out = out.astype(np.int32)
    if nulls == 0:
        validity = None
    return out, validity, nulls, -1


cdef Py_ssize_t _check_keys(const key_t[::1] keys, uint64_t limit) noexcept nogil:
    cdef Py_ssize_t i
    cdef Py_ssize_t n = keys.shape[0]
    for i in range(n):
        if keys[i] < 0 or <uint64_t>keys[i] >= limit:
            return i
    return -1


def check_dictionary_keys(const key_t[::1] keys, uint64_t num_values):
    """-1 when every key indexes one of ``num_values`` dictionary values, else the first bad
    row (Lance's reader refuses such a page too: Arrow's DictionaryArray validates keys)."""
    cdef Py_ssize_t bad
    with nogil:
        bad = _check_keys(keys, num_values)
    return bad


def absolute_positions(const int64_t[::1] offsets, int64_t base):
    """What the legacy writer stores for Arrow ``offsets``: ``offsets[i] - offsets[0] + base``
    (binary pages: ``base`` is the file offset of the value bytes; list pages: the number of
    child values already in this page)."""
    cdef Py_ssize_t n = offsets.shape[0]
    cdef Py_ssize_t i
    cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int64_t first
    if n == 0:
        return out
    first = offsets[0]
    with nogil:
        for i in range(n):
            o[i] = offsets[i] - first + base
    return out
