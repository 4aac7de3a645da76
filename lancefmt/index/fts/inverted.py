"""INVERTED (full-text search): the index type, and a segment loaded for searching.

What pylance 14 writes (index version 2, details ``InvertedIndexDetails`` with the tokenizer's
settings): ``metadata.lance`` and, per partition, ``tokens``, ``docs`` and ``invert`` files (see
:mod:`.format`). lancefmt writes one partition (pylance does too below its 2 GiB build memory)
and reads any number. A document is a row (or, with ``document_granularity="list_element"``,
an element of a list column); postings hold document numbers, which the docs file maps to row
ids (row addresses without stable row ids).

A loaded segment (:class:`InvertedIndex`) answers the searches of :mod:`.search`: a token's
documents with frequencies (and positions), decoded by the Cython kernels and cached, and the
BM25 statistics of its partitions. ``remap`` (compaction) rewrites the partitions with the new
row ids, leaving out deleted rows; ``update`` adds new rows as a partition rebuilt with them.
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa

from ..._proto import index_details_pb2
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedColumnTypeError
from ..core.registry import IndexType, LoadedIndex, TrainingData, register
from ..core.rowset import SearchResult
from ..core.store import IndexStore
from . import format as fmt
from .build import LIST_ELEMENT, ROW, build_partition, write_metadata, write_partition
from .partition import (LEGACY_TOKENS, LegacyPartition, PartitionReader, details_of, drop_rows,
                        text_metadata, unite)
from .json_tokenizer import is_json_field
from .tokenizer import DEFAULTS, Tokenizer, normalize_params

#: decoded posting lists kept per loaded segment (bytes)
CACHE_BYTES = 128 << 20


def text_type(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


class InvertedType(IndexType):
    name = "INVERTED"
    aliases = ("FTS",)
    type_name = "Inverted"
    details_type_url = "/lance.table.InvertedIndexDetails"
    details_class = index_details_pb2.InvertedIndexDetails
    index_version = 2
    queries = ()
    exact = False

    def serves(self, query) -> bool:
        return False  # full-text queries go through the scorer, not filters

    def check_field(self, field: pa.Field) -> None:
        t = field.type
        value = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else t
        if is_json_field(field):
            return
        if not text_type(value):
            raise UnsupportedColumnTypeError(
                f"INVERTED index column {field.name} must be string, large string or list of "
                f"strings, or json, but got {value}")

    def index_version_for(self, stable_row_ids: bool, params: dict | None = None) -> int:
        """pylance writes list-element indices at version 3."""
        return 3 if _granularity((params or {}).get("document_granularity")) == LIST_ELEMENT else 2

    def default_name(self, column: str, params: dict) -> str:
        if _granularity(params.get("document_granularity")) == LIST_ELEMENT:
            return f"{column}_list_element_idx"
        return f"{column}_idx"

    def records_addresses(self, index_version: int, stable_row_ids: bool) -> bool:
        return not stable_row_ids

    def train(self, data: TrainingData, store: IndexStore, params: dict):
        granularity = str(_granularity(params.get("document_granularity")))
        if granularity == LIST_ELEMENT and not (pa.types.is_list(data.field.type)
                                                or pa.types.is_large_list(data.field.type)):
            raise InvalidArgumentError("document_granularity=list_element needs a list column")
        fv = params.get("format_version")
        if fv is not None and str(fv).lower().lstrip("v") != "2":
            raise InvalidArgumentError(f"lancefmt writes FTS format version 2, not {fv}")
        if is_json_field(data.field):
            params = {**params, "lance_tokenizer": "json"}
        params = normalize_params(params)
        part = build_partition(data, Tokenizer(params), granularity)
        write_partition(store, part, 0, params["with_position"])
        write_metadata(store, params, [0])
        return details_of(params, granularity == LIST_ELEMENT,
                          pa.types.is_list(data.field.type) or pa.types.is_large_list(data.field.type)
                          or is_json_field(data.field))

    def stage(self, data: TrainingData, store: IndexStore, params: dict) -> None:
        from .distributed import stage_partition

        stage_partition(data, store, params, _granularity(params.get("document_granularity")))

    def merge_staged(self, store: IndexStore, field: pa.Field | None = None):
        from .distributed import merge_staged

        return merge_staged(store, field)

    def recognizes(self, store: IndexStore) -> bool:
        from .distributed import recognizes

        return recognizes(store)

    def load(self, store: IndexStore, details) -> "InvertedIndex":
        return InvertedIndex(store, details)

    def merge(self, segments: list, dest: IndexStore):
        """Segments over disjoint fragments as one: their partitions' contents united."""
        if not segments:
            raise InvalidArgumentError("nothing to merge")
        params = segments[0].index_params
        part = unite([p for s in segments for p in s.partition_contents()])
        write_partition(dest, part, 0, params["with_position"])
        write_metadata(dest, params, [0])
        return segments[0].details_again()


