"""NGRAM: an inverted index of trigrams, answering ``contains(column, 'text')`` (at most).

What pylance 14 writes (one file, ``ngram_postings.lance``, see :mod:`.ngram_postings`): for
every trigram token of the column's values, the row ids of the values holding it; null values
are listed under token 0. Details ``NGramIndexDetails`` (empty), index version 0.

Values and patterns are tokenised alike (:mod:`.ngram_fold`: lower-cased, folded to ASCII,
windows of three letters or digits), so every trigram of a pattern occurs in every value that
contains the pattern. A search therefore intersects the lists of the pattern's trigrams and
returns them as *at most* (the filter is re-checked); a trigram absent from the index means no
value contains the pattern (an exact empty answer). Patterns shorter than three characters are
not given to the index at all (as in pylance, the filter scans). A longer pattern without a
single trigram (``'a b'``, ``'!!!'``) cannot narrow anything: the answer is *every row*, to be
re-checked (an empty complement, not exact) -- pylance answers such a pattern with its
"at least nothing" result, the same thing.

``LIKE`` patterns (and plain-literal ``regexp_like``, which is one) are answered the same way
from the trigrams of their literal runs, as pylance 14 does through its regex look-up; like
pylance, the index takes only patterns with a run of three letters or digits that yields a
trigram, and leaves the others to the scan.

``update`` merges the new rows' lists into the old ones, as pylance's ``optimize_indices``
does, into one new segment; ``merge`` unites segments built over disjoint fragments (pylance's
``merge_existing_index_segments``: the file of one build over them all); ``remap``
(compaction) moves row ids and keeps every token, even one left without rows (pylance keeps
them too, and counts them in ``num_ngrams``).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa

from ..._proto import index_details_pb2
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedColumnTypeError
from ...sql.sargable import LIKE_SPECIAL, Contains, Like
from ..core.registry import ROW_ID, VALUE, IndexType, LoadedIndex, TrainingData, register
from ..core.rowset import EMPTY, SearchResult
from ..core.store import IndexStore
from ._ngram import decode_list, intersect_sorted
from .ngram_postings import (MIN_QUERY_CHARS, POSTING_LIST, POSTINGS_FILE, TOKENS, Postings,
                             text_tokens, unite)

#: decoded posting lists kept per loaded index (bytes of row ids)
LIST_CACHE_BYTES = 64 << 20
#: text tokenised at once while training (the lists of each group are united at the end)
GROUP_BYTES = 256 << 20


def is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


class NGramType(IndexType):
    name = "NGRAM"
    type_name = "NGram"
    details_type_url = "/lance.table.NGramIndexDetails"
    details_class = index_details_pb2.NGramIndexDetails
    index_version = 0
    queries = (Contains, Like)
    exact = False

    def serves(self, query) -> bool:
        if isinstance(query, Contains):
            return len(query.text) >= MIN_QUERY_CHARS
        if isinstance(query, Like):
            runs = like_segments(query.pattern)
            return longest_alnum_run(runs) >= MIN_QUERY_CHARS and pattern_tokens(query).size > 0
        return False

    def check_field(self, field: pa.Field) -> None:
        if not is_text(field.type):
            raise UnsupportedColumnTypeError(f"NGRAM index column {field.name} must be a string")

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        write_postings(store, postings_of(data))
        return self.details_class()

    def load(self, store: IndexStore, details) -> "NGramIndex":
        return NGramIndex(store)

    def merge(self, segments: list, dest: IndexStore):
        """Every segment's lists united token by token (pairwise, in rounds), which is the
        file one build over their fragments writes, as pylance's segment merge does."""
        if not segments:
            raise InvalidArgumentError("nothing to merge")
        write_postings(dest, unite([s.postings() for s in segments]))
        return self.details_class()


def like_segments(pattern: str) -> list:
    """Literal runs every value matching the LIKE ``pattern`` contains: cut at ``%``, ``_``
    and at a backslash with the character after it (whether the backslash escapes it or is
    itself literal, the runs between stay substrings of the value)."""
    out, cur, skip = [], [], False
    for c in pattern:
        if skip or c in LIKE_SPECIAL:
            skip = c == "\\" and not skip
            if cur:
                out.append("".join(cur))
                cur = []
            continue
        cur.append(c)
    if cur:
        out.append("".join(cur))
    return out


def longest_alnum_run(runs) -> int:
    best = 0
    for r in runs:
        n = 0
        for c in r:
            n = n + 1 if c.isalnum() else 0
            best = max(best, n)
    return best


def pattern_tokens(query) -> np.ndarray:
    """Tokens every value matching ``query`` holds (sorted unique uint32)."""
    if isinstance(query, Contains):
        return text_tokens(query.text)
    parts = [text_tokens(r) for r in like_segments(query.pattern)]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, np.uint32)


def postings_of(data: TrainingData) -> Postings:
    """The lists of ``data``, tokenised a group of batches at a time (about
    :data:`GROUP_BYTES` of text), so the column is never all in memory at once."""
    parts, values, ids, size = [], [], [], 0

    def flush():
        if values:
            parts.append(Postings.of_strings(pa.chunked_array(values), np.concatenate(ids)))
            values.clear()
            ids.clear()

    for batch in data.batches():
        values.append(batch.column(VALUE))
        ids.append(batch.column(ROW_ID).to_numpy())
        size += batch.column(VALUE).nbytes
        if size >= GROUP_BYTES:
            flush()
            size = 0
    flush()
    return unite(parts)


def write_postings(store: IndexStore, postings: Postings) -> None:
    store.write_table(POSTINGS_FILE, postings.to_table())


