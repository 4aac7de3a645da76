# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""BM25 accumulation of one partition's posting lists, and the best ``k`` documents.

Each list is a token's documents (ascending) with their precomputed weights; a document's score
is the sum of its lists' weights (float32, in list order, as Lance adds them), times a boost.
A document is a hit when it is live and in at least ``need`` lists. The lists are merged, so a
search costs one pass over their entries; the best ``k`` hits (score descending, then document
ascending) are kept in a heap.
"""
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
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
                float boost, int64_t[::1] counter=None):
    """``lists``: ``(docs uint32 ascending, weights float32, multiplicity)``; ``live``: one
    byte per document. Returns ``(docs int64, scores float32)``: every hit in document order
    when ``k`` < 0, else the best ``k``, best first. The lists are merged (one pass over
    their entries; documents no list holds cost nothing). ``counter[0]`` (if given) gains the
    number of documents scored (live, in enough lists): pylance's ``index_comparisons``."""
    if live.shape[0] != n:
        raise ValueError("one live flag per document is needed")
    cdef Py_ssize_t L = len(lists), i, j, c, hn = 0, total = 0, nout = 0, nscored = 0
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
                nscored += 1
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
        if counter is not None:
            counter[0] += nscored
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


cdef bint phrase_at(int L, const uint32_t** pp, const int64_t* pn, const int64_t* qpos,
                    int64_t* idx, int slop) noexcept nogil:
    """Lance's phrase check over one document: per query token (sorted by query position)
    its positions ``pp[i][:pn[i]]``; iterators advance together until the relative positions
    (position - query position) are non-decreasing with each at most ``slop`` past the one
    before."""
    cdef int i
    cdef int64_t last, nxt, move_to, max_rel, least
    cdef bint all_same, have
    for i in range(L):
        idx[i] = 0
        while idx[i] < pn[i] and <int64_t>pp[i][idx[i]] < qpos[i]:
            idx[i] += 1
    if L == 1:
        return idx[0] < pn[0]
    while True:
        all_same = True
        have = False
        max_rel = 0
        for i in range(L - 1):
            if idx[i] >= pn[i] or idx[i + 1] >= pn[i + 1]:
                return False
            last = <int64_t>pp[i][idx[i]] - qpos[i]
            nxt = <int64_t>pp[i + 1][idx[i + 1]] - qpos[i + 1]
            if last > nxt:
                move_to = last
            else:
                move_to = last + 1 if last + 1 > nxt - slop else nxt - slop
            if not have or move_to > max_rel:
                max_rel = move_to
                have = True
            if not (last <= nxt and nxt <= last + slop):
                all_same = False
                break
        if all_same:
            return True
        for i in range(L):
            least = max_rel + qpos[i]
            while idx[i] < pn[i] and <int64_t>pp[i][idx[i]] < least:
                idx[i] += 1


def phrase_filter(const int64_t[::1] candidates, list tokens, const int64_t[::1] qpos, int slop,
                  Py_ssize_t limit):
    """Which ``candidates`` (documents, in the order to try them) hold the phrase. ``tokens``:
    per query token, sorted by query position (``qpos``), ``(docs uint32, starts int64,
    positions uint32)`` -- its documents ascending and each one's positions
    ``positions[starts[r]:starts[r+1]]``. Stops after ``limit`` matches (< 0: no limit)."""
    cdef int L = len(tokens), i
    cdef Py_ssize_t c, n = candidates.shape[0], found = 0, lo, hi, mid
    cdef const uint32_t** pp = <const uint32_t**>malloc((L + 1) * sizeof(void*))
    cdef int64_t* pn = <int64_t*>malloc((L + 1) * sizeof(int64_t))
    cdef int64_t* idx = <int64_t*>malloc((L + 1) * sizeof(int64_t))
    cdef const uint32_t** dd = <const uint32_t**>malloc((L + 1) * sizeof(void*))
    cdef int64_t* dn = <int64_t*>malloc((L + 1) * sizeof(int64_t))
    cdef const int64_t** ss = <const int64_t**>malloc((L + 1) * sizeof(void*))
    cdef const uint32_t** ps = <const uint32_t**>malloc((L + 1) * sizeof(void*))
    cdef int64_t* pslen = <int64_t*>malloc((L + 1) * sizeof(int64_t))
    cdef const uint32_t[::1] dv
    cdef const int64_t[::1] sv
    cdef const uint32_t[::1] pv
    cdef uint32_t d
    cdef int64_t r, a, b
    cdef bint ok
    out = np.zeros(n, dtype=bool)
    cdef uint8_t[::1] ov = out.view(np.uint8)
    keep = []
    try:
        if qpos.shape[0] != L:
            raise ValueError("one query position per token is needed")
        for i in range(L):
            dv, sv, pv = tokens[i]
            keep.append((dv, sv, pv))
            if sv.shape[0] != dv.shape[0] + 1:
                raise ValueError("one start per document is needed")
            dd[i] = &dv[0] if dv.shape[0] else NULL
            dn[i] = dv.shape[0]
            ss[i] = &sv[0]
            ps[i] = &pv[0] if pv.shape[0] else NULL
            pslen[i] = pv.shape[0]
            if sv[0] < 0 or sv[sv.shape[0] - 1] > pv.shape[0]:
                raise ValueError("position starts out of range")
        with nogil:
            for c in range(n):
                d = <uint32_t>candidates[c]
                ok = True
                for i in range(L):
                    lo = 0
                    hi = dn[i]
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if dd[i][mid] < d:
                            lo = mid + 1
                        else:
                            hi = mid
                    if lo >= dn[i] or dd[i][lo] != d:
                        ok = False
                        break
                    a = ss[i][lo]
                    b = ss[i][lo + 1]
                    if a > b or b > pslen[i]:
                        ok = False
                        break
                    pp[i] = ps[i] + a
                    pn[i] = b - a
                if ok and phrase_at(L, pp, pn, &qpos[0], idx, slop):
                    ov[c] = 1
                    found += 1
                    if limit >= 0 and found >= limit:
                        break
        return out
    finally:
        free(pp); free(pn); free(idx); free(dd); free(dn); free(ss); free(ps); free(pslen)


