# cython: language_level=3
"""Bounds-checked protobuf wire-format cursor shared by the Cython hot paths.

Every function returns 0 on success and -1 when the input is malformed or would be read past
its end; callers turn -1 into CorruptFileError naming the file. The functions are ``nogil``
inline C, so decoders can walk manifests and sequences without touching Python objects.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t

cdef struct WireCursor:
    const uint8_t* data
    Py_ssize_t pos
    Py_ssize_t end

cdef inline void wire_init(WireCursor* c, const uint8_t* data, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    c.data = data
    c.pos = start
    c.end = end

cdef inline bint wire_done(WireCursor* c) noexcept nogil:
    return c.pos >= c.end

cdef inline int wire_varint(WireCursor* c, uint64_t* out) noexcept nogil:
    """Decode a varint of at most 10 bytes."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if c.pos >= c.end or shift > 63:
            return -1
        b = c.data[c.pos]
        c.pos += 1
        result |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            out[0] = result
            return 0
        shift += 7

cdef inline int wire_tag(WireCursor* c, uint32_t* field, int* wire_type) noexcept nogil:
    cdef uint64_t key
    if wire_varint(c, &key) < 0:
        return -1
    if (key >> 3) == 0 or (key >> 3) > 536870911:
        return -1
    field[0] = <uint32_t>(key >> 3)
    wire_type[0] = <int>(key & 7)
    return 0

cdef inline int wire_len(WireCursor* c, Py_ssize_t* start, Py_ssize_t* length) noexcept nogil:
    """A length-delimited field: its start offset and length, checked against the end."""
    cdef uint64_t n
    if wire_varint(c, &n) < 0:
        return -1
    if n > <uint64_t>(c.end - c.pos):
        return -1
    start[0] = c.pos
    length[0] = <Py_ssize_t>n
    c.pos += <Py_ssize_t>n
    return 0

cdef inline int wire_fixed64(WireCursor* c, uint64_t* out) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    if c.end - c.pos < 8:
        return -1
    for i in range(8):
        v |= (<uint64_t>c.data[c.pos + i]) << (8 * i)
    c.pos += 8
    out[0] = v
    return 0

cdef inline int wire_skip(WireCursor* c, int wire_type) noexcept nogil:
    """Skip one field's value of the given wire type (groups are refused)."""
    cdef uint64_t v
    cdef Py_ssize_t s, n
    if wire_type == 0:
        return wire_varint(c, &v)
    elif wire_type == 1:
        if c.end - c.pos < 8:
            return -1
        c.pos += 8
        return 0
    elif wire_type == 2:
        return wire_len(c, &s, &n)
    elif wire_type == 5:
        if c.end - c.pos < 4:
            return -1
        c.pos += 4
        return 0
    return -1
