"""The container of a legacy (v0.1) Lance data file: footer, Metadata, page table, schema.

Layout, as pylance's legacy writer lays it out (``rust/lance-file/src/previous``)::

    [pages, batch after batch, field after field, no alignment]
    [page table: (i64 position, i64 length) per field id in [min id, max id] per batch]
    [statistics pages and their page table (optional)]
    [dictionary values, then u32 length + pb Manifest holding the file's schema]
    [u32 length + pb lance.file.Metadata: batch_offsets, page_table_position,
     manifest_position, statistics]
    [footer, 16 bytes: u64 Metadata position, u16 major, u16 minor, "LANC"]

Footer versions (0, 1) and (0, 2) are legacy. A page's ``length`` counts values (rows of the
batch, or ``n + 1`` positions of a list); fields that store nothing (structs) have (0, 0).
Everything read here is checked against the file size before use.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError

from ..._proto import file_pb2, table_pb2
from ...errors import CorruptFileError, UnsupportedFeatureError

MAGIC = b"LANC"
FOOTER_SIZE = 16
_FOOTER = struct.Struct("<QHH4s")
LEGACY_FOOTER_VERSIONS = ((0, 1), (0, 2))
# What pylance 14's legacy writer puts in the footer (and in DataFile.file_*_version).
WRITE_VERSION = (0, 2)
# A legacy file has one page table entry per field id and batch; refuse absurd tables before
# allocating them (a file of N bytes holds at most N / 16 entries).
ENTRY_SIZE = 16


def legacy_footer_version(tail: bytes) -> tuple[int, int] | None:
    """(major, minor) when ``tail`` ends with a legacy footer, else None."""
    if len(tail) < FOOTER_SIZE or tail[-4:] != MAGIC:
        return None
    _, major, minor, _ = _FOOTER.unpack_from(tail, len(tail) - FOOTER_SIZE)
    return (major, minor) if (major, minor) in LEGACY_FOOTER_VERSIONS else None


@dataclass
class LegacyMetadata:
    """What a legacy file declares about itself."""

    version: tuple[int, int]
    file_size: int
    metadata_position: int      # where the Metadata message starts; pages end before it
    batch_offsets: np.ndarray   # int64, n_batches + 1 entries from 0
    page_table_position: int
    manifest_position: int
    fields: list                # lance.file.Field of the file's own schema (pre-order)
    schema_metadata: dict
    min_field_id: int
    max_field_id: int
    page_positions: np.ndarray  # int64 [field id - min id, batch]
    page_lengths: np.ndarray    # int64 [field id - min id, batch]

    @property
    def num_rows(self) -> int:
        return int(self.batch_offsets[-1])

    @property
    def num_batches(self) -> int:
        return len(self.batch_offsets) - 1

    @property
    def data_end(self) -> int:
        return self.metadata_position

    # the 2.x FileMetadata names the dataset layer may look at
    @property
    def columns(self) -> list:
        return []

    @property
    def global_buffers(self) -> list:
        return []

    def page(self, field_id: int, batch: int, path) -> tuple[int, int]:
        """(position, length) of ``field_id``'s page in ``batch``."""
        i = field_id - self.min_field_id
        if not 0 <= i < self.page_positions.shape[0] or not 0 <= batch < self.num_batches:
            raise CorruptFileError(f"field id {field_id} has no page in batch {batch} (the page "
                                   f"table covers ids {self.min_field_id}..{self.max_field_id})",
                                   path)
        return int(self.page_positions[i, batch]), int(self.page_lengths[i, batch])


