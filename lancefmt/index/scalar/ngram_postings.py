"""The NGRAM index's content in memory: every trigram token with its row ids, and the file.

:class:`Postings` holds the inverted lists as three flat arrays (tokens ascending; list ``k``
is ``ids[offsets[k]:offsets[k+1]]``, ascending and unique), so building, merging (update),
remapping (compaction) and writing are whole-array numpy calls or one Cython kernel
(``_ngram``), never a Python loop over rows or ids.

The file is ``ngram_postings.lance``: ``tokens`` (uint32, nullable as pylance declares it) and
``posting_list`` (binary, not null, written uncompressed as pylance asks with
``lance-encoding:compression=none``), one row per token in ascending order, each list a
serialized 64-bit roaring treemap.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa

from ._ngram import FoldTable, decode_lists, encode_lists, query_tokens, token_lists, union_lists
from .ngram_fold import TABLE

POSTINGS_FILE = "ngram_postings.lance"
TOKENS = "tokens"
POSTING_LIST = "posting_list"
#: Lance reads nothing from a ``contains`` pattern shorter than this (in characters).
MIN_QUERY_CHARS = 3
#: Lance's token for a null value (shared with any trigram that hashes to 0).
NULL_TOKEN = 0
#: largest binary array written at once (int32 offsets)
MAX_CHUNK_BYTES = (1 << 31) - 1

SCHEMA = pa.schema([
    pa.field(TOKENS, pa.uint32(), nullable=True),
    pa.field(POSTING_LIST, pa.binary(), nullable=False,
             metadata={"lance-encoding:compression": "none"}),
])


@lru_cache(maxsize=1)
def fold_table() -> FoldTable:
    return FoldTable(TABLE)


def text_tokens(text: str) -> np.ndarray:
    """Sorted unique trigram tokens of ``text`` as Lance computes them (uint32)."""
    return query_tokens(text.encode("utf-8", "surrogatepass"), fold_table())


def string_chunks(values) -> list:
    """``values`` (an Arrow string array or chunked array) as ``string``/``large_string``
    arrays the kernel reads."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    out = []
    for c in chunks:
        if pa.types.is_dictionary(c.type):
            c = c.dictionary_decode()
        if not (pa.types.is_string(c.type) or pa.types.is_large_string(c.type)):
            c = c.cast(pa.large_string())
        out.append(c)
    return out


