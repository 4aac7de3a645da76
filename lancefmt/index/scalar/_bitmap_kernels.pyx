# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
"""Cython kernels under ``lancefmt.index.scalar.bitmap_file``: row ids grouped by value, every
group's RowIdTreeMap bytes written in one pass, and every map of a file decoded in one pass.

Grouping is a counting sort: one pass counts the rows of each group, one scatters the ids into
their group's slice, in input order (so each group's ids stay ascending when the input's are).
Serializing sizes every group's map first, then writes them into one buffer; decoding counts
first, then fills one array. Inputs are checked once before the unchecked loops, and every
byte a decode reads is bounds-checked.
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


# -- RowIdTreeMap parsing -----------------------------------------------------------------------
# Every map of a lookup decoded at once (update, remap, merge read them all). Portable roaring
# bitmaps with or without run containers are read; every count, length and order is checked
# against the bytes present, and the values of each map come out ascending and distinct.
cdef enum:
    COOKIE_RUNS = 12347
    NO_OFFSET_THRESHOLD = 4
    BAD = -1
    WHOLE_FRAGMENT = -2


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


cdef inline uint32_t _get32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint32_t _get16(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8)


cdef int64_t _roaring(const uint8_t* p, int64_t size, uint64_t high, uint64_t* out,
                      int64_t room) noexcept nogil:
    """Decode one roaring bitmap of exactly ``size`` bytes; values (| high) go to ``out``
    (``room`` slots; NULL: only count). Returns the value count, or BAD."""
    cdef int64_t pos, n, i, k, card, total = 0, nruns, r, start, length, w, ncont_bytes
    cdef uint32_t cookie, key, prev_key = 0, v, prev
    cdef uint64_t word
    cdef const uint8_t* runflags = NULL
    cdef bint has_offsets, is_run
    if size < 8:
        return BAD
    cookie = _get32(p)
    if (cookie & 0xFFFF) == COOKIE_RUNS:
        n = (cookie >> 16) + 1
        runflags = p + 4
        pos = 4 + (n + 7) // 8
        has_offsets = n >= NO_OFFSET_THRESHOLD
    elif cookie == COOKIE:
        n = _get32(p + 4)
        pos = 8
        has_offsets = True
    else:
        return BAD
    if n > (size - pos) // 4:
        return BAD
    ncont_bytes = pos  # container headers start here
    pos += 4 * n + (4 * n if has_offsets else 0)
    if pos > size:
        return BAD
    for i in range(n):
        key = _get16(p + ncont_bytes + 4 * i)
        card = <int64_t>_get16(p + ncont_bytes + 4 * i + 2) + 1
        if i and key <= prev_key:
            return BAD
        prev_key = key
        is_run = runflags != NULL and (runflags[i >> 3] >> (i & 7)) & 1
        k = 0
        if is_run:
            if pos + 2 > size:
                return BAD
            nruns = _get16(p + pos)
            pos += 2
            if pos + 4 * nruns > size:
                return BAD
            prev = 0
            for r in range(nruns):
                start = _get16(p + pos + 4 * r)
                length = <int64_t>_get16(p + pos + 4 * r + 2) + 1
                if (r and start < prev) or start + length > 65536 or k + length > card:
                    return BAD
                if out != NULL:
                    if total + k + length > room:
                        return BAD
                    for w in range(length):
                        out[total + k + w] = high | (<uint64_t>key << 16) | <uint64_t>(start + w)
                k += length
                prev = <uint32_t>(start + length)  # the next run starts after this one ends
            pos += 4 * nruns
        elif card > ARRAY_LIMIT:
            if pos + 8192 > size:
                return BAD
            for w in range(1024):
                word = 0
                for r in range(8):
                    word |= (<uint64_t>p[pos + 8 * w + r]) << (8 * r)
                while word:
                    v = <uint32_t>(w * 64) + <uint32_t>__builtin_ctzll(word)
                    word &= word - 1
                    if k >= card:
                        return BAD
                    if out != NULL:
                        if total + k >= room:
                            return BAD
                        out[total + k] = high | (<uint64_t>key << 16) | v
                    k += 1
            pos += 8192
        else:
            if pos + 2 * card > size:
                return BAD
            for r in range(card):
                v = _get16(p + pos + 2 * r)
                if r and v <= prev:
                    return BAD
                prev = v
                if out != NULL:
                    if total + r >= room:
                        return BAD
                    out[total + r] = high | (<uint64_t>key << 16) | v
            k = card
            pos += 2 * card
        if k != card:
            return BAD
        total += card
    if pos != size:
        return BAD
    return total



cdef int64_t _treemap(const uint8_t* p, int64_t size, uint64_t* out, int64_t room) noexcept nogil:
    """Decode one RowIdTreeMap; returns the number of ids, BAD or WHOLE_FRAGMENT."""
    cdef int64_t pos = 4, entries, e, n, got, total = 0
    cdef uint32_t frag
    cdef int64_t last = -1
    if size < 4:
        return BAD
    entries = _get32(p)
    if entries > (size - 4) // 8:
        return BAD
    for e in range(entries):
        if pos + 8 > size:
            return BAD
        frag = _get32(p + pos)
        n = _get32(p + pos + 4)
        pos += 8
        if <int64_t>frag <= last:
            return BAD
        last = frag
        if n == 0:
            return WHOLE_FRAGMENT
        if n > size - pos:
            return BAD
        got = _roaring(p + pos, n, <uint64_t>frag << 32,
                       NULL if out == NULL else out + total, room - total)
        if got < 0:
            return got
        total += got
        pos += n
    if pos != size:
        return BAD
    return total


def decode_treemaps(const uint8_t[::1] data, const int64_t[::1] offsets):
    """(ids, bounds): the row ids of every map ``data[offsets[g]:offsets[g + 1]]``, map ``g``'s
    (ascending, distinct) at ``ids[bounds[g]:bounds[g + 1]]``. ValueError names the first bad
    map; NotImplementedError a map selecting a whole fragment."""
    cdef Py_ssize_t g, ngroups = offsets.shape[0] - 1, size = data.shape[0]
    cdef int64_t got
    if ngroups < 0:
        raise ValueError("offsets must not be empty")
    for g in range(ngroups):
        if offsets[g] < 0 or offsets[g] > offsets[g + 1] or offsets[g + 1] > size:
            raise ValueError(f"map {g} at [{offsets[g]}, {offsets[g + 1]}) outside {size} bytes")
    bounds_arr = np.zeros(ngroups + 1, dtype=np.int64)
    cdef int64_t[::1] bounds = bounds_arr
    cdef const uint8_t* base = &data[0] if size else NULL
    cdef Py_ssize_t bad = -1
    cdef int64_t code = 0, room
    with nogil:
        for g in range(ngroups):
            got = _treemap(base + offsets[g], offsets[g + 1] - offsets[g], NULL, 0) \
                if offsets[g + 1] > offsets[g] else BAD
            if got < 0:
                bad, code = g, got
                break
            bounds[g + 1] = bounds[g] + got
    if bad >= 0:
        if code == WHOLE_FRAGMENT:
            raise NotImplementedError(f"row-id map {bad} selects a whole fragment")
        raise ValueError(f"row-id map {bad} is malformed")
    ids_arr = np.empty(bounds[ngroups], dtype=np.uint64)
    cdef uint64_t[::1] ids = ids_arr
    cdef uint64_t* dst = &ids[0] if bounds[ngroups] else NULL
    with nogil:
        for g in range(ngroups):
            room = bounds[g + 1] - bounds[g]
            if room:
                got = _treemap(base + offsets[g], offsets[g + 1] - offsets[g], dst + bounds[g], room)
                if got != room:
                    bad = g
                    break
    if bad >= 0:
        raise ValueError(f"row-id map {bad} is malformed")
    return ids_arr, bounds_arr
