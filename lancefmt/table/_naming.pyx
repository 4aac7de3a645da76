# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""C loops behind lancefmt.table.naming: data-file names from UUID bytes (one or many) and
manifest file names in both naming schemes, formatted and parsed without Python objects per
character."""
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize

cdef enum:
    NAME_LEN = 56            # 24 binary chars + 26 hex chars + ".lance"
    V2_STEM = 20             # zero-padded digits of u64::MAX - version

cdef const char* HEX = b"0123456789abcdef"
cdef const char* SUFFIX = b".lance"
cdef const char* MANIFEST_EXT = b".manifest"

cdef inline void _write_data_name(const uint8_t* u, char* out) noexcept nogil:
    """16 UUID bytes -> 56 chars: bytes 0..2 as bits MSB first, bytes 3..15 as lowercase hex."""
    cdef int i, bit, k = 0
    cdef uint8_t b
    for i in range(3):
        b = u[i]
        for bit in range(7, -1, -1):
            out[k] = c'1' if (b >> bit) & 1 else c'0'
            k += 1
    for i in range(3, 16):
        b = u[i]
        out[k] = HEX[b >> 4]
        out[k + 1] = HEX[b & 15]
        k += 2
    for i in range(6):
        out[k + i] = SUFFIX[i]


def data_file_name_from_bytes(const uint8_t[::1] uuid16):
    """The data file name for exactly 16 UUID bytes."""
    cdef char buf[NAME_LEN]
    if uuid16.shape[0] != 16:
        raise ValueError(f"a UUID is 16 bytes, got {uuid16.shape[0]}")
    _write_data_name(&uuid16[0], buf)
    return PyBytes_FromStringAndSize(buf, NAME_LEN).decode("ascii")


def data_file_names_from_random(bytearray rnd):
    """One name per 16 random bytes of ``rnd``, stamped as UUID v4 (version and variant bits),
    the way a random ``Uuid::new_v4`` looks."""
    cdef Py_ssize_t n = len(rnd) // 16, i
    cdef uint8_t* p = <uint8_t*>(<char*>rnd)
    cdef bytearray out
    cdef char* o
    if len(rnd) % 16:
        raise ValueError("random bytes must be a multiple of 16")
    out = bytearray(n * NAME_LEN)
    o = <char*>out
    with nogil:
        for i in range(n):
            p[i * 16 + 6] = (p[i * 16 + 6] & 0x0F) | 0x40
            p[i * 16 + 8] = (p[i * 16 + 8] & 0x3F) | 0x80
            _write_data_name(p + i * 16, o + i * NAME_LEN)
    text = out.decode("ascii")
    return [text[i * NAME_LEN:(i + 1) * NAME_LEN] for i in range(n)]


def v2_manifest_name(uint64_t version):
    """``{u64::MAX - version:020}.manifest``."""
    cdef char buf[V2_STEM + 9]
    cdef uint64_t v = <uint64_t>0xFFFFFFFFFFFFFFFF - version
    cdef int i
    for i in range(V2_STEM - 1, -1, -1):
        buf[i] = <char>(c'0' + (v % 10))
        v //= 10
    memcpy(buf + V2_STEM, MANIFEST_EXT, 9)
    return PyBytes_FromStringAndSize(buf, V2_STEM + 9).decode("ascii")


cdef inline int _parse_digits(const uint8_t* s, Py_ssize_t n, uint64_t* out) noexcept nogil:
    """Decimal u64 with overflow check; -1 if empty, non-digit or too large."""
    cdef uint64_t v = 0, d
    cdef Py_ssize_t i
    if n <= 0 or n > 20:
        return -1
    for i in range(n):
        if s[i] < c'0' or s[i] > c'9':
            return -1
        d = s[i] - c'0'
        if v > (<uint64_t>0xFFFFFFFFFFFFFFFF - d) // 10:
            return -1
        v = v * 10 + d
    out[0] = v
    return 0


def parse_manifest_name(str name):
    """``(version, scheme, detached)`` for a manifest file name, or None for anything else.

    scheme is 1 (V1: ``{v}.manifest``) or 2 (V2: 20 digits, ``u64::MAX - v``); detached names
    ``d{v}.manifest`` come back as ``(v, 2, True)`` (detached versions imply V2, as in Lance).
    Temporary and staged names (``.tmp_*``, ``*.manifest-<uuid>``) are not manifest names.
    """
    cdef bytes raw
    try:
        raw = name.encode("ascii")
    except UnicodeEncodeError:
        return None
    cdef const uint8_t* s = <const uint8_t*>(<char*>raw)
    cdef Py_ssize_t n = len(raw), stem
    cdef uint64_t v
    cdef int i
    if n <= 9:
        return None
    for i in range(9):
        if s[n - 9 + i] != <uint8_t>MANIFEST_EXT[i]:
            return None
    stem = n - 9
    if s[0] == c'd':
        if _parse_digits(s + 1, stem - 1, &v) < 0:
            return None
        return (v, 2, True)
    if _parse_digits(s, stem, &v) < 0:
        return None
    if stem == V2_STEM:
        return (<uint64_t>0xFFFFFFFFFFFFFFFF - v, 2, False)
    return (v, 1, False)
