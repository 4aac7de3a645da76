# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Fuzzy term expansion of the FTS index: the tokens within an edit distance of a query token.

Lance walks its token FST with the ``fst`` crate's Levenshtein automaton (insertions,
deletions and substitutions of characters; no transpositions), optionally intersected with a
prefix, and takes the first ``max_expansions`` keys in key order. :func:`within_distance` does
the same over the vocabulary given in key (UTF-8 byte) order, with a banded dynamic program per
token that stops as soon as every cell exceeds the distance.
"""
from libc.stdint cimport int32_t, uint32_t
from libc.stdlib cimport free, malloc

import numpy as np


def within_distance(str query, list vocabulary, int distance, str prefix, Py_ssize_t limit):
    """Indices into ``vocabulary`` (sorted) of the first ``limit`` tokens that start with
    ``prefix`` and are at most ``distance`` edits from ``query``."""
    cdef Py_ssize_t m = len(query), n, i, j, k, found = 0
    cdef int32_t* prev = <int32_t*>malloc((m + 1) * sizeof(int32_t))
    cdef int32_t* cur = <int32_t*>malloc((m + 1) * sizeof(int32_t))
    cdef int32_t* tmp
    cdef int32_t best, v, cost
    cdef uint32_t* q = <uint32_t*>malloc((m + 1) * sizeof(uint32_t))
    cdef str tok
    out = []
    if prev == NULL or cur == NULL or q == NULL:
        free(prev)
        free(cur)
        free(q)
        raise MemoryError()
    try:
        for i in range(m):
            q[i] = ord(query[i])
        for k in range(len(vocabulary)):
            if found >= limit:
                break
            tok = vocabulary[k]
            if prefix and not tok.startswith(prefix):
                continue
            n = len(tok)
            if n - m > distance or m - n > distance:
                continue
            for i in range(m + 1):
                prev[i] = <int32_t>i
            best = 0
            for j in range(1, n + 1):
                cur[0] = <int32_t>j
                best = cur[0]
                for i in range(1, m + 1):
                    cost = 0 if q[i - 1] == <uint32_t>ord(tok[j - 1]) else 1
                    v = prev[i - 1] + cost
                    if prev[i] + 1 < v:
                        v = prev[i] + 1
                    if cur[i - 1] + 1 < v:
                        v = cur[i - 1] + 1
                    cur[i] = v
                    if v < best:
                        best = v
                if best > distance:
                    break
                tmp = prev
                prev = cur
                cur = tmp
            else:
                if prev[m] <= distance:
                    out.append(k)
                    found += 1
    finally:
        free(prev)
        free(cur)
        free(q)
    return out
