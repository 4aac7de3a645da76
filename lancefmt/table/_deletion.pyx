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


cdef enum:
    BLOCK = 8   # kept_indices writes whole blocks of 8 and advances by the run length


def kept_indices(const uint32_t[::1] deleted, Py_ssize_t num_rows, bint wide=False):
    """Offsets of the live rows (uint32, or uint64 with ``wide``); ``deleted`` sorted, distinct.

    Each run of live rows is written in whole blocks of 8 (the buffer has 8 spare slots), so a
    short run costs one vector store instead of a loop set-up.
    """
    cdef Py_ssize_t n = deleted.shape[0], i, b, t, k = 0, cur = 0, stop, run
    check_sorted_offsets(deleted, num_rows)
    buf = np.empty(num_rows - n + BLOCK, dtype=np.uint64 if wide else np.uint32)
    cdef uint64_t[::1] o64
    cdef uint32_t[::1] o32
    cdef uint64_t* p64
    cdef uint32_t* p32
    if wide:
        o64 = buf
        p64 = &o64[0]
        with nogil:
            for i in range(n + 1):
                stop = deleted[i] if i < n else num_rows
                run = stop - cur
                b = 0
                while b < run:
                    for t in range(8):
                        p64[k + b + t] = <uint64_t>(cur + b + t)
                    b += 8
                k += run
                cur = stop + 1
    else:
        o32 = buf
        p32 = &o32[0]
        with nogil:
            for i in range(n + 1):
                stop = deleted[i] if i < n else num_rows
                run = stop - cur
                b = 0
                while b < run:
                    for t in range(8):
                        p32[k + b + t] = <uint32_t>(cur + b + t)
                    b += 8
                k += run
                cur = stop + 1
    return buf[:num_rows - n]


def sorted_unique(const uint32_t[::1] values):
    """``values`` sorted with duplicates removed (uint32).

    Already strictly increasing input is returned as is; otherwise, when the value range is
    not much wider than the count, a presence table is filled and read back in order (linear
    time), else numpy sorts.
    """
    cdef Py_ssize_t n = values.shape[0], i, k = 0
    cdef uint32_t mx = 0
    cdef uint64_t span
    if n == 0:
        return np.empty(0, dtype=np.uint32)
    with nogil:
        i = _first_unsorted(values)
    if i < 0:
        return np.asarray(values)
    with nogil:
        for i in range(n):
            if values[i] > mx:
                mx = values[i]
    span = <uint64_t>mx + 1
    if span > 16 * <uint64_t>n + (1 << 20):
        out = np.sort(np.asarray(values))
        keep = np.empty(n, dtype=np.bool_)
        keep[0] = True
        np.not_equal(out[1:], out[:n - 1], out=keep[1:])
        return out[keep]
    seen = np.zeros(span, dtype=np.uint8)
    cdef uint8_t[::1] sv = seen
    cdef Py_ssize_t count = 0
    with nogil:
        for i in range(n):
            if not sv[values[i]]:
                sv[values[i]] = 1
                count += 1
    out = np.empty(count, dtype=np.uint32)
    cdef uint32_t[::1] ov = out
    with nogil:
        for i in range(<Py_ssize_t>span):
            if sv[i]:
                ov[k] = <uint32_t>i
                k += 1
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
