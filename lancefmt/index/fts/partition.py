"""An INVERTED index's partitions as stored: reading one (tokens, documents, posting lists,
decoded by the Cython kernels, every file's bytes checked), and whole partitions in memory
united or narrowed (for updates, remaps, segment merges and distributed builds).
"""
from __future__ import annotations

import json
import threading

import numpy as np
import pyarrow as pa

from ..._proto import index_details_pb2
from ...errors import CorruptFileError
from ..core.stats import count
from ..core.store import IndexStore
from . import format as fmt
from ._postings import decode_positions, decode_posting
from .build import Partition


#: what pylance 14 adds to the details of an index of list-element documents (field 14 = 1) and
#: of any index on a list or JSON column (field 15 = 2): fields newer than the details message
#: lancefmt knows, written raw, as pylance reads them
ELEMENT_DETAILS = b"\x70\x01"
LIST_COLUMN_DETAILS = b"\x78\x02"


def details_of(params: dict, element_docs: bool = False, list_column: bool = False):
    """The ``InvertedIndexDetails`` pylance 14 records for ``params``."""
    d = index_details_pb2.InvertedIndexDetails()
    d.base_tokenizer = params["base_tokenizer"]
    d.language = json.dumps(params["language"])
    d.with_position = params["with_position"]
    if params["max_token_length"] is not None:
        d.max_token_length = int(params["max_token_length"])
    d.lower_case = params["lower_case"]
    d.stem = params["stem"]
    d.remove_stop_words = params["remove_stop_words"]
    d.ascii_folding = params["ascii_folding"]
    d.min_ngram_length = int(params["min_ngram_length"])
    d.max_ngram_length = int(params["max_ngram_length"])
    d.prefix_only = params["prefix_only"]
    d.block_size = int(params["block_size"])
    if element_docs:
        d.MergeFromString(ELEMENT_DETAILS)
    if list_column or element_docs:
        d.MergeFromString(LIST_COLUMN_DETAILS)
    return d


