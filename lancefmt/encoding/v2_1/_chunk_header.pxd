"""The one check of a mini-block chunk's header (2.1/2.2, one value buffer), shared by the
kernels that read single chunks straight from page bytes (``_fastlanes.take_miniblock_rows``,
``lancefmt.dataset._direct_take``).

A chunk is ``[u16 level count][u16 (2.1) or u32 (2.2) value-buffer size]``, padded to 8 bytes,
then the value buffer."""
from libc.stdint cimport int64_t, uint8_t

cdef enum:  # what ``chunk_values`` found
    CHUNK_OK = 0
    CHUNK_OUTSIDE = 1   # the chunk does not lie inside the page data
    CHUNK_OVERRUN = 2   # its header or value buffer runs past the chunk


cdef inline int64_t header_word(const uint8_t* p, int width) noexcept nogil:
    """A little-endian u16 (2.1) or u32 (2.2) chunk-header word."""
    if width == 2:
        return p[0] | (<int64_t>p[1] << 8)
    return p[0] | (<int64_t>p[1] << 8) | (<int64_t>p[2] << 16) | (<int64_t>p[3] << 24)


cdef inline int chunk_values(const uint8_t* src, int64_t size, int64_t s, int64_t csize,
                             int size_width, int64_t* vstart, int64_t* vlen) noexcept nogil:
    """Where the value buffer of the chunk at ``src[s:s + csize]`` starts (an offset into
    ``src``) and its length, checked against the chunk and the ``size`` bytes of ``src``;
    CHUNK_OK, or which check failed (the outputs are then undefined)."""
    cdef int64_t head = 2 + size_width
    if s < 0 or csize < 0 or s > size or csize > size - s:
        return CHUNK_OUTSIDE
    if head > csize:
        return CHUNK_OVERRUN
    vlen[0] = header_word(src + s + 2, size_width)
    vstart[0] = (head + 7) & ~(<int64_t>7)
    if vstart[0] + vlen[0] > csize:
        return CHUNK_OVERRUN
    vstart[0] += s
    return CHUNK_OK
