# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, nonecheck=False, cdivision=True
"""xxHash64 (seed 0) and Split Block Bloom Filter bits, as Lance's BLOOMFILTER index uses them.

A value is hashed over its little-endian bytes (fixed-width types: the Arrow value buffer's
bytes; strings and binary: the value's bytes). A filter is ``nblocks`` blocks of eight 32-bit
words; the hash's high 32 bits pick the block (``(hi * nblocks) >> 32``), its low 32 bits times
each of eight salts pick one bit per word (the top five bits of the product). Loops run
without the GIL over whole arrays; lengths and offsets are checked before any loop reads.
"""
import numpy as np
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef uint64_t P1 = 0x9E3779B185EBCA87ULL
cdef uint64_t P2 = 0xC2B2AE3D27D4EB4FULL
cdef uint64_t P3 = 0x165667B19E3779F9ULL
cdef uint64_t P4 = 0x85EBCA77C2B2AE63ULL
cdef uint64_t P5 = 0x27D4EB2F165667C5ULL

cdef uint32_t[8] SALT
SALT[:] = [0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d,
           0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31]

import sys
if sys.byteorder != "little":  # the word and value layouts below are little-endian
    raise ImportError("lancefmt's bloom filter kernels need a little-endian machine")


cdef inline uint64_t rotl(uint64_t x, int r) noexcept nogil:
    return (x << r) | (x >> (64 - r))


cdef inline uint64_t rd64(const uint8_t* p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)
    return v


cdef inline uint32_t rd32(const uint8_t* p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef inline uint64_t xround(uint64_t acc, uint64_t lane) noexcept nogil:
    acc += lane * P2
    acc = rotl(acc, 31)
    return acc * P1


cdef inline uint64_t xmerge(uint64_t acc, uint64_t v) noexcept nogil:
    acc ^= xround(0, v)
    return acc * P1 + P4


cdef uint64_t xxh64(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """xxHash64 of ``n`` bytes at ``p``, seed 0."""
    cdef const uint8_t* end = p + n
    cdef uint64_t h, v1, v2, v3, v4
    if n >= 32:
        v1 = P1 + P2
        v2 = P2
        v3 = 0
        v4 = 0 - P1
        while p + 32 <= end:
            v1 = xround(v1, rd64(p))
            v2 = xround(v2, rd64(p + 8))
            v3 = xround(v3, rd64(p + 16))
            v4 = xround(v4, rd64(p + 24))
            p += 32
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)
        h = xmerge(h, v1)
        h = xmerge(h, v2)
        h = xmerge(h, v3)
        h = xmerge(h, v4)
    else:
        h = P5
    h += <uint64_t>n
    while p + 8 <= end:
        h ^= xround(0, rd64(p))
        h = rotl(h, 27) * P1 + P4
        p += 8
    if p + 4 <= end:
        h ^= (<uint64_t>rd32(p)) * P1
        h = rotl(h, 23) * P2 + P3
        p += 4
    while p < end:
        h ^= (<uint64_t>p[0]) * P5
        h = rotl(h, 11) * P1
        p += 1
    h ^= h >> 33
    h *= P2
    h ^= h >> 29
    h *= P3
    h ^= h >> 32
    return h


def xxhash64(const uint8_t[::1] data):
    """xxHash64 (seed 0) of ``data``."""
    return int(xxh64(&data[0] if data.shape[0] else NULL, data.shape[0]))


def hash_fixed(const uint8_t[::1] data, Py_ssize_t width):
    """Hashes of the ``len(data) // width`` values of ``width`` bytes each in ``data``."""
    if width <= 0 or data.shape[0] % width:
        raise ValueError(f"{data.shape[0]} bytes are not a whole number of {width}-byte values")
    cdef Py_ssize_t n = data.shape[0] // width, i
    out_np = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] out = out_np
    if n == 0:
        return out_np
    cdef const uint8_t* base = &data[0]
    with nogil:
        for i in range(n):
            out[i] = xxh64(base + i * width, width)
    return out_np