def _granularity(value) -> str:
    value = getattr(value, "value", value)
    if value is None:
        return ROW
    if str(value) not in (ROW, LIST_ELEMENT):
        raise InvalidArgumentError(f"unknown document_granularity {value!r}")
    return str(value)


class InvertedIndex(LoadedIndex):
    """One segment (see module docstring)."""

    def __init__(self, store: IndexStore, details=None):
        self.store = store
        self.details = details
        if not store.exists(fmt.METADATA_FILE) and store.exists(LEGACY_TOKENS):
            self._init_legacy(store)
            return
        meta = text_metadata(store, fmt.METADATA_FILE)
        path = store.uri(fmt.METADATA_FILE)
        try:
            stored = json.loads(meta["params"])
            pids = json.loads(meta.get("partitions", "[0]"))
        except (KeyError, ValueError) as e:
            raise CorruptFileError(f"{fmt.METADATA_FILE}: bad params or partitions ({e})", path) from None
        if not isinstance(pids, list) or not all(isinstance(p, int) and p >= 0 for p in pids):
            raise CorruptFileError(f"{fmt.METADATA_FILE}: bad partitions {pids!r}", path)
        for key, allowed in fmt.READABLE.items():
            if key in meta and meta[key] not in allowed:
                raise CorruptFileError(f"{fmt.METADATA_FILE}: {key}={meta[key]} is not a layout "
                                       f"lancefmt reads", path)
        self.stored_params = {**DEFAULTS, **stored}
        try:
            self.index_params = normalize_params({k: v for k, v in self.stored_params.items()
                                                  if k in DEFAULTS})
        except InvalidArgumentError as e:
            raise CorruptFileError(f"{fmt.METADATA_FILE}: {e}", path) from None
        self.with_position = bool(self.index_params["with_position"])
        self.tokenizer = Tokenizer(self.index_params)
        self.partitions = [PartitionReader(store, int(p)) for p in pids]
        self._cache: OrderedDict = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()
        self._vocab = None
        self._codes = None
        self._stats = None

    def _init_legacy(self, store: IndexStore) -> None:
        """An index written before format version 1 (Lance 0.27: ``tokens.lance``,
        ``docs.lance`` and ``invert.lance``, one partition, row ids in the postings)."""
        part = LegacyPartition(store)
        self.stored_params = {**DEFAULTS, **part.params, "with_position": part.has_positions}
        try:
            self.index_params = normalize_params({k: v for k, v in self.stored_params.items()
                                                  if k in DEFAULTS})
        except InvalidArgumentError as e:
            raise CorruptFileError(f"{LEGACY_TOKENS}: {e}", store.uri(LEGACY_TOKENS)) from None
        self.with_position = part.has_positions
        self.tokenizer = Tokenizer(self.index_params)
        self.partitions = [part]
        self._cache = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()
        self._vocab = None
        self._codes = None
        self._stats = None

    def details_again(self):
        """The details of a rewrite of this segment (remap, update, merge): the ones it was
        loaded with, raw fields included, or its parameters' when it had none."""
        if self.details is not None and self.details.ByteSize():
            out = index_details_pb2.InvertedIndexDetails()
            out.CopyFrom(self.details)
            return out
        return details_of(self.index_params, self.element_docs)

    # -- statistics --------------------------------------------------------------------------
    @property
    def num_docs(self) -> int:
        if self._stats is None:
            self._stats = (sum(p.num_docs for p in self.partitions),
                           sum(p.total_tokens for p in self.partitions))
        return self._stats[0]

    @property
    def total_tokens(self) -> int:
        self.num_docs
        return self._stats[1]

    @property
    def element_docs(self) -> bool:
        return any(p.docs()[2] is not None for p in self.partitions)

    def token_docs(self, token: str) -> int:
        """How many documents hold ``token`` (every partition)."""
        n = 0
        for p in self.partitions:
            tid = p.token_id(token)
            if tid is not None:
                lengths = p.lengths()
                if not 0 <= tid < lengths.size:
                    raise CorruptFileError(f"token id {tid} is out of range", p.path)
                n += int(lengths[tid])
        return n

    def vocabulary(self) -> list:
        """Every token, in key order (cached)."""
        if self._vocab is None:
            out = set()
            for p in self.partitions:
                out.update(k.decode("utf-8") for k in p.token_keys())
            self._vocab = sorted(out)
        return self._vocab

    def vocabulary_codes(self) -> tuple:
        """The vocabulary as code points with offsets (fuzzy matching; cached)."""
        if self._codes is None:
            from ._fuzzy import code_points

            self._codes = code_points(self.vocabulary())
        return self._codes

    # -- postings ----------------------------------------------------------------------------
    def postings(self, token: str, with_positions: bool = False) -> list:
        """Per partition holding ``token``: (partition, docs, freqs, positions or None)."""
        out = []
        for p in self.partitions:
            tid = p.token_id(token)
            if tid is None:
                continue
            key = (p.pid, int(tid), with_positions)
            hit = self._recall(key)
            if hit is None:
                if with_positions and not self.with_position:
                    raise InvalidArgumentError(
                        "position is not found but required for phrase queries, try recreating "
                        "the index with position")
                hit = p.read_posting(int(tid), with_positions)
                self._remember(key, hit, sum(a.nbytes for a in hit if a is not None))
            out.append((p,) + tuple(hit))
        return out

    def _remember(self, key, value, size: int) -> None:
        """Cache ``value`` (``size`` bytes), dropping the least recently used entries beyond
        :data:`CACHE_BYTES`."""
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = (value, size)
            self._cached += size
            while self._cached > CACHE_BYTES and len(self._cache) > 1:
                _, (_, old) = self._cache.popitem(last=False)
                self._cached -= old

    def _recall(self, key):
        with self._lock:
            hit = self._cache.get(key)
            if hit is None:
                return None
            self._cache.move_to_end(key)
            return hit[0]

    def weighted(self, token: str, stats=None) -> list:
        """Per partition holding ``token``: (partition, docs, BM25 weights) -- ``idf * (k1+1)
        * f / (f + norm)`` float32, with this segment's statistics or ``stats`` ``(documents,
        tokens, documents holding the token)`` of all the index's segments (cached by them)."""
        if stats is None:
            stats = (self.num_docs, self.total_tokens, self.token_docs(token))
        key = ("w", token, tuple(int(x) for x in stats))
        hit = self._recall(key)
        if hit is not None:
            return hit
        from ._postings import bm25_idf, bm25_weights

        n, total, holding = (int(x) for x in stats)
        avgdl = float(np.float32(total) / np.float32(n)) if n else 0.0
        idf = float(bm25_idf([holding], n)[0]) if n and holding else 0.0
        out = []
        for part, docs, freqs, _ in self.postings(token):
            rows, lens, _ = part.docs()
            if docs.size and int(docs[-1]) >= rows.size:
                raise CorruptFileError(f"posting list of {token!r} names document "
                                       f"{int(docs[-1])} of {rows.size}", part.path)
            out.append((part, docs, bm25_weights(freqs, lens[docs], avgdl, idf)))
        self._remember(key, out, sum(d.nbytes + w.nbytes for _, d, w in out))
        return out

    def positions(self, token: str) -> list:
        """Per partition holding ``token``: (partition, docs, starts, positions) -- document
        ``docs[r]`` has positions ``positions[starts[r]:starts[r+1]]`` (cached)."""
        key = ("p", token)
        hit = self._recall(key)
        if hit is not None:
            return hit
        out = []
        for part, docs, freqs, pos in self.postings(token, with_positions=True):
            starts = np.zeros(freqs.size + 1, dtype=np.int64)
            np.cumsum(freqs, out=starts[1:])
            out.append((part, docs, starts, pos))
        self._remember(key, out, sum(x.nbytes for _, _, x, _ in out))
        return out

    def search(self, query) -> SearchResult:
        raise InvalidArgumentError("INVERTED indices answer full-text queries, not filters")

    # -- the rest ----------------------------------------------------------------------------
    def params(self) -> dict:
        out = {k: v for k, v in self.stored_params.items() if k in DEFAULTS}
        if self.element_docs:
            out["document_granularity"] = LIST_ELEMENT
        return out

    def statistics(self) -> dict:
        return {"params": dict(self.stored_params), "num_tokens": len(self.vocabulary()),
                "num_docs": self.num_docs}

    def prewarm(self) -> None:
        for p in self.partitions:
            p.docs()
            p.lengths()
            p.token_map
            p.prewarm(self.with_position)

    def partition_contents(self) -> list:
        return [p.content(self.with_position) for p in self.partitions]

    def update(self, new_data: TrainingData, dest: IndexStore, keep=None):
        parts = self.partition_contents()
        if keep is not None:
            parts = [drop_rows(p, np.asarray(keep(p.row_ids), dtype=bool)) for p in parts]
        granularity = LIST_ELEMENT if self.element_docs else ROW
        parts.append(build_partition(new_data, self.tokenizer, granularity))
        part = unite(parts)
        write_partition(dest, part, 0, self.with_position)
        write_metadata(dest, self.index_params, [0])
        return self.details_again()

    def remap(self, mapping, dest: IndexStore):
        parts = []
        for p in self.partition_contents():
            new_ids, keep = mapping.apply(p.row_ids)
            p.row_ids = np.asarray(new_ids, dtype=np.uint64)
            parts.append(drop_rows(p, keep))
        part = unite(parts)
        write_partition(dest, part, 0, self.with_position)
        write_metadata(dest, self.index_params, [0])
        return self.details_again()


INVERTED = register(InvertedType())
