# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""BM25 accumulation of one partition's posting lists, and the best ``k`` documents.

Each list is a token's documents (ascending) with their precomputed weights; a document's score
is the sum of its lists' weights (float32, in list order, as Lance adds them), times a boost.
A document is a hit when it is live and in at least ``need`` lists. The lists are merged, so a
search costs one pass over their entries; the best ``k`` hits (score descending, then document
ascending) are kept in a heap.
"""
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t
from libc.stdlib cimport calloc, free, malloc

import numpy as np


cdef inline bint better(float sa, int64_t da, float sb, int64_t db) noexcept nogil:
    """Whether (sa, da) ranks above (sb, db)."""
    return sa > sb or (sa == sb and da < db)


cdef void sift_down(float* hs, int64_t* hd, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """Min-heap (the worst hit at the top) by rank."""
    cdef Py_ssize_t c, w
    cdef float ts
    cdef int64_t td
    while True:
        w = i
        c = 2 * i + 1
        if c < n and better(hs[w], hd[w], hs[c], hd[c]):
            w = c
        c += 1
        if c < n and better(hs[w], hd[w], hs[c], hd[c]):
            w = c
        if w == i:
            return
        ts = hs[i]; hs[i] = hs[w]; hs[w] = ts
        td = hd[i]; hd[i] = hd[w]; hd[w] = td
        i = w


def score_lists(Py_ssize_t n, list lists, const uint8_t[::1] live, int need, Py_ssize_t k,
                float boost):
    """``lists``: ``(docs uint32 ascending, weights float32, multiplicity)``; ``live``: one
    byte per document. Returns ``(docs int64, scores float32)``: every hit in document order
    when ``k`` < 0, else the best ``k``, best first. The lists are merged (one pass over
    their entries; documents no list holds cost nothing)."""
    if live.shape[0] != n:
        raise ValueError("one live flag per document is needed")
    cdef Py_ssize_t L = len(lists), i, j, c, hn = 0, total = 0, nout = 0
    cdef const uint32_t** dp = <const uint32_t**>malloc((L + 1) * sizeof(void*))
    cdef const float** wp = <const float**>malloc((L + 1) * sizeof(void*))
    cdef Py_ssize_t* pos = <Py_ssize_t*>calloc(L + 1, sizeof(Py_ssize_t))
    cdef Py_ssize_t* ln = <Py_ssize_t*>malloc((L + 1) * sizeof(Py_ssize_t))
    cdef int* mult = <int*>malloc((L + 1) * sizeof(int))
    cdef float* hs = NULL
    cdef int64_t* hd = NULL
    cdef float* all_s = NULL
    cdef int64_t* all_d = NULL
    cdef const uint32_t[::1] docs
    cdef const float[::1] w
    cdef uint32_t cur, d
    cdef uint32_t no_doc = ~(<uint32_t>0)
    cdef float s
    cdef int cnt
    cdef int64_t[::1] od
    cdef float[::1] os_
    keep = []
    if dp == NULL or wp == NULL or pos == NULL or ln == NULL or mult == NULL:
        free(dp); free(wp); free(pos); free(ln); free(mult)
        raise MemoryError()
    try:
        for i in range(L):
            item = lists[i]
            docs = item[0]
            w = item[1]
            keep.append((docs, w))
            if docs.shape[0] != w.shape[0]:
                raise ValueError("one weight per document is needed")
            ln[i] = docs.shape[0]
            total += ln[i]
            mult[i] = <int>item[2]
            if ln[i]:
                dp[i] = &docs[0]
                wp[i] = &w[0]
                for j in range(1, ln[i]):
                    if docs[j] <= docs[j - 1]:
                        raise ValueError("posting documents must ascend")
                if docs[ln[i] - 1] >= <uint32_t>n or docs[ln[i] - 1] == no_doc:
                    raise ValueError(f"document {docs[ln[i] - 1]} of {n}")
        if k < 0:
            all_s = <float*>malloc((total + 1) * sizeof(float))
            all_d = <int64_t*>malloc((total + 1) * sizeof(int64_t))
            if all_s == NULL or all_d == NULL:
                raise MemoryError()
        else:
            hs = <float*>malloc((k + 1) * sizeof(float))
            hd = <int64_t*>malloc((k + 1) * sizeof(int64_t))
            if hs == NULL or hd == NULL:
                raise MemoryError()
        with nogil:
            while True:
                cur = no_doc
                for i in range(L):
                    if pos[i] < ln[i] and dp[i][pos[i]] < cur:
                        cur = dp[i][pos[i]]
                if cur == no_doc:
                    # the largest u32 is never a document (n < 2^32)
                    break
                s = 0
                cnt = 0
                for i in range(L):
                    if pos[i] < ln[i] and dp[i][pos[i]] == cur:
                        for c in range(mult[i]):
                            s += wp[i][pos[i]]
                        cnt += 1
                        pos[i] += 1
                if cnt < need or not live[cur]:
                    continue
                if boost != 1:
                    s = s * boost
                if k < 0:
                    all_d[nout] = cur
                    all_s[nout] = s
                    nout += 1
                elif hn < k:
                    hs[hn] = s
                    hd[hn] = cur
                    hn += 1
                    i = hn - 1
                    while i > 0 and better(hs[(i - 1) // 2], hd[(i - 1) // 2], hs[i], hd[i]):
                        j = (i - 1) // 2
                        hs[i], hs[j] = hs[j], hs[i]
                        hd[i], hd[j] = hd[j], hd[i]
                        i = j
                elif k > 0 and better(s, cur, hs[0], hd[0]):
                    hs[0] = s
                    hd[0] = cur
                    sift_down(hs, hd, hn, 0)
        if k < 0:
            out_d = np.empty(nout, dtype=np.int64)
            out_s = np.empty(nout, dtype=np.float32)
            od = out_d
            os_ = out_s
            for i in range(nout):
                od[i] = all_d[i]
                os_[i] = all_s[i]
            return out_d, out_s
        out_d = np.empty(hn, dtype=np.int64)
        out_s = np.empty(hn, dtype=np.float32)
        od = out_d
        os_ = out_s
        for i in range(hn):
            od[i] = hd[i]
            os_[i] = hs[i]
        order = np.lexsort((out_d, -out_s.astype(np.float64)))
        return out_d[order], out_s[order]
    finally:
        free(dp); free(wp); free(pos); free(ln); free(mult)
        free(hs); free(hd); free(all_s); free(all_d)