def sorted_member(const uint64_t[::1] a, const uint64_t[::1] b):
    """For ascending unique ``a`` and ``b``: (mask of ``a`` found in ``b``, each one's place in
    ``b``), by one merge pass that gallops over ``b`` (a few probes into a long ``b`` touch
    about ``log(len(b) / len(a))`` places each, near the last one, not all of ``b``)."""
    cdef Py_ssize_t i = 0, j = 0, na = a.shape[0], nb = b.shape[0], lo, hi, mid, step
    cdef uint64_t x
    mask = np.zeros(na, dtype=bool)
    pos = np.zeros(na, dtype=np.int64)
    cdef uint8_t[::1] mv = mask.view(np.uint8)
    cdef int64_t[::1] pv = pos
    with nogil:
        while i < na and j < nb:
            x = a[i]
            if b[j] < x:
                lo = j          # b[lo] < x: gallop to a bound, then bisect (lo, hi]
                step = 1
                while lo + step < nb and b[lo + step] < x:
                    lo += step
                    step *= 2
                hi = lo + step if lo + step < nb else nb
                lo += 1
                while lo < hi:
                    mid = lo + (hi - lo) // 2
                    if b[mid] < x:
                        lo = mid + 1
                    else:
                        hi = mid
                j = lo
                if j >= nb:
                    break
            if b[j] == x:
                mv[i] = 1
                pv[i] = j
                j += 1
            i += 1
    return mask, pos


cdef inline Py_ssize_t seek(const uint32_t* d, Py_ssize_t p, Py_ssize_t n, uint32_t target) noexcept nogil:
    """The first index >= ``p`` whose document is >= ``target`` (galloping, then binary)."""
    cdef Py_ssize_t step = 1, lo = p, hi
    if p >= n or d[p] >= target:
        return p
    while lo + step < n and d[lo + step] < target:
        lo += step
        step *= 2
    hi = lo + step if lo + step < n else n
    lo += 1
    while lo < hi:
        step = (lo + hi) // 2
        if d[step] < target:
            lo = step + 1
        else:
            hi = step
    return lo


