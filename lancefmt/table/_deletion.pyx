# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
"""Cython kernels under ``lancefmt.table.deletion``: deleted row offsets -> live mask, kept
indices and live runs.

Inputs are the *sorted, distinct* uint32 offsets a ``DeletionVector`` holds (``live_mask``
accepts any order). Each public function checks its whole input once (order and the bound
``offset < num_rows``) and then runs an unchecked ``nogil`` loop; the work is proportional to the
number of deleted rows plus one pass that writes the output.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memset

cnp.import_array()


cdef Py_ssize_t _first_unsorted(const uint32_t[::1] d) noexcept nogil:
    """Index of the first offset not above its predecessor, or -1 when strictly increasing."""
    cdef Py_ssize_t i
    for i in range(1, d.shape[0]):
        if d[i] <= d[i - 1]:
            return i
    return -1


def check_sorted_offsets(const uint32_t[::1] deleted, uint64_t num_rows):
    """Raise ValueError unless ``deleted`` is strictly increasing and every offset < num_rows."""
    cdef Py_ssize_t bad, n = deleted.shape[0]
    with nogil:
        bad = _first_unsorted(deleted)
    if bad >= 0:
        raise ValueError(f"deleted offsets are not strictly increasing at position {bad}")
    if n and deleted[n - 1] >= num_rows:
        raise ValueError(f"deleted offset {deleted[n - 1]} is not below {num_rows} rows")


def live_mask(const uint32_t[::1] deleted, Py_ssize_t num_rows):
    """Boolean mask of length ``num_rows``, False at every deleted offset (any order)."""
    cdef Py_ssize_t i, n = deleted.shape[0]
    cdef uint32_t mx = 0
    if num_rows < 0:
        raise ValueError("num_rows must not be negative")
    with nogil:
        for i in range(n):
            if deleted[i] > mx:
                mx = deleted[i]
    if n and <Py_ssize_t>mx >= num_rows:
        raise ValueError(f"deleted offset {mx} is not below {num_rows} rows")
    out = np.empty(num_rows, dtype=np.bool_)
    cdef uint8_t[::1] ov = out.view(np.uint8)
    with nogil:
        if num_rows:
            memset(&ov[0], 1, num_rows)
        for i in range(n):
            ov[deleted[i]] = 0
    return out


def kept_indices(const uint32_t[::1] deleted, Py_ssize_t num_rows, bint wide=False):
    """Offsets of the live rows (uint32, or uint64 with ``wide``); ``deleted`` sorted, distinct."""
    cdef Py_ssize_t n = deleted.shape[0], i, k = 0
    cdef uint64_t cur = 0, stop, d
    check_sorted_offsets(deleted, num_rows)
    out = np.empty(num_rows - n, dtype=np.uint64 if wide else np.uint32)
    cdef uint64_t[::1] o64
    cdef uint32_t[::1] o32
    if wide:
        o64 = out
        with nogil:
            for i in range(n + 1):
                stop = deleted[i] if i < n else <uint64_t>num_rows
                while cur < stop:
                    o64[k] = cur
                    k += 1
                    cur += 1
                cur = stop + 1
    else:
        o32 = out
        with nogil:
            for i in range(n + 1):
                stop = deleted[i] if i < n else <uint64_t>num_rows
                while cur < stop:
                    o32[k] = <uint32_t>cur
                    k += 1
                    cur += 1
                cur = stop + 1
    return out


def live_runs(const uint32_t[::1] deleted, Py_ssize_t num_rows):
    """Maximal runs of live rows as (starts, lengths) int64 arrays; ``deleted`` sorted, distinct.

    A scan reads each run as one contiguous range and never materialises a deleted row.
    """
    cdef Py_ssize_t n = deleted.shape[0], i, k = 0
    check_sorted_offsets(deleted, num_rows)
    starts = np.empty(n + 1, dtype=np.int64)
    lens = np.empty(n + 1, dtype=np.int64)
    cdef long long[::1] sv = starts, lv = lens
    cdef long long c = 0, stop
    with nogil:
        for i in range(n + 1):
            stop = deleted[i] if i < n else num_rows
            if stop > c:
                sv[k] = c
                lv[k] = stop - c
                k += 1
            c = stop + 1
    return starts[:k], lens[:k]
