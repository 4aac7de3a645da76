# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Fuzzy term expansion of the FTS index: the tokens within an edit distance of a query token.

Lance walks its token FST with the ``fst`` crate's Levenshtein automaton (insertions,
deletions and substitutions of characters; no transpositions), optionally intersected with a
prefix, and takes the first ``max_expansions`` keys in key order. :func:`within_distance` does
the same over the vocabulary in key (UTF-8 byte) order, given as one array of code points with
offsets (:func:`code_points`), with a dynamic program per token that stops as soon as a whole
row exceeds the distance.
"""
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport free, malloc

import numpy as np


def code_points(list vocabulary):
    """(code points uint32, offsets int64) of the tokens, in order."""
    lens = np.fromiter((len(t) for t in vocabulary), dtype=np.int64, count=len(vocabulary))
    offsets = np.zeros(len(vocabulary) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    text = "".join(vocabulary)
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) if text else np.empty(0, np.uint32)
    return codes.copy(), offsets


def within_distance(str query, const uint32_t[::1] codes, const int64_t[::1] offsets,
                    int distance, str prefix, Py_ssize_t limit):
    """Indices of the first ``limit`` tokens that start with ``prefix`` and are at most
    ``distance`` edits from ``query``."""
    cdef Py_ssize_t m = len(query), pl = len(prefix), ntok = offsets.shape[0] - 1
    cdef Py_ssize_t i, j, k, n, found = 0
    cdef int64_t a
    cdef int32_t best, v, cost
    cdef int32_t* prev = <int32_t*>malloc((m + 1) * sizeof(int32_t))
    cdef int32_t* cur = <int32_t*>malloc((m + 1) * sizeof(int32_t))
    cdef int32_t* tmp
    cdef uint32_t* q = <uint32_t*>malloc((m + pl + 1) * sizeof(uint32_t))
    cdef uint32_t* pre
    cdef bint ok
    out = []
    if prev == NULL or cur == NULL or q == NULL:
        free(prev); free(cur); free(q)
        raise MemoryError()
    if offsets.shape[0] < 1 or offsets[ntok] > codes.shape[0]:
        free(prev); free(cur); free(q)
        raise ValueError("offsets beyond the code points")
    pre = q + m
    try:
        for i in range(m):
            q[i] = ord(query[i])
        for i in range(pl):
            pre[i] = ord(prefix[i])
        for k in range(ntok):
            if found >= limit:
                break
            a = offsets[k]
            n = offsets[k + 1] - a
            if n < 0:
                raise ValueError("offsets must ascend")
            if n - m > distance or m - n > distance or n < pl:
                continue
            ok = True
            for i in range(pl):
                if codes[a + i] != pre[i]:
                    ok = False
                    break
            if not ok:
                continue
            for i in range(m + 1):
                prev[i] = <int32_t>i
            for j in range(1, n + 1):
                cur[0] = <int32_t>j
                best = cur[0]
                for i in range(1, m + 1):
                    cost = 0 if q[i - 1] == codes[a + j - 1] else 1
                    v = prev[i - 1] + cost
                    if prev[i] + 1 < v:
                        v = prev[i] + 1
                    if cur[i - 1] + 1 < v:
                        v = cur[i - 1] + 1
                    cur[i] = v
                    if v < best:
                        best = v
                tmp = prev
                prev = cur
                cur = tmp
                if best > distance:
                    break
            else:
                if prev[m] <= distance:
                    out.append(k)
                    found += 1
    finally:
        free(prev); free(cur); free(q)
    return out