class NGramIndex(LoadedIndex):
    value_type = pa.string()  # only strings are tokenised

    def __init__(self, store: IndexStore):
        self.store = store
        self.path = store.uri(POSTINGS_FILE)
        reader = store.reader(POSTINGS_FILE)
        schema = reader.schema
        if (schema.get_field_index(TOKENS) < 0 or schema.get_field_index(POSTING_LIST) < 0
                or schema.field(TOKENS).type != pa.uint32()
                or not (pa.types.is_binary(schema.field(POSTING_LIST).type)
                        or pa.types.is_large_binary(schema.field(POSTING_LIST).type))):
            raise CorruptFileError(f"{POSTINGS_FILE} has the schema {schema}", self.path)
        tokens = reader.read_all([TOKENS]).column(TOKENS)
        if tokens.null_count:
            raise CorruptFileError(f"{POSTINGS_FILE} has null tokens", self.path)
        tokens = tokens.to_numpy()
        self.num_rows = int(tokens.size)
        if tokens.size > 1 and not (tokens[1:] > tokens[:-1]).all():
            # Lance maps token -> row with a hash map: a repeated token means its last row
            rev = tokens[::-1]
            uniq, first_in_rev = np.unique(rev, return_index=True)
            self.tokens, self.rows = uniq, (tokens.size - 1 - first_in_rev).astype(np.int64)
        else:
            self.tokens, self.rows = tokens, np.arange(tokens.size, dtype=np.int64)
        self._raw = None           # every posting list's bytes, once prewarmed
        self._cache: OrderedDict = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()

    # -- posting lists ---------------------------------------------------------------------------
    def _decode(self, row: int, data) -> np.ndarray:
        try:
            return decode_list(data)
        except ValueError as e:
            raise CorruptFileError(f"posting list of row {row} {e}", self.path) from None

    def lists(self, rows: np.ndarray) -> list:
        """Decoded lists of file rows ``rows`` (cached)."""
        out: dict = {}
        with self._lock:
            for r in rows.tolist():
                hit = self._cache.get(r)
                if hit is not None:
                    self._cache.move_to_end(r)
                    out[r] = hit
        missing = sorted(set(rows.tolist()) - out.keys())
        if missing:
            if self._raw is not None:
                raw = self._raw.take(pa.array(missing))
            else:
                raw = self.store.reader(POSTINGS_FILE).take(np.asarray(missing), [POSTING_LIST]) \
                    .column(POSTING_LIST)
            values = raw.combine_chunks() if isinstance(raw, pa.ChunkedArray) else raw
            for i, r in enumerate(missing):
                item = values[i]
                if not item.is_valid:
                    raise CorruptFileError(f"posting list of row {r} is null", self.path)
                out[r] = self._decode(r, memoryview(item.as_buffer()))
            with self._lock:
                for r in missing:
                    if r not in self._cache:
                        self._cache[r] = out[r]
                        self._cached_bytes += out[r].nbytes
                while self._cached_bytes > LIST_CACHE_BYTES and self._cache:
                    _, dropped = self._cache.popitem(last=False)
                    self._cached_bytes -= dropped.nbytes
        return [out[r] for r in rows.tolist()]

    def postings(self) -> Postings:
        """Every list (for update and remap)."""
        t = self.store.read_table(POSTINGS_FILE, [TOKENS, POSTING_LIST])
        try:
            p = Postings.from_columns(t.column(TOKENS).to_numpy(), t.column(POSTING_LIST))
        except ValueError as e:
            raise CorruptFileError(f"{POSTINGS_FILE}: {e}", self.path) from None
        if not np.array_equal(self.rows, np.arange(self.num_rows)):
            sizes = np.diff(p.offsets)[self.rows]
            offsets = np.concatenate(([0], np.cumsum(sizes)))
            take = np.repeat(p.offsets[:-1][self.rows] - offsets[:-1], sizes) + np.arange(offsets[-1])
            p = Postings(self.tokens, offsets, p.ids[take])
        return p

    # -- search ------------------------------------------------------------------------------------
    def search(self, query) -> SearchResult:
        if not isinstance(query, (Contains, Like)):
            raise InvalidArgumentError(f"NGRAM cannot answer {type(query).__name__}")
        wanted = pattern_tokens(query)
        if not wanted.size:
            return SearchResult(EMPTY, exact=False, negated=True)  # every row, re-checked
        pos = np.searchsorted(self.tokens, wanted)
        found = pos < self.tokens.size
        found[found] = self.tokens[pos[found]] == wanted[found]
        if not found.all():
            return SearchResult(EMPTY)  # a trigram no indexed value has
        lists = sorted(self.lists(self.rows[pos]), key=len)
        rows = lists[0]
        for other in lists[1:]:
            if not rows.size:
                break
            rows = intersect_sorted(rows, other)
        return SearchResult(rows, exact=False)

    # -- the rest ----------------------------------------------------------------------------------
    def statistics(self) -> dict:
        return {"num_ngrams": int(self.tokens.size)}

    def prewarm(self) -> None:
        col = self.store.read_table(POSTINGS_FILE, [POSTING_LIST]).column(POSTING_LIST)
        self._raw = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        old = self.postings()
        if keep is not None:
            old = old.keep_ids(np.asarray(keep(old.ids), dtype=bool))
        write_postings(dest, old.union(postings_of(new_data)))
        return index_details_pb2.NGramIndexDetails()

    def remap(self, mapping, dest: IndexStore):
        old = self.postings()
        new_ids, keep = mapping.apply(old.ids)
        write_postings(dest, old.mapped(new_ids, keep))
        return index_details_pb2.NGramIndexDetails()


NGRAM = register(NGramType())
