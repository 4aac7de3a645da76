# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The base tokenizers of the FTS index, over Arrow string buffers, with raw tokens interned.

A :class:`Splitter` cuts every value of a string array into raw tokens as Lance's base
tokenizers do (``simple``: runs of alphanumeric characters by a code-point bitmap;
``whitespace``: runs between ASCII whitespace; ``raw``: the whole value; ``ngram``: every run of
``min``..``max`` characters, by start then length) and numbers each distinct raw token by its
first appearance (an open-addressing hash table over an arena of the tokens' bytes). Per
occurrence it gives the value's index, the raw token's number and its position (the token's
index among the value's raw tokens). The filters (lower-casing, stemming, ...) then run once per
distinct raw token, in Python. Bytes that are not UTF-8 count as one non-alphanumeric
character each.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np
import pyarrow as pa

cimport numpy as cnp

cnp.import_array()

DEF MODE_SIMPLE = 0
DEF MODE_WHITESPACE = 1
DEF MODE_RAW = 2
DEF MODE_NGRAM = 3

MODES = {"simple": MODE_SIMPLE, "whitespace": MODE_WHITESPACE, "raw": MODE_RAW,
         "ngram": MODE_NGRAM}


cdef struct U32Buf:
    uint32_t* data
    Py_ssize_t n
    Py_ssize_t cap


cdef int buf_push(U32Buf* b, uint32_t v) except -1 nogil:
    cdef Py_ssize_t cap
    cdef uint32_t* grown
    if b.n == b.cap:
        cap = b.cap * 2 if b.cap else 1024
        grown = <uint32_t*>realloc(b.data, cap * sizeof(uint32_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        b.data = grown
        b.cap = cap
    b.data[b.n] = v
    b.n += 1
    return 0


cdef object buf_take(U32Buf* b):
    out = np.empty(b.n, dtype=np.uint32)
    cdef uint32_t[::1] view = out
    if b.n:
        memcpy(&view[0], b.data, b.n * sizeof(uint32_t))
    free(b.data)
    b.data = NULL
    b.n = 0
    b.cap = 0
    return out


cdef inline uint64_t fnv1a(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h ^= p[i]
        h *= 1099511628211ULL
    return h ^ (h >> 29)


cdef inline Py_ssize_t utf8_next(const uint8_t* p, Py_ssize_t i, Py_ssize_t n, uint32_t* cp) noexcept nogil:
    """Decode the character at ``i``; returns its length (1 for a byte that starts no valid
    sequence, with ``cp`` = 0xFFFFFFFF)."""
    cdef uint8_t c = p[i]
    if c < 0x80:
        cp[0] = c
        return 1
    if c >= 0xC2 and c < 0xE0 and i + 1 < n and (p[i + 1] & 0xC0) == 0x80:
        cp[0] = ((c & 0x1F) << 6) | (p[i + 1] & 0x3F)
        return 2
    if c >= 0xE0 and c < 0xF0 and i + 2 < n and (p[i + 1] & 0xC0) == 0x80 and (p[i + 2] & 0xC0) == 0x80:
        cp[0] = ((c & 0x0F) << 12) | ((p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F)
        if cp[0] >= 0x800 and not (0xD800 <= cp[0] < 0xE000):
            return 3
    elif c >= 0xF0 and c < 0xF5 and i + 3 < n and (p[i + 1] & 0xC0) == 0x80 \
            and (p[i + 2] & 0xC0) == 0x80 and (p[i + 3] & 0xC0) == 0x80:
        cp[0] = ((c & 0x07) << 18) | ((p[i + 1] & 0x3F) << 12) | ((p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F)
        if 0x10000 <= cp[0] < 0x110000:
            return 4
    cp[0] = 0xFFFFFFFF
    return 1


cdef class Splitter:
    """Base tokenizer state for one build: the mode, the alphanumeric bitmap and the interned
    raw tokens (see module docstring)."""
    cdef int mode
    cdef int min_gram
    cdef int max_gram
    cdef bint prefix_only
    cdef object _alnum              # bytes, 0x110000 bits
    cdef const uint8_t* alnum
    cdef uint8_t* arena
    cdef Py_ssize_t arena_n
    cdef Py_ssize_t arena_cap
    cdef int64_t* tok_start         # per raw token: arena offset
    cdef uint32_t* tok_len
    cdef uint64_t* tok_hash
    cdef Py_ssize_t n_tokens
    cdef Py_ssize_t tok_cap
    cdef int64_t* slots             # -1 empty, else token number
    cdef Py_ssize_t n_slots
    cdef Py_ssize_t* char_at        # scratch: character starts of one value (ngram)
    cdef Py_ssize_t char_cap

    def __cinit__(self, str mode, bytes alnum_bits, int min_gram=3, int max_gram=3,
                  bint prefix_only=False):
        if mode not in MODES:
            raise ValueError(f"unknown base tokenizer {mode}")
        if len(alnum_bits) != 0x110000 // 8:
            raise ValueError("the alphanumeric bitmap must have 0x110000 bits")
        self.mode = MODES[mode]
        self.min_gram = min_gram
        self.max_gram = max_gram
        self.prefix_only = prefix_only
        self._alnum = alnum_bits
        self.alnum = <const uint8_t*>(<bytes>self._alnum)
        self.n_slots = 1 << 16
        self.slots = <int64_t*>malloc(self.n_slots * sizeof(int64_t))
        if self.slots == NULL:
            raise MemoryError()
        memset(self.slots, 0xFF, self.n_slots * sizeof(int64_t))

    def __dealloc__(self):
        free(self.arena)
        free(self.tok_start)
        free(self.tok_len)
        free(self.tok_hash)
        free(self.slots)
        free(self.char_at)

    @property
    def num_raw_tokens(self) -> int:
        return self.n_tokens

    def raw_tokens(self, Py_ssize_t start=0) -> list:
        """The bytes of raw tokens ``start``.. (in number order)."""
        cdef Py_ssize_t i
        return [(<char*>self.arena)[self.tok_start[i]:self.tok_start[i] + self.tok_len[i]]
                for i in range(start, self.n_tokens)]

    cdef int grow_table(self) except -1:
        cdef Py_ssize_t new_n = self.n_slots * 2, i, s
        cdef int64_t* slots = <int64_t*>malloc(new_n * sizeof(int64_t))
        if slots == NULL:
            raise MemoryError()
        memset(slots, 0xFF, new_n * sizeof(int64_t))
        for i in range(self.n_tokens):
            s = <Py_ssize_t>(self.tok_hash[i] & <uint64_t>(new_n - 1))
            while slots[s] >= 0:
                s = (s + 1) & (new_n - 1)
            slots[s] = i
        free(self.slots)
        self.slots = slots
        self.n_slots = new_n
        return 0

    cdef int64_t intern(self, const uint8_t* p, Py_ssize_t n) except -1:
        cdef uint64_t h = fnv1a(p, n)
        cdef Py_ssize_t s = <Py_ssize_t>(h & <uint64_t>(self.n_slots - 1))
        cdef int64_t t
        cdef Py_ssize_t cap
        while True:
            t = self.slots[s]
            if t < 0:
                break
            if self.tok_hash[t] == h and self.tok_len[t] == n and \
                    memcmp(self.arena + self.tok_start[t], p, n) == 0:
                return t
            s = (s + 1) & (self.n_slots - 1)
        if self.n_tokens == self.tok_cap:
            cap = self.tok_cap * 2 if self.tok_cap else 4096
            self.tok_start = <int64_t*>realloc(self.tok_start, cap * sizeof(int64_t))
            self.tok_len = <uint32_t*>realloc(self.tok_len, cap * sizeof(uint32_t))
            self.tok_hash = <uint64_t*>realloc(self.tok_hash, cap * sizeof(uint64_t))
            if self.tok_start == NULL or self.tok_len == NULL or self.tok_hash == NULL:
                raise MemoryError()
            self.tok_cap = cap
        if self.arena_n + n > self.arena_cap:
            cap = max(self.arena_cap * 2, self.arena_n + n, 1 << 16)
            self.arena = <uint8_t*>realloc(self.arena, cap)
            if self.arena == NULL:
                raise MemoryError()
            self.arena_cap = cap
        memcpy(self.arena + self.arena_n, p, n)
        t = self.n_tokens
        self.tok_start[t] = self.arena_n
        self.tok_len[t] = <uint32_t>n
        self.tok_hash[t] = h
        self.arena_n += n
        self.n_tokens += 1
        self.slots[s] = t
        if self.n_tokens * 2 > self.n_slots:
            self.grow_table()
        return t

    cdef inline bint is_alnum(self, uint32_t cp) noexcept nogil:
        if cp >= 0x110000:
            return False
        return (self.alnum[cp >> 3] >> (cp & 7)) & 1

    cdef int split_value(self, const uint8_t* p, Py_ssize_t n, uint32_t doc,
                         U32Buf* docs, U32Buf* ids, U32Buf* pos) except -1:
        cdef Py_ssize_t i = 0, start = -1, step, k, nchars, g, last
        cdef uint32_t cp, position = 0
        cdef bint inside
        cdef uint8_t c
        if self.mode == MODE_RAW:
            buf_push(docs, doc)
            buf_push(ids, <uint32_t>self.intern(p, n))
            buf_push(pos, 0)
            return 0
        if self.mode == MODE_NGRAM:
            if self.char_cap < n + 1:
                free(self.char_at)
                self.char_at = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
                if self.char_at == NULL:
                    self.char_cap = 0
                    raise MemoryError()
                self.char_cap = n + 1
            nchars = 0
            while i < n:
                self.char_at[nchars] = i
                nchars += 1
                i += utf8_next(p, i, n, &cp)
            self.char_at[nchars] = n
            last = 1 if self.prefix_only else nchars
            for k in range(min(last, nchars)):
                for g in range(self.min_gram, self.max_gram + 1):
                    if k + g > nchars:
                        break
                    buf_push(docs, doc)
                    buf_push(ids, <uint32_t>self.intern(p + self.char_at[k],
                                                        self.char_at[k + g] - self.char_at[k]))
                    buf_push(pos, 0)   # Lance's n-grams all sit at position 0
            return 0
        while i < n:
            c = p[i]
            if self.mode == MODE_WHITESPACE:
                step = 1
                inside = not (c == 32 or c == 9 or c == 10 or c == 12 or c == 13)
            elif c < 0x80:
                step = 1
                inside = (self.alnum[c >> 3] >> (c & 7)) & 1
            else:
                step = utf8_next(p, i, n, &cp)
                inside = self.is_alnum(cp)
            if inside:
                if start < 0:
                    start = i
            elif start >= 0:
                buf_push(docs, doc)
                buf_push(ids, <uint32_t>self.intern(p + start, i - start))
                buf_push(pos, position)
                position += 1
                start = -1
            i += step
        if start >= 0:
            buf_push(docs, doc)
            buf_push(ids, <uint32_t>self.intern(p + start, n - start))
            buf_push(pos, position)
        return 0

    def split(self, values, uint32_t first_doc=0):
        """Raw tokens of every value of ``values`` (a ``string``/``large_string`` array; null
        values have none): ``(doc, raw_id, position)`` uint32 arrays, one entry per token,
        ``doc`` counting from ``first_doc``."""
        cdef U32Buf docs, ids, pos
        memset(&docs, 0, sizeof(U32Buf))
        memset(&ids, 0, sizeof(U32Buf))
        memset(&pos, 0, sizeof(U32Buf))
        cdef Py_ssize_t i, n = len(values), off = values.offset
        cdef const uint8_t* data
        cdef const uint8_t* valid = NULL
        cdef const int32_t* off32 = NULL
        cdef const int64_t* off64 = NULL
        cdef int64_t a, b
        bufs = values.buffers()
        large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
        if bufs[0] is not None and values.null_count:
            valid = <const uint8_t*><uintptr_t>bufs[0].address
        if large:
            off64 = <const int64_t*><uintptr_t>bufs[1].address
        else:
            off32 = <const int32_t*><uintptr_t>bufs[1].address
        data = <const uint8_t*><uintptr_t>(bufs[2].address if bufs[2] is not None else 0)
        try:
            for i in range(n):
                if valid != NULL and not ((valid[(i + off) >> 3] >> ((i + off) & 7)) & 1):
                    continue
                if large:
                    a = off64[i + off]
                    b = off64[i + off + 1]
                else:
                    a = off32[i + off]
                    b = off32[i + off + 1]
                self.split_value(data + a, b - a, first_doc + <uint32_t>i, &docs, &ids, &pos)
        except BaseException:
            free(docs.data)
            free(ids.data)
            free(pos.data)
            raise
        return buf_take(&docs), buf_take(&ids), buf_take(&pos)