class PartitionReader:
    """One partition's files: its token map, documents and posting lists (read lazily)."""

    def __init__(self, store: IndexStore, pid: int):
        self.store = store
        self.pid = pid
        self.path = store.uri(fmt.invert_file(pid))
        self._tokens = None
        self._docs = None
        self._lengths = None
        self._invert = None
        self._lock = threading.Lock()

    def _bad(self, name: str, what: str) -> CorruptFileError:
        return CorruptFileError(f"{name}: {what}", self.store.uri(name))

    # -- tokens ------------------------------------------------------------------------------
    @property
    def token_map(self):
        """ducer.Map token bytes -> token id."""
        if self._tokens is None:
            import ducer

            name = fmt.tokens_file(self.pid)
            t = self.store.read_table(name)
            if fmt.FST not in t.column_names or t.num_rows != 1:
                raise self._bad(name, f"expected one row with {fmt.FST}, got {t.schema}")
            raw = t.column(fmt.FST)[0].as_py()
            self._tokens = self._fst(lambda: _opened(ducer.Map(raw)))
        return self._tokens

    def _fst(self, call):
        """``call()`` on the token map. On some corrupt bytes the fst crate panics, which
        reaches Python as pyo3's PanicException, a BaseException: a CorruptFileError here."""
        try:
            return call()
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as e:  # noqa: BLE001 -- ducer's errors and the crate's panics
            if not isinstance(e, Exception) and type(e).__name__ != "PanicException":
                raise
            raise self._bad(fmt.tokens_file(self.pid),
                            f"bad token set ({type(e).__name__}: {e})") from None

    def token_id(self, token: str):
        return self._fst(lambda: self.token_map.get(token.encode("utf-8")))

    def token_keys(self) -> list:
        """Every token's bytes, in key order."""
        return self._fst(lambda: list(self.token_map.keys()))

    def all_tokens(self) -> list:
        """Every token, by id."""
        items = sorted((int(v), k.decode("utf-8"))
                       for k, v in self._fst(lambda: list(self.token_map.items())))
        ids = [i for i, _ in items]
        if ids != list(range(len(ids))):
            raise self._bad(fmt.tokens_file(self.pid), "token ids are not 0..n-1")
        return [t for _, t in items]

    # -- documents ---------------------------------------------------------------------------
    def docs(self) -> tuple:
        """(row ids uint64, token counts uint32, list element or None)."""
        if self._docs is None:
            name = fmt.docs_file(self.pid)
            t = self.store.read_table(name)
            for c in (fmt.ROW_ID, fmt.NUM_TOKENS):
                if c not in t.column_names or t.column(c).null_count:
                    raise self._bad(name, f"missing or null column {c}")
            rows = t.column(fmt.ROW_ID).to_numpy().astype(np.uint64)
            counts = t.column(fmt.NUM_TOKENS).to_numpy().astype(np.uint32)
            elem = t.column(fmt.DOC_INDEX).to_numpy().astype(np.uint32) \
                if fmt.DOC_INDEX in t.column_names else None
            self._docs = (rows, counts, elem)
        return self._docs

    @property
    def num_docs(self) -> int:
        return int(self.docs()[0].size)

    @property
    def total_tokens(self) -> int:
        return int(self.docs()[1].sum(dtype=np.uint64))

    # -- postings ----------------------------------------------------------------------------
    def lengths(self) -> np.ndarray:
        if self._lengths is None:
            name = fmt.invert_file(self.pid)
            meta = text_metadata(self.store, name)
            for key, allowed in fmt.READABLE.items():
                if key in meta and meta[key] not in allowed:
                    raise self._bad(name, f"{key}={meta[key]} is not a layout lancefmt reads")
            col = self.store.read_table(name, [fmt.LENGTH]).column(fmt.LENGTH)
            if col.null_count:
                raise self._bad(name, "null posting lengths")
            self._lengths = col.to_numpy().astype(np.int64)
        return self._lengths

    def raw_rows(self, ids, with_positions: bool) -> pa.Table:
        cols = [fmt.POSTING, fmt.LENGTH] + ([fmt.POSITIONS, fmt.POSITION_BLOCKS] if with_positions else [])
        name = fmt.invert_file(self.pid)
        if self._invert is not None and (not with_positions or fmt.POSITIONS in self._invert.column_names):
            return self._invert.take(pa.array(ids, pa.int64())).select(cols)
        reader = self.store.reader(name)
        missing = [c for c in cols if reader.schema.get_field_index(c) < 0]
        if missing:
            raise self._bad(name, f"has no column {missing[0]}"
                            + (" (the index was built without positions)" if fmt.POSITIONS in missing else ""))
        return reader.take(np.asarray(ids, dtype=np.int64), cols)

    def prewarm(self, with_positions: bool) -> None:
        name = fmt.invert_file(self.pid)
        cols = [fmt.POSTING, fmt.LENGTH]
        if with_positions and self.store.reader(name).schema.get_field_index(fmt.POSITIONS) >= 0:
            cols += [fmt.POSITIONS, fmt.POSITION_BLOCKS]
        self._invert = self.store.read_table(name, cols).combine_chunks()

    def read_posting(self, tid: int, with_positions: bool) -> tuple:
        """(docs, freqs, positions or None) of token ``tid``."""
        if not 0 <= tid < self.lengths().size:
            raise self._bad(fmt.tokens_file(self.pid), f"token id {tid} is beyond the "
                                                       f"{self.lengths().size} posting lists")
        if self._invert is None or (with_positions and fmt.POSITIONS not in self._invert.column_names):
            count("parts_loaded")
        table = self.raw_rows([tid], with_positions)
        return self.decode(table.combine_chunks(), 0, with_positions)

    def decode(self, table: pa.Table, i: int, with_positions: bool) -> tuple:
        """(docs, freqs, positions or None) of row ``i`` of ``raw_rows``' table."""
        name = fmt.invert_file(self.pid)
        post = table.column(fmt.POSTING).chunk(0) if table.column(fmt.POSTING).num_chunks == 1 \
            else table.column(fmt.POSTING).combine_chunks()
        length = table.column(fmt.LENGTH)[i].as_py()
        item = post[i]
        if not item.is_valid or length is None:
            raise self._bad(name, "null posting list")
        blocks = item.values
        offs, data = _binary(blocks)
        try:
            docs, freqs, _ = decode_posting(offs, data, int(length))
        except ValueError as e:
            raise self._bad(name, str(e)) from None
        positions = None
        if with_positions:
            stream = table.column(fmt.POSITIONS)[i]
            block_offs = table.column(fmt.POSITION_BLOCKS)[i]
            if not stream.is_valid or not block_offs.is_valid:
                raise self._bad(name, "null positions")
            raw = np.frombuffer(stream.as_buffer(), dtype=np.uint8) if stream.as_buffer() is not None \
                else np.empty(0, np.uint8)
            try:
                positions = decode_positions(raw, np.asarray(block_offs.values.to_numpy(zero_copy_only=False),
                                                             dtype=np.uint32), freqs)
            except ValueError as e:
                raise self._bad(name, str(e)) from None
        return docs, freqs, positions

    def content(self, with_positions: bool) -> Partition:
        """Everything, decoded (for remap, update and merge)."""
        tokens = self.all_tokens()
        rows, counts, elem = self.docs()
        n = len(tokens)
        table = self.store.read_table(fmt.invert_file(self.pid),
                                      [fmt.POSTING, fmt.LENGTH] + ([fmt.POSITIONS, fmt.POSITION_BLOCKS]
                                                                   if with_positions else [])).combine_chunks()
        if table.num_rows != n:
            raise self._bad(fmt.invert_file(self.pid), f"{table.num_rows} rows for {n} tokens")
        docs, freqs, pos = [], [], []
        for i in range(n):
            d, f, p = self.decode(table, i, with_positions)
            if d.size and int(d.max()) >= rows.size:
                raise self._bad(fmt.invert_file(self.pid), f"document {int(d.max())} out of range")
            docs.append(d)
            freqs.append(f)
            pos.append(p)
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([d.size for d in docs], out=off[1:])
        cat = lambda xs, t: np.concatenate(xs).astype(t) if xs else np.empty(0, t)  # noqa: E731
        return Partition(tokens, rows, counts, elem, off, cat(docs, np.uint32), cat(freqs, np.uint32),
                         cat(pos, np.uint32) if with_positions else None)