def hash_var(const int64_t[::1] offsets, const uint8_t[::1] data):
    """Hashes of the ``len(offsets) - 1`` byte strings ``data[offsets[i]:offsets[i+1]]``."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, i
    if n < 0:
        raise ValueError("offsets are empty")
    cdef int64_t size = data.shape[0]
    with nogil:
        for i in range(n):
            if offsets[i] < 0 or offsets[i] > offsets[i + 1] or offsets[i + 1] > size:
                break
        else:
            i = -1
    if i >= 0:
        raise ValueError(f"offset {i} is out of order or past the {size} data bytes")
    out_np = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] out = out_np
    cdef const uint8_t* base = &data[0] if size else NULL
    with nogil:
        for i in range(n):
            out[i] = xxh64(base + offsets[i], offsets[i + 1] - offsets[i])
    return out_np


cdef inline Py_ssize_t block_of(uint64_t h, uint64_t nblocks) noexcept nogil:
    return <Py_ssize_t>(((h >> 32) * nblocks) >> 32)


def insert(uint32_t[:, ::1] filters, const int64_t[::1] zone, const uint64_t[::1] hashes):
    """Set the bits of ``hashes[i]`` in filter ``zone[i]`` (a row of ``filters``: words)."""
    cdef Py_ssize_t n = hashes.shape[0], i, k, b, z
    cdef Py_ssize_t nzones = filters.shape[0], nwords = filters.shape[1]
    cdef uint64_t nblocks = <uint64_t>(nwords // 8)
    cdef uint32_t lo
    if zone.shape[0] != n:
        raise ValueError("zone ids and hashes differ in length")
    if nwords == 0 or nwords % 8:
        raise ValueError(f"a filter of {nwords} words is not whole blocks")
    with nogil:
        for i in range(n):
            if zone[i] < 0 or zone[i] >= nzones:
                break
        else:
            i = -1
    if i >= 0:
        raise ValueError(f"zone id {zone[i]} is not one of the {nzones} filters")
    with nogil:
        for i in range(n):
            z = zone[i]
            b = block_of(hashes[i], nblocks) * 8
            lo = <uint32_t>hashes[i]
            for k in range(8):
                filters[z, b + k] |= (<uint32_t>1) << ((lo * SALT[k]) >> 27)


def probe(const uint32_t[::1] words, const int64_t[::1] start, const int64_t[::1] nblocks,
          const uint64_t[::1] hashes):
    """Per filter (words ``start[z]`` .. ``start[z] + 8 * nblocks[z]``): whether any of
    ``hashes`` may be in it."""
    cdef Py_ssize_t nz = start.shape[0], z, j, k, b, nh = hashes.shape[0]
    cdef int64_t nwords = words.shape[0]
    cdef uint32_t lo
    cdef bint hit
    if nblocks.shape[0] != nz:
        raise ValueError("filter starts and sizes differ in length")
    with nogil:
        for z in range(nz):
            if nblocks[z] <= 0 or start[z] < 0 or start[z] + 8 * nblocks[z] > nwords:
                break
        else:
            z = -1
    if z >= 0:
        raise ValueError(f"filter {z} lies outside the {nwords} words")
    out_np = np.zeros(nz, dtype=np.bool_)
    cdef uint8_t[::1] out = out_np.view(np.uint8)
    with nogil:
        for z in range(nz):
            for j in range(nh):
                b = start[z] + block_of(hashes[j], <uint64_t>nblocks[z]) * 8
                lo = <uint32_t>hashes[j]
                hit = True
                for k in range(8):
                    if words[b + k] & ((<uint32_t>1) << ((lo * SALT[k]) >> 27)) == 0:
                        hit = False
                        break
                if hit:
                    out[z] = 1
                    break
    return out_np
