# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
"""Cython kernel under ``lancefmt.index.scalar.bitmap_file``: row ids grouped by value.

A counting sort: one pass counts the rows of each group, one pass scatters the ids into their
group's slice, in input order (so each group's ids stay ascending when the input's are). The
inputs are checked once before the unchecked loops.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint64_t

cnp.import_array()


def group_ids(const int32_t[::1] idx, const int64_t[::1] rank, const uint64_t[::1] ids,
              Py_ssize_t ngroups):
    """(bounds, grouped): row ``i`` belongs to group ``rank[idx[i]]`` (in ``[0, ngroups)``);
    ``grouped[bounds[g]:bounds[g + 1]]`` are group ``g``'s ids in input order."""
    cdef Py_ssize_t i, n = idx.shape[0], k = rank.shape[0]
    cdef int32_t d
    cdef int64_t g
    if ids.shape[0] != n:
        raise ValueError(f"{n} dictionary indices for {ids.shape[0]} row ids")
    for i in range(k):
        if rank[i] < 0 or rank[i] >= ngroups:
            raise ValueError(f"group {rank[i]} outside [0, {ngroups})")
    bounds_arr = np.zeros(ngroups + 1, dtype=np.int64)
    grouped_arr = np.empty(n, dtype=np.uint64)
    cdef int64_t[::1] bounds = bounds_arr
    cdef uint64_t[::1] grouped = grouped_arr
    cdef int64_t[::1] pos
    cdef bint bad = False
    with nogil:
        for i in range(n):
            d = idx[i]
            if d < 0 or d >= k:
                bad = True
                break
            bounds[rank[d] + 1] += 1
    if bad:
        raise ValueError(f"dictionary index outside [0, {k})")
    for i in range(ngroups):
        bounds[i + 1] += bounds[i]
    pos_arr = bounds_arr[:ngroups].copy()
    pos = pos_arr
    with nogil:
        for i in range(n):
            g = rank[idx[i]]
            grouped[pos[g]] = ids[i]
            pos[g] += 1
    return bounds_arr, grouped_arr