def _opened(m):
    m.get(b"")  # touches the header
    return m


def text_metadata(store: IndexStore, name: str) -> dict:
    """A file's schema metadata with text keys and values."""
    out = {}
    for k, v in (store.schema_metadata(name) or {}).items():
        k = k.decode("utf-8", "replace") if isinstance(k, bytes) else str(k)
        out[k] = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return out


def _binary(arr: pa.Array) -> tuple:
    bufs = arr.buffers()
    dtype = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offs = np.frombuffer(bufs[1], dtype=dtype)[arr.offset:arr.offset + len(arr) + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return offs, data


def drop_rows(part: Partition, keep: np.ndarray) -> Partition:
    """``part`` without the documents where ``keep`` is False (documents renumbered)."""
    keep = np.asarray(keep, dtype=bool)
    if keep.all():
        return part
    number = np.cumsum(keep, dtype=np.int64) - 1
    entry_keep = keep[part.docs]
    counts = np.diff(part.entry_off)
    owner = np.repeat(np.arange(counts.size), counts)
    new_counts = np.bincount(owner[entry_keep], minlength=counts.size)
    off = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(new_counts, out=off[1:])
    positions = None
    if part.positions is not None:
        positions = part.positions[np.repeat(entry_keep, part.freqs)]
    return Partition(part.tokens, part.row_ids[keep], part.num_tokens[keep],
                     part.doc_index[keep] if part.doc_index is not None else None, off,
                     number[part.docs[entry_keep]].astype(np.uint32), part.freqs[entry_keep],
                     positions)


def unite(parts: list) -> Partition:
    """Partitions as one: documents in order of the partitions, tokens by first appearance."""
    parts = [p for p in parts if p is not None]
    if len(parts) == 1:
        return parts[0]
    token_id: dict = {}
    maps = []
    for p in parts:
        maps.append(np.array([token_id.setdefault(t, len(token_id)) for t in p.tokens], dtype=np.int64))
    tokens = list(token_id)
    base = np.cumsum([0] + [p.num_docs for p in parts])
    tok_all, doc_all, freq_all, pos_all = [], [], [], []
    with_pos = all(p.positions is not None for p in parts)
    for p, m, b in zip(parts, maps, base):
        counts = np.diff(p.entry_off)
        tok_all.append(np.repeat(m, counts))
        doc_all.append(p.docs.astype(np.int64) + b)
        freq_all.append(p.freqs)
        if with_pos:
            pos_all.append(p.positions)
    tok = np.concatenate(tok_all) if tok_all else np.empty(0, np.int64)
    docs = np.concatenate(doc_all) if doc_all else np.empty(0, np.int64)
    freqs = np.concatenate(freq_all) if freq_all else np.empty(0, np.uint32)
    order = np.lexsort((docs, tok))
    counts = np.bincount(tok, minlength=len(tokens))
    off = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    positions = None
    if with_pos:
        pos = np.concatenate(pos_all) if pos_all else np.empty(0, np.uint32)
        f = freqs.astype(np.int64)
        starts = np.cumsum(f) - f
        fo = f[order]
        out_start = np.cumsum(fo) - fo
        take = np.repeat(starts[order] - out_start, fo) + np.arange(int(fo.sum()), dtype=np.int64)
        positions = pos[take].astype(np.uint32)
    elem = None
    if all(p.doc_index is not None for p in parts):
        elem = np.concatenate([p.doc_index for p in parts])
    return Partition(tokens, np.concatenate([p.row_ids for p in parts]),
                     np.concatenate([p.num_tokens for p in parts]), elem, off,
                     docs[order].astype(np.uint32), freqs[order].astype(np.uint32), positions)


LEGACY_TOKENS = "tokens.lance"
LEGACY_DOCS = "docs.lance"
LEGACY_INVERT = "invert.lance"


class LegacyPartition:
    """The one partition of a pre-format-1 index (Lance 0.27): ``tokens.lance`` (``_token``,
    ``_token_id``; the tokenizer's JSON in the schema metadata), ``docs.lance`` (``_rowid``,
    ``_num_tokens``: a document is its row) and ``invert.lance`` (``_rowid``, ``_frequency``,
    optionally ``_position``, token after token; the metadata's ``offsets`` are where each
    token's rows start). Answers what :class:`PartitionReader` answers, postings holding
    document numbers."""

    pid = 0

    def __init__(self, store: IndexStore):
        self.store = store
        self.path = store.uri(LEGACY_INVERT)
        meta = text_metadata(store, LEGACY_TOKENS)
        try:
            self.params = json.loads(meta.get("tokenizer", "{}"))
        except ValueError as e:
            raise CorruptFileError(f"bad tokenizer ({e})", store.uri(LEGACY_TOKENS)) from None
        inv_meta = text_metadata(store, LEGACY_INVERT)
        try:
            self.offsets = np.asarray(json.loads(inv_meta["offsets"]), dtype=np.int64)
        except (KeyError, ValueError) as e:
            raise CorruptFileError(f"bad offsets ({e})", self.path) from None
        self.has_positions = store.reader(LEGACY_INVERT).schema.get_field_index("_position") >= 0
        self._tokens = None
        self._docs = None
        self._table = None
        self._lock = threading.Lock()

    def _token_table(self) -> dict:
        if self._tokens is None:
            t = self.store.read_table(LEGACY_TOKENS)
            if "_token" not in t.column_names or "_token_id" not in t.column_names:
                raise CorruptFileError(f"{LEGACY_TOKENS} has the schema {t.schema}",
                                       self.store.uri(LEGACY_TOKENS))
            self._tokens = dict(zip(t.column("_token").to_pylist(), t.column("_token_id").to_pylist()))
            n = self.offsets.size
            if any(not (isinstance(v, int) and 0 <= v < n) for v in self._tokens.values()):
                raise CorruptFileError("token ids out of range", self.store.uri(LEGACY_TOKENS))
        return self._tokens

    @property
    def token_map(self):
        return {k.encode("utf-8"): v for k, v in self._token_table().items()}

    def token_id(self, token: str):
        return self._token_table().get(token)

    def token_keys(self) -> list:
        return sorted(self.token_map)

    def all_tokens(self) -> list:
        items = sorted((v, k) for k, v in self._token_table().items())
        return [k for _, k in items]

    def docs(self) -> tuple:
        """Documents in row-id order (the postings' row ids mapped to their numbers)."""
        if self._docs is None:
            t = self.store.read_table(LEGACY_DOCS)
            rows = t.column(fmt.ROW_ID).to_numpy().astype(np.uint64)
            counts = t.column(fmt.NUM_TOKENS).to_numpy().astype(np.uint32)
            order = np.argsort(rows, kind="stable")
            self._docs = (rows[order], counts[order], None)
        return self._docs

    @property
    def num_docs(self) -> int:
        return int(self.docs()[0].size)

    @property
    def total_tokens(self) -> int:
        return int(self.docs()[1].sum(dtype=np.uint64))

    def _invert_table(self) -> pa.Table:
        if self._table is None:
            count("parts_loaded")
            self._table = self.store.read_table(LEGACY_INVERT).combine_chunks()
        return self._table

    def lengths(self) -> np.ndarray:
        n = self._invert_table().num_rows
        bounds = np.append(self.offsets, n)
        if (np.diff(bounds) < 0).any() or bounds[0] != 0:
            raise CorruptFileError("offsets do not ascend", self.path)
        return np.diff(bounds).astype(np.int64)

    def read_posting(self, tid: int, with_positions: bool) -> tuple:
        t = self._invert_table()
        bounds = np.append(self.offsets, t.num_rows)
        a, b = int(bounds[tid]), int(bounds[tid + 1])
        rows = t.column(fmt.ROW_ID).to_numpy()[a:b].astype(np.uint64)
        freqs = t.column("_frequency").to_numpy()[a:b].astype(np.uint32)
        doc_rows = self.docs()[0]
        docs = np.searchsorted(doc_rows, rows)
        if docs.size and (docs.max() >= doc_rows.size or (doc_rows[docs] != rows).any()):
            raise CorruptFileError("a posting names a row the docs file lacks", self.path)
        order = np.argsort(docs, kind="stable")
        positions = None
        if with_positions:
            lists = t.column("_position").to_pylist()[a:b]
            positions = np.concatenate([np.asarray(lists[i], np.uint32) for i in order]) \
                if order.size else np.empty(0, np.uint32)
        return docs[order].astype(np.uint32), freqs[order], positions

    def prewarm(self, with_positions: bool) -> None:
        self._invert_table()

    def content(self, with_positions: bool) -> Partition:
        tokens = self.all_tokens()
        rows, counts, _ = self.docs()
        docs, freqs, pos = [], [], []
        for tid in range(len(tokens)):
            d, f, p = self.read_posting(tid, with_positions)
            docs.append(d)
            freqs.append(f)
            pos.append(p)
        off = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum([d.size for d in docs], out=off[1:])
        cat = lambda xs, t: np.concatenate(xs).astype(t) if xs else np.empty(0, t)  # noqa: E731
        return Partition(tokens, rows, counts, None, off, cat(docs, np.uint32), cat(freqs, np.uint32),
                         cat(pos, np.uint32) if with_positions else None)
