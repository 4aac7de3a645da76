"""Stable row ids (lance-table ``rowids``): sequences, version runs, and the row-id index.

* :func:`decode_row_ids` / :func:`encode_row_ids`: ``RowIdSequence`` bytes <-> numpy uint64
  (decoding is Cython end to end; encoding shapes segments by Lance's size rule).
* :class:`RowIdSequence`, :class:`U64Segment`, :class:`EncodedU64Array`: the structure, for
  byte-exact round trips and Lance's ``extend`` / ``mask`` / ``rechunk`` (compaction, update).
* :func:`decode_versions` / :func:`encode_versions` / :func:`new_fragment_versions` and
  :class:`RowDatasetVersionSequence`: created-at / last-updated-at versions per row.
* :class:`RowIdIndex`: row id -> row address over live rows.
* ``meta``: load any of these from a ``DataFragment`` (inline or external storage).
"""
from .._rowids import fill_range  # ids first, first + 1, ... into an array (Cython)
from .address import MISSING_ADDRESS, fragment_addresses, row_address, split_addresses
from .encoded_array import EncodedU64Array
from .index import RowIdIndex
from .meta import (
    carry_row_ids,
    load_created_at_versions,
    load_last_updated_at_versions,
    load_row_id_sequence,
    load_row_ids,
    load_version_sequences,
    read_external_slice,
    row_id_bytes,
)
from .segment import SegmentKind, U64Segment, sorted_segment_sizes
from .sequence import (
    RowIdSequence,
    decode_row_ids,
    encode_row_ids,
    live_row_ids,
    rechunk_sequences,
)
from .version import (
    RowDatasetVersionSequence,
    decode_versions,
    encode_versions,
    new_fragment_versions,
    rechunk_version_sequences,
)

__all__ = [
    "carry_row_ids",
    "fill_range",
    "MISSING_ADDRESS", "row_address", "fragment_addresses", "split_addresses",
    "EncodedU64Array", "SegmentKind", "U64Segment", "sorted_segment_sizes",
    "RowIdSequence", "decode_row_ids", "encode_row_ids", "live_row_ids", "rechunk_sequences",
    "RowDatasetVersionSequence", "decode_versions", "encode_versions", "new_fragment_versions",
    "rechunk_version_sequences", "RowIdIndex",
    "row_id_bytes", "load_row_ids", "load_row_id_sequence", "load_created_at_versions",
    "load_last_updated_at_versions", "load_version_sequences", "read_external_slice",
]
