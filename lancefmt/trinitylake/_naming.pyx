# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""C loops behind lancefmt.trinitylake.locations: the 23-character binary prefixes of optimized
file names (from 32-bit hashes, many at once) and root-node file names from version numbers."""
from libc.stdint cimport uint32_t, uint64_t
from cpython.bytes cimport PyBytes_FromStringAndSize

cdef enum:
    PREFIX_LEN = 23          # bbbb/bbbb/bbbb/bbbbbbbb


cdef inline void _write_prefix(uint32_t h, char* out) noexcept nogil:
    """The low 20 bits of ``h``, most significant first, as ``bbbb/bbbb/bbbb/bbbbbbbb``."""
    cdef int bit, k = 0, n = 0
    for bit in range(19, -1, -1):
        out[k] = c'1' if (h >> bit) & 1 else c'0'
        k += 1
        n += 1
        if n == 4 or n == 8 or n == 12:
            out[k] = c'/'
            k += 1


def hash_prefix(uint32_t h):
    """The optimized-name prefix for one MurmurHash3 value."""
    cdef char buf[PREFIX_LEN]
    _write_prefix(h, buf)
    return PyBytes_FromStringAndSize(buf, PREFIX_LEN).decode("ascii")


def hash_prefixes(const uint32_t[::1] hashes):
    """One prefix per hash, formatted in a single nogil pass."""
    cdef Py_ssize_t n = hashes.shape[0], i
    cdef bytearray out = bytearray(n * PREFIX_LEN)
    cdef char* o = <char*>out
    with nogil:
        for i in range(n):
            _write_prefix(hashes[i], o + i * PREFIX_LEN)
    text = out.decode("ascii")
    return [text[i * PREFIX_LEN:(i + 1) * PREFIX_LEN] for i in range(n)]


def reversed_binary(uint64_t version, int bits):
    """``version`` as ``bits`` binary digits, least significant first (32 or 64 bits)."""
    cdef char buf[64]
    cdef int i
    if bits != 32 and bits != 64:
        raise ValueError(f"root node names use 32 or 64 bits, not {bits}")
    if bits == 32 and version >> 32:
        raise ValueError(f"version {version} does not fit in 32 bits")
    for i in range(bits):
        buf[i] = c'1' if (version >> i) & 1 else c'0'
    return PyBytes_FromStringAndSize(buf, bits).decode("ascii")


def parse_reversed_binary(str digits):
    """Inverse of :func:`reversed_binary`; None unless ``digits`` is 32 or 64 characters of 0/1."""
    cdef bytes raw
    try:
        raw = digits.encode("ascii")
    except UnicodeEncodeError:
        return None
    cdef Py_ssize_t n = len(raw), i
    cdef const char* s = raw
    cdef uint64_t v = 0
    if n != 32 and n != 64:
        return None
    for i in range(n):
        if s[i] == c'1':
            v |= (<uint64_t>1) << i
        elif s[i] != c'0':
            return None
    return v