@dataclass
class Postings:
    tokens: np.ndarray     # uint32, ascending, unique
    offsets: np.ndarray    # int64, len(tokens) + 1
    ids: np.ndarray        # uint64

    @classmethod
    def empty(cls) -> "Postings":
        return cls(np.empty(0, np.uint32), np.zeros(1, np.int64), np.empty(0, np.uint64))

    @classmethod
    def of_strings(cls, values, row_ids: np.ndarray) -> "Postings":
        """Tokenise ``values`` (one row id per value, in ``row_ids``)."""
        row_ids = np.asarray(row_ids, dtype=np.uint64)
        chunks = string_chunks(values)
        if sum(len(c) for c in chunks) != row_ids.size:
            raise ValueError("one row id per value is needed")
        if row_ids.size > 1 and not (row_ids[1:] > row_ids[:-1]).all():
            order = np.argsort(row_ids, kind="stable")
            row_ids = row_ids[order]
            if row_ids.size > 1 and not (row_ids[1:] > row_ids[:-1]).all():
                raise ValueError("row ids repeat")
            chunks = [pa.chunked_array(chunks, type=chunks[0].type).take(pa.array(order)).combine_chunks()]
        return cls(*token_lists(chunks, row_ids, fold_table()))

    def __len__(self) -> int:
        return int(self.tokens.size)

    def list_of(self, k: int) -> np.ndarray:
        return self.ids[self.offsets[k]:self.offsets[k + 1]]

    def union(self, other: "Postings") -> "Postings":
        return Postings(*union_lists(self.tokens, self.offsets, self.ids,
                                     other.tokens, other.offsets, other.ids))

    def keep_ids(self, mask: np.ndarray) -> "Postings":
        """Only the ids where ``mask`` (one bool per id) holds; every token stays, even with
        an empty list (pylance keeps them too)."""
        return Postings(self.tokens, _offsets_after(self.offsets, mask), self.ids[mask])

    def mapped(self, new_ids: np.ndarray, keep: np.ndarray) -> "Postings":
        """Ids replaced by ``new_ids`` where ``keep``, dropped elsewhere; each list sorted
        again (moved rows need not keep their order)."""
        offsets = _offsets_after(self.offsets, keep)
        ids = np.asarray(new_ids, dtype=np.uint64)[keep]
        owner = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(offsets))
        order = np.lexsort((ids, owner))
        ids = ids[order]
        owner = owner[order]
        dup = np.zeros(ids.size, dtype=bool)
        if ids.size > 1:
            dup[1:] = (ids[1:] == ids[:-1]) & (owner[1:] == owner[:-1])
        if dup.any():
            offsets = _offsets_after(offsets, ~dup)
            ids = ids[~dup]
        return Postings(self.tokens, offsets, ids)

    # -- the file ---------------------------------------------------------------------------
    def to_table(self) -> pa.Table:
        """The rows of ``ngram_postings.lance``."""
        bin_off, data = encode_lists(self.offsets, self.ids)
        n = len(self)
        bounds = [0]
        while bounds[-1] < n:  # int32 offsets: at most 2 GiB of lists per array
            s = bounds[-1]
            e = int(np.searchsorted(bin_off, bin_off[s] + MAX_CHUNK_BYTES, side="right")) - 1
            bounds.append(min(max(e, s + 1), n))
        lists = []
        for s, e in zip(bounds[:-1], bounds[1:]):
            base, top = int(bin_off[s]), int(bin_off[e])
            offs = (bin_off[s:e + 1] - base).astype(np.int32)
            lists.append(pa.Array.from_buffers(pa.binary(), e - s, [None, pa.py_buffer(offs),
                                                                    pa.py_buffer(data[base:top])]))
        tokens = pa.array(self.tokens, type=pa.uint32())
        return pa.Table.from_arrays([tokens, pa.chunked_array(lists, type=pa.binary())], schema=SCHEMA)

    @classmethod
    def from_columns(cls, tokens: np.ndarray, lists) -> "Postings":
        """Decode a ``posting_list`` column (ValueError naming a bad list)."""
        offs_parts, id_parts = [np.zeros(1, np.int64)], []
        base = 0
        for chunk in _chunks(lists):
            off, data = _binary_buffers(chunk)
            list_off, ids = decode_lists(off, data)
            offs_parts.append(list_off[1:] + base)
            id_parts.append(ids)
            base += int(list_off[-1])
        ids = np.concatenate(id_parts) if id_parts else np.empty(0, np.uint64)
        return cls(np.asarray(tokens, dtype=np.uint32), np.concatenate(offs_parts), ids)


def unite(parts: list) -> Postings:
    """All ``parts`` united token by token (pairwise, in rounds: each id is copied
    log2(len(parts)) times, not len(parts))."""
    if not parts:
        return Postings.empty()
    while len(parts) > 1:
        parts = [parts[i].union(parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def _offsets_after(offsets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    kept = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
    return kept[offsets]


def _chunks(arr) -> list:
    return list(arr.chunks) if isinstance(arr, pa.ChunkedArray) else [arr]


def _binary_buffers(chunk: pa.Array) -> tuple[np.ndarray, memoryview]:
    """(int64 offsets of the chunk's rows, its data bytes) without copying the data."""
    if chunk.null_count:
        raise ValueError("posting_list has nulls")
    bufs = chunk.buffers()
    dtype = np.int64 if pa.types.is_large_binary(chunk.type) else np.int32
    off = np.frombuffer(bufs[1], dtype=dtype)[chunk.offset:chunk.offset + len(chunk) + 1]
    if off.size != len(chunk) + 1:
        raise ValueError("posting_list offsets are short")
    data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
    return off.astype(np.int64), memoryview(data)
