"""Building an INVERTED index partition from a column's values, and writing one.

A :class:`Partition` is the whole content of one partition in memory, as flat arrays: the
tokens (token id = position in the list), the documents (row id, token count, list element)
and the postings (per token, its documents ascending with frequencies and, with positions,
each document's positions). :func:`build_partition` makes one from training data the way
pylance 14 does -- documents numbered in row order, rows without tokens left out (list-element
documents are all kept), tokens numbered by first appearance -- and :func:`write_partition`
writes its files; updates and remaps build a new :class:`Partition` from old ones and write it
the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.registry import ROW_ID, VALUE, TrainingData
from ..core.store import IndexStore
from . import format as fmt
from ._postings import encode, group
from .tokenizer import Tokenizer, params_json

ROW = "row"
LIST_ELEMENT = "list_element"


@dataclass
class Partition:
    tokens: list                 # str, by token id
    row_ids: np.ndarray          # uint64 per document
    num_tokens: np.ndarray       # uint32 per document
    doc_index: np.ndarray | None  # uint32 per document (list-element documents)
    entry_off: np.ndarray        # int64, len(tokens) + 1
    docs: np.ndarray             # uint32 document numbers
    freqs: np.ndarray            # uint32
    positions: np.ndarray | None  # uint32, freqs[i] per entry, in entry order

    @property
    def num_docs(self) -> int:
        return int(self.row_ids.size)

    @property
    def total_tokens(self) -> int:
        return int(self.num_tokens.sum(dtype=np.uint64))


def string_values(arr: pa.Array) -> pa.Array:
    """``arr`` as a ``string``/``large_string`` array the splitter reads."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.large_string())
    return arr


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def build_partition(data: TrainingData, tokenizer: Tokenizer, granularity: str = ROW) -> Partition:
    """The partition of every value of ``data`` (see module docstring)."""
    sp = tokenizer.splitter()
    element_docs = granularity == LIST_ELEMENT
    occ_doc, occ_raw, occ_pos, doc_rows, doc_elem = [], [], [], [], []
    n_docs = 0
    for batch in data.batches():
        values = batch.column(VALUE)
        rids = batch.column(ROW_ID).to_numpy()
        if is_list(values.type):
            flat = string_values(pc.list_flatten(values))
            parent = np.asarray(pc.list_parent_indices(values), dtype=np.int64)
            d, r, p = sp.split(flat)
            if element_docs:
                starts = np.asarray(values.offsets, dtype=np.int64)[:-1] - int(values.offsets[0].as_py())
                elem = np.arange(parent.size, dtype=np.int64) - starts[parent]
                doc_rows.append(rids[parent])
                doc_elem.append(elem.astype(np.uint32))
                occ_doc.append(d.astype(np.int64) + n_docs)
                n_docs += parent.size
            else:
                # positions run on across a row's elements
                counts = np.bincount(d, minlength=parent.size).astype(np.int64)
                before = np.cumsum(counts) - counts
                row_start = np.full(len(values), 0, dtype=np.int64)
                if parent.size:
                    first_elem = np.full(len(values), -1, dtype=np.int64)
                    first_elem[parent[::-1]] = np.arange(parent.size - 1, -1, -1)
                    has = first_elem >= 0
                    row_start[has] = before[first_elem[has]]
                base = before - row_start[parent] if parent.size else before
                p = (p.astype(np.int64) + base[d]).astype(np.uint32)
                doc_rows.append(rids)
                occ_doc.append(parent[d] + n_docs)
                n_docs += len(values)
        else:
            d, r, p = sp.split(values if tokenizer.json else string_values(values))
            doc_rows.append(rids)
            occ_doc.append(d.astype(np.int64) + n_docs)
            n_docs += len(values)
        occ_raw.append(r)
        occ_pos.append(p)
    raws = sp.raw_tokens()
    final = tokenizer.normalize_all(raws)
    token_id: dict = {}
    raw_to_final = np.full(len(raws) + 1, -1, dtype=np.int32)
    for i, t in enumerate(final):
        if t is not None:
            raw_to_final[i] = token_id.setdefault(t, len(token_id))
    tokens = list(token_id)
    o_doc = np.concatenate(occ_doc) if occ_doc else np.empty(0, np.int64)
    o_tok = raw_to_final[np.concatenate(occ_raw)] if occ_raw else np.empty(0, np.int32)
    o_pos = np.concatenate(occ_pos) if occ_pos else np.empty(0, np.uint32)
    keep = o_tok >= 0
    o_doc, o_tok, o_pos = o_doc[keep], o_tok[keep], o_pos[keep]
    per_doc = np.bincount(o_doc, minlength=n_docs).astype(np.uint32)
    rows = np.concatenate(doc_rows).astype(np.uint64) if doc_rows else np.empty(0, np.uint64)
    if element_docs:
        kept_docs = np.ones(n_docs, dtype=bool)
        doc_index = np.concatenate(doc_elem) if doc_elem else np.empty(0, np.uint32)
    else:
        kept_docs = per_doc > 0
        doc_index = None
    number = np.cumsum(kept_docs, dtype=np.int64) - 1
    doc_of = number[o_doc].astype(np.uint32)
    entry_off, docs, freqs, order = group(o_tok, doc_of, len(tokens))
    return Partition(tokens, rows[kept_docs], per_doc[kept_docs],
                     doc_index[kept_docs] if doc_index is not None else None,
                     entry_off, docs, freqs,
                     o_pos[order] if tokenizer.params["with_position"] else None)


def write_partition(store: IndexStore, part: Partition, pid: int, with_position: bool) -> None:
    """``part_{pid}_*.lance`` of ``part``."""
    n = part.num_docs
    avgdl = np.float32(part.total_tokens) / np.float32(n) if n else np.float32(0)
    pos = part.positions if with_position else None
    if with_position and pos is None:
        raise ValueError("positions are needed")
    enc = encode(part.entry_off, part.docs, part.freqs, part.num_tokens.astype(np.uint32), n,
                 float(avgdl), pos, np.arange(pos.size, dtype=np.int64) if pos is not None else None)
    store.write_table(fmt.tokens_file(pid), fmt.tokens_table(part.tokens))
    store.write_table(fmt.docs_file(pid), fmt.docs_table(part.row_ids, part.num_tokens, part.doc_index),
                      {"total_tokens": str(part.total_tokens)})
    lengths = np.diff(part.entry_off).astype(np.uint32)
    store.write_table(fmt.invert_file(pid), fmt.invert_table(enc, lengths, with_position),
                      fmt.invert_metadata(with_position))


def write_metadata(store: IndexStore, params: dict, partitions: list) -> None:
    table, meta = fmt.metadata_table(params_json(params), partitions, params["with_position"])
    store.write_table(fmt.METADATA_FILE, table, meta)