def _message(read_range, pos: int, end: int, msg, what: str, path):
    """A ``u32 length + protobuf`` struct at ``pos`` that must end by ``end``."""
    if pos < 0 or pos + 4 > end:
        raise CorruptFileError(f"{what} at {pos} lies outside the file", path)
    head = read_range(pos, 4)
    if len(head) != 4:
        raise CorruptFileError(f"short read of the {what} length", path)
    (n,) = struct.unpack("<I", head)
    if n > end - pos - 4:
        raise CorruptFileError(f"{what} of {n} bytes at {pos} overruns its region (ends {end})",
                               path)
    body = read_range(pos + 4, n)
    if len(body) != n:
        raise CorruptFileError(f"short read of the {what}", path)
    try:
        msg.ParseFromString(bytes(body))
    except (DecodeError, RuntimeError, ValueError) as e:
        raise CorruptFileError(f"undecodable {what} ({e})", path) from None
    return msg


def read_legacy_metadata(read_range, file_size: int, tail: bytes, path) -> LegacyMetadata:
    """Parse and check a legacy file's footer, Metadata, schema and page table.
    ``read_range(start, length) -> bytes``; ``tail`` holds the file's last bytes."""
    if file_size < FOOTER_SIZE or len(tail) < FOOTER_SIZE:
        raise CorruptFileError(f"file of {file_size} bytes is too small for a Lance file", path)
    meta_pos, major, minor, magic = _FOOTER.unpack_from(tail, len(tail) - FOOTER_SIZE)
    if magic != MAGIC or (major, minor) not in LEGACY_FOOTER_VERSIONS:
        raise CorruptFileError(f"not a legacy Lance footer (version {major}.{minor})", path)
    footer_at = file_size - FOOTER_SIZE
    meta = _message(read_range, meta_pos, footer_at, file_pb2.Metadata(), "file Metadata", path)

    offsets = np.asarray(list(meta.batch_offsets), dtype=np.int64)
    if offsets.size == 0:
        offsets = np.zeros(1, dtype=np.int64)
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0):
        raise CorruptFileError(f"batch offsets {offsets[:8].tolist()}... do not rise from 0", path)

    if meta.HasField("statistics") and meta.statistics.page_table_position > meta_pos:
        raise CorruptFileError("the statistics page table lies after the file Metadata", path)
    if not meta.manifest_position:
        raise UnsupportedFeatureError("legacy file without its own schema (no manifest)", path)
    manifest = _message(read_range, int(meta.manifest_position), meta_pos, table_pb2.Manifest(),
                        "file schema (manifest)", path)
    fields = list(manifest.fields)
    if not fields:
        raise CorruptFileError("the file's schema has no fields", path)
    ids = [f.id for f in fields]
    lo, hi = min(ids), max(ids)
    if lo < 0:
        raise CorruptFileError(f"negative field id {lo} in the file's schema", path)

    nb = len(offsets) - 1
    n_ids = hi - lo + 1
    table_pos = int(meta.page_table_position)
    need = n_ids * nb * ENTRY_SIZE
    if table_pos > meta_pos or need > meta_pos - table_pos:
        raise CorruptFileError(f"page table of {n_ids} fields x {nb} batches at {table_pos} "
                               f"overruns the file Metadata at {meta_pos}", path)
    raw = read_range(table_pos, need) if need else b""
    if len(raw) != need:
        raise CorruptFileError("short read of the page table", path)
    table = np.frombuffer(raw, dtype="<i8").reshape(n_ids, nb, 2) if need else \
        np.zeros((n_ids, nb, 2), dtype=np.int64)
    positions = np.ascontiguousarray(table[:, :, 0])
    lengths = np.ascontiguousarray(table[:, :, 1])
    if np.any(positions < 0) or np.any(lengths < 0) or np.any(positions > meta_pos):
        raise CorruptFileError("a page table entry lies outside the page data", path)
    return LegacyMetadata(
        version=(major, minor), file_size=file_size, metadata_position=int(meta_pos),
        batch_offsets=offsets, page_table_position=table_pos,
        manifest_position=int(meta.manifest_position), fields=fields,
        schema_metadata=dict(manifest.schema_metadata), min_field_id=lo, max_field_id=hi,
        page_positions=positions, page_lengths=lengths)
