# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
"""Cython kernels under ``lancefmt.index.scalar.bitmap_file``: row ids grouped by value, and
every group's RowIdTreeMap bytes in one pass.

Grouping is a counting sort: one pass counts the rows of each group, one scatters the ids into
their group's slice, in input order (so each group's ids stay ascending when the input's are).
Serializing sizes every group's map first, then writes them into one buffer. Inputs are checked
once before the unchecked loops.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset

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


# -- RowIdTreeMap serialization ---------------------------------------------------------------
# Per group: u32 fragments, then per fragment u32 id, u32 size and a portable roaring bitmap
# without run containers (cookie 12346, then per container u16 key and u16 cardinality - 1,
# then u32 offsets, then the containers: sorted u16 values, or 1024 u64 words above 4096
# values) -- the bytes Lance's roaring-rs writes.
cdef enum:
    ARRAY_LIMIT = 4096
    COOKIE = 12346


cdef inline void _put32(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = (v >> 24) & 0xFF


cdef inline void _put16(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF


cdef Py_ssize_t _fragment_end(const uint64_t[::1] ids, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    cdef uint64_t high = ids[i] >> 32
    while i < end and (ids[i] >> 32) == high:
        i += 1
    return i


cdef Py_ssize_t _container_end(const uint64_t[::1] ids, Py_ssize_t i, Py_ssize_t end,
                               Py_ssize_t* card) noexcept nogil:
    """End of the run of ids sharing ids[i]'s high 48 bits; distinct values counted in card."""
    cdef uint64_t key = ids[i] >> 16
    cdef Py_ssize_t c = 1
    i += 1
    while i < end and (ids[i] >> 16) == key:
        if ids[i] != ids[i - 1]:
            c += 1
        i += 1
    card[0] = c
    return i


cdef Py_ssize_t _group_size(const uint64_t[::1] ids, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    cdef Py_ssize_t size = 4, i = s, fe, card
    while i < e:
        fe = _fragment_end(ids, i, e)
        size += 8 + 8
        while i < fe:
            i = _container_end(ids, i, fe, &card)
            size += 8 + (2 * card if card <= ARRAY_LIMIT else 8192)
    return size


cdef Py_ssize_t _write_group(const uint64_t[::1] ids, Py_ssize_t s, Py_ssize_t e,
                             uint8_t* out) noexcept nogil:
    cdef Py_ssize_t i = s, fe, ce, j, card, nfrag = 0, ncont, c, pos = 4, start, head
    cdef uint8_t* words
    cdef uint32_t low
    cdef uint64_t prev
    while i < e:
        fe = _fragment_end(ids, i, e)
        nfrag += 1
        _put32(out + pos, <uint32_t>(ids[i] >> 32))
        start = pos + 8  # the roaring bitmap
        ncont = 0
        j = i
        while j < fe:
            j = _container_end(ids, j, fe, &card)
            ncont += 1
        _put32(out + start, COOKIE)
        _put32(out + start + 4, <uint32_t>ncont)
        head = start + 8
        pos = head + 8 * ncont  # container data
        c = 0
        while i < fe:
            ce = _container_end(ids, i, fe, &card)
            _put16(out + head + 4 * c, <uint32_t>((ids[i] >> 16) & 0xFFFF))
            _put16(out + head + 4 * c + 2, <uint32_t>(card - 1))
            _put32(out + head + 4 * ncont + 4 * c, <uint32_t>(pos - start))
            if card <= ARRAY_LIMIT:
                prev = ids[i] + 1
                for j in range(i, ce):
                    if ids[j] != prev:
                        _put16(out + pos, <uint32_t>(ids[j] & 0xFFFF))
                        pos += 2
                    prev = ids[j]
            else:
                words = out + pos
                memset(words, 0, 8192)
                for j in range(i, ce):
                    low = <uint32_t>(ids[j] & 0xFFFF)
                    words[low >> 3] |= <uint8_t>(1 << (low & 7))  # little-endian u64 words
                pos += 8192
            c += 1
            i = ce
        _put32(out + start - 4, <uint32_t>(pos - start))
    _put32(out, <uint32_t>nfrag)
    return pos


def serialize_groups(const uint64_t[::1] ids, const int64_t[::1] bounds):
    """(data, offsets): the RowIdTreeMap of every group ``ids[bounds[g]:bounds[g + 1]]`` (each
    ascending; repeats are written once), group ``g`` at ``data[offsets[g]:offsets[g + 1]]``."""
    cdef Py_ssize_t g, i, ngroups = bounds.shape[0] - 1, n = ids.shape[0]
    if ngroups < 0:
        raise ValueError("bounds must not be empty")
    for g in range(ngroups):
        if bounds[g] < 0 or bounds[g] > bounds[g + 1] or bounds[g + 1] > n:
            raise ValueError(f"group {g} bounds [{bounds[g]}, {bounds[g + 1]}) outside {n} ids")
        for i in range(bounds[g] + 1, bounds[g + 1]):
            if ids[i] < ids[i - 1]:
                raise ValueError(f"ids of group {g} are not ascending")
    offsets_arr = np.zeros(ngroups + 1, dtype=np.int64)
    cdef int64_t[::1] offsets = offsets_arr
    with nogil:
        for g in range(ngroups):
            offsets[g + 1] = offsets[g] + _group_size(ids, bounds[g], bounds[g + 1])
    data_arr = np.empty(offsets[ngroups], dtype=np.uint8)
    cdef uint8_t[::1] data = data_arr
    cdef Py_ssize_t wrote
    cdef bint bad = False
    with nogil:
        for g in range(ngroups):
            if offsets[g + 1] > offsets[g]:
                wrote = _write_group(ids, bounds[g], bounds[g + 1], &data[offsets[g]])
                if wrote != offsets[g + 1] - offsets[g]:
                    bad = True
    if bad:
        raise RuntimeError("treemap sizes disagree")  # a bug, never input-dependent
    return data_arr, offsets_arr
