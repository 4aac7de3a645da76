"""The files of an INVERTED index segment (format version 2, as pylance 14 writes them).

- ``metadata.lance``: one row, ``deleted_fragments`` (binary: a serialized roaring bitmap,
  empty); schema metadata ``params`` (the tokenizer's JSON), ``partitions`` (JSON list of
  partition ids), ``format_version`` "2", ``posting_block_size`` "128", ``posting_tail_codec``
  "varint_delta_v1", ``token_set_format`` "fst" and, with positions, ``positions_layout``
  "shared_stream_v2" and ``positions_codec`` "packed_delta_v1".
- ``part_{p}_tokens.lance``: one row: ``_token_fst_bytes`` (an FST map token -> token id, the
  ``fst`` crate's bytes, built and read with ``ducer``), ``_token_next_id``,
  ``_token_total_length`` (the tokens' bytes).
- ``part_{p}_docs.lance``: per document (its number is its row), ``_rowid`` and
  ``_num_tokens``; ``_doc_index_0`` (the list element) for list-element documents; schema
  metadata ``total_tokens``.
- ``part_{p}_invert.lance``: per token id, ``_posting`` (the blocks), ``_max_score``,
  ``_length`` (documents), ``_impacts`` and, with positions, ``_compressed_position`` and
  ``_position_block_offset`` (see ``_postings`` for the bytes).

Every field is declared not null, as pylance declares them.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

METADATA_FILE = "metadata.lance"
DELETED_FRAGMENTS = "deleted_fragments"
ROW_ID = "_rowid"
NUM_TOKENS = "_num_tokens"
DOC_INDEX = "_doc_index_0"
POSTING = "_posting"
MAX_SCORE = "_max_score"
LENGTH = "_length"
IMPACTS = "_impacts"
POSITIONS = "_compressed_position"
POSITION_BLOCKS = "_position_block_offset"
FST = "_token_fst_bytes"
NEXT_ID = "_token_next_id"
TOTAL_LENGTH = "_token_total_length"

BLOCK_SIZE = 128
FORMAT_VERSION = "2"
INVERT_META = {"format_version": FORMAT_VERSION, "posting_block_size": str(BLOCK_SIZE),
               "posting_tail_codec": "varint_delta_v1"}
POSITION_META = {"positions_layout": "shared_stream_v2", "positions_codec": "packed_delta_v1"}
#: what lancefmt can read (other layouts/codecs are refused by name)
READABLE = {"format_version": {"2"}, "posting_tail_codec": {"varint_delta_v1"},
            "positions_layout": {"shared_stream_v2"}, "positions_codec": {"packed_delta_v1"},
            "token_set_format": {"fst"}, "posting_block_size": {"128"}}


def tokens_file(p: int) -> str:
    return f"part_{p}_tokens.lance"


def docs_file(p: int) -> str:
    return f"part_{p}_docs.lance"


def invert_file(p: int) -> str:
    return f"part_{p}_invert.lance"


def _field(name, type_):
    return pa.field(name, type_, nullable=False)


def metadata_table(params_json: str, partitions: list, with_position: bool) -> tuple:
    """(table, schema metadata) of ``metadata.lance``."""
    from pyroaring import BitMap

    meta = {"params": params_json, "partitions": json.dumps(partitions, separators=(",", ":")),
            **INVERT_META, "token_set_format": "fst"}
    if with_position:
        meta.update(POSITION_META)
    schema = pa.schema([_field(DELETED_FRAGMENTS, pa.binary())])
    return pa.table({DELETED_FRAGMENTS: pa.array([BitMap().serialize()], pa.binary())},
                    schema=schema), meta


def tokens_table(tokens: list) -> pa.Table:
    """``part_N_tokens.lance`` of ``tokens`` (token ``i`` has id ``i``)."""
    import ducer

    encoded = [t.encode("utf-8") for t in tokens]
    items = sorted(zip(encoded, range(len(encoded))))
    fst = bytes(ducer.Map.build(":memory:", items)) if items else bytes(ducer.Map.build(":memory:", []))
    schema = pa.schema([_field(FST, pa.large_binary()), _field(NEXT_ID, pa.uint32()),
                        _field(TOTAL_LENGTH, pa.uint64())])
    return pa.table({FST: pa.array([fst], pa.large_binary()),
                     NEXT_ID: pa.array([len(tokens)], pa.uint32()),
                     TOTAL_LENGTH: pa.array([sum(len(b) for b in encoded)], pa.uint64())},
                    schema=schema)


def docs_table(row_ids: np.ndarray, num_tokens: np.ndarray, doc_index=None) -> pa.Table:
    fields = [_field(ROW_ID, pa.uint64()), _field(NUM_TOKENS, pa.uint32())]
    cols = [pa.array(np.asarray(row_ids, np.uint64)), pa.array(np.asarray(num_tokens, np.uint32))]
    if doc_index is not None:
        fields.append(_field(DOC_INDEX, pa.uint32()))
        cols.append(pa.array(np.asarray(doc_index, np.uint32)))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _binary_lists(counts: np.ndarray, offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    """list<large_binary> with ``counts[t]`` binaries in row ``t``; binary ``i`` is
    ``data[offsets[i]:offsets[i+1]]``."""
    values = pa.Array.from_buffers(pa.large_binary(), int(offsets.size - 1),
                                   [None, pa.py_buffer(np.ascontiguousarray(offsets, np.int64)),
                                    pa.py_buffer(data)])
    list_off = np.zeros(counts.size + 1, dtype=np.int32)
    np.cumsum(counts, out=list_off[1:])
    return pa.ListArray.from_arrays(pa.array(list_off, pa.int32()), values,
                                    type=pa.list_(pa.field("item", pa.large_binary())))


def invert_table(enc: dict, lengths: np.ndarray, with_position: bool) -> pa.Table:
    """``part_N_invert.lance`` from the kernel's output (``_postings.encode``)."""
    fields = [_field(POSTING, pa.list_(pa.field("item", pa.large_binary()))),
              _field(MAX_SCORE, pa.float32()), _field(LENGTH, pa.uint32()),
              _field(IMPACTS, pa.list_(pa.field("item", pa.large_binary())))]
    cols = [_binary_lists(enc["blocks_per_token"], enc["posting_offsets"], enc["posting"]),
            pa.array(enc["max_score"], pa.float32()), pa.array(np.asarray(lengths, np.uint32)),
            _binary_lists(enc["impacts_per_token"], enc["impact_offsets"], enc["impacts"])]
    if with_position:
        fields += [_field(POSITIONS, pa.large_binary()),
                   _field(POSITION_BLOCKS, pa.list_(pa.field("item", pa.uint32())))]
        pos_off = enc["position_offsets"]
        cols.append(pa.Array.from_buffers(pa.large_binary(), int(pos_off.size - 1),
                                          [None, pa.py_buffer(pos_off), pa.py_buffer(enc["positions"])]))
        list_off = np.zeros(lengths.size + 1, dtype=np.int32)
        np.cumsum(enc["blocks_per_token"], out=list_off[1:])
        cols.append(pa.ListArray.from_arrays(pa.array(list_off, pa.int32()),
                                             pa.array(enc["position_block_offsets"], pa.uint32())))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def invert_metadata(with_position: bool) -> dict:
    return {**INVERT_META, **(POSITION_META if with_position else {})}