def top_k_pruned(Py_ssize_t n, list lists, const uint8_t[::1] live, int need, Py_ssize_t k,
                 float boost, int64_t[::1] counter=None):
    """The best ``k`` documents as :func:`score_lists` finds them, skipping what cannot rank:
    with ``need`` == 1 (any list) by MaxScore -- once the k-th best score is known, lists whose
    weights together cannot beat it only answer probes for documents of the others; with
    ``need`` == the number of lists (all), the shortest list drives and the others are probed.
    ``counter[0]`` gains the number of documents scored, as in :func:`score_lists` (those
    pruning skips are not)."""
    cdef Py_ssize_t L = len(lists), i, j, c, hn = 0, fe = 0, r, nscored = 0
    if live.shape[0] != n:
        raise ValueError("one live flag per document is needed")
    if k <= 0 or L == 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    cdef const uint32_t** dp = <const uint32_t**>malloc(L * sizeof(void*))
    cdef const float** wp = <const float**>malloc(L * sizeof(void*))
    cdef Py_ssize_t* pos = <Py_ssize_t*>calloc(L, sizeof(Py_ssize_t))
    cdef Py_ssize_t* ln = <Py_ssize_t*>malloc(L * sizeof(Py_ssize_t))
    cdef int* mult = <int*>malloc(L * sizeof(int))
    cdef float* ub = <float*>malloc(L * sizeof(float))
    cdef float* prefix = <float*>malloc(L * sizeof(float))
    cdef float* hs = <float*>malloc((k + 1) * sizeof(float))
    cdef int64_t* hd = <int64_t*>malloc((k + 1) * sizeof(int64_t))
    cdef const uint32_t[::1] docs
    cdef const float[::1] w
    cdef uint32_t cur, no_doc = ~(<uint32_t>0)
    cdef float s, theta, mx
    cdef bint full = False, ok
    cdef int64_t[::1] od
    cdef float[::1] os_
    keep = []
    try:
        if dp == NULL or wp == NULL or pos == NULL or ln == NULL or mult == NULL or ub == NULL \
                or prefix == NULL or hs == NULL or hd == NULL:
            raise MemoryError()
        # lists by upper bound ascending (MaxScore) or by length ascending (AND)
        info = []
        for item in lists:
            docs = item[0]
            w = item[1]
            if docs.shape[0] != w.shape[0]:
                raise ValueError("one weight per document is needed")
            for j in range(1, docs.shape[0]):
                if docs[j] <= docs[j - 1]:
                    raise ValueError("posting documents must ascend")
            if docs.shape[0] and (docs[docs.shape[0] - 1] >= <uint32_t>n
                                  or docs[docs.shape[0] - 1] == no_doc):
                raise ValueError(f"document {docs[docs.shape[0] - 1]} of {n}")
            mx = 0
            for j in range(w.shape[0]):
                if w[j] > mx:
                    mx = w[j]
            info.append((mx * <int>item[2] if need == 1 else docs.shape[0], len(info)))
        info.sort()
        for r in range(L):
            item = lists[info[r][1]]
            docs = item[0]
            w = item[1]
            keep.append((docs, w))
            ln[r] = docs.shape[0]
            dp[r] = &docs[0] if ln[r] else NULL
            wp[r] = &w[0] if ln[r] else NULL
            mult[r] = <int>item[2]
            mx = 0
            for j in range(ln[r]):
                if w[j] > mx:
                    mx = w[j]
            ub[r] = mx * mult[r] * (boost if boost > 0 else 1)
            prefix[r] = ub[r] + (prefix[r - 1] if r else 0)
        with nogil:
            if need == 1:
                while True:
                    # the next document of the essential lists
                    cur = no_doc
                    for i in range(fe, L):
                        if pos[i] < ln[i] and dp[i][pos[i]] < cur:
                            cur = dp[i][pos[i]]
                    if cur == no_doc:
                        break
                    s = 0
                    for i in range(fe, L):
                        if pos[i] < ln[i] and dp[i][pos[i]] == cur:
                            for c in range(mult[i]):
                                s += wp[i][pos[i]]
                            pos[i] += 1
                    # the non-essential lists, while they still could lift it above theta
                    for i in range(fe - 1, -1, -1):
                        if full and (s + prefix[i]) * boost * <float>1.000001 <= theta:
                            break
                        pos[i] = seek(dp[i], pos[i], ln[i], cur)
                        if pos[i] < ln[i] and dp[i][pos[i]] == cur:
                            for c in range(mult[i]):
                                s += wp[i][pos[i]]
                    if not live[cur]:
                        continue
                    nscored += 1
                    if boost != 1:
                        s = s * boost
                    if hn < k:
                        hs[hn] = s
                        hd[hn] = cur
                        hn += 1
                        i = hn - 1
                        while i > 0 and better(hs[(i - 1) // 2], hd[(i - 1) // 2], hs[i], hd[i]):
                            j = (i - 1) // 2
                            hs[i], hs[j] = hs[j], hs[i]
                            hd[i], hd[j] = hd[j], hd[i]
                            i = j
                    elif better(s, cur, hs[0], hd[0]):
                        hs[0] = s
                        hd[0] = cur
                        sift_down(hs, hd, hn, 0)
                    if hn == k:
                        full = True
                        theta = hs[0]
                        while fe < L and prefix[fe] * <float>1.000001 * (boost if boost > 0 else 1) <= theta:
                            fe += 1
            else:
                # every list: the shortest drives
                while pos[0] < ln[0]:
                    cur = dp[0][pos[0]]
                    ok = True
                    for i in range(1, L):
                        pos[i] = seek(dp[i], pos[i], ln[i], cur)
                        if pos[i] >= ln[i]:
                            ok = False
                            pos[0] = ln[0]
                            break
                        if dp[i][pos[i]] != cur:
                            ok = False
                            break
                    if not ok:
                        if pos[0] < ln[0]:
                            pos[0] += 1
                        continue
                    s = 0
                    for i in range(L):
                        for c in range(mult[i]):
                            s += wp[i][pos[i]]
                    pos[0] += 1
                    if not live[cur]:
                        continue
                    nscored += 1
                    if boost != 1:
                        s = s * boost
                    if hn < k:
                        hs[hn] = s
                        hd[hn] = cur
                        hn += 1
                        i = hn - 1
                        while i > 0 and better(hs[(i - 1) // 2], hd[(i - 1) // 2], hs[i], hd[i]):
                            j = (i - 1) // 2
                            hs[i], hs[j] = hs[j], hs[i]
                            hd[i], hd[j] = hd[j], hd[i]
                            i = j
                    elif better(s, cur, hs[0], hd[0]):
                        hs[0] = s
                        hd[0] = cur
                        sift_down(hs, hd, hn, 0)
        if counter is not None:
            counter[0] += nscored
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
        free(dp); free(wp); free(pos); free(ln); free(mult); free(ub); free(prefix)
        free(hs); free(hd)
