"""Reader and writer feature flags of a manifest.

A Lance manifest carries two bit sets: ``reader_feature_flags`` (what a reader must understand to
read the version correctly) and ``writer_feature_flags`` (what a writer must understand to
commit on top of it). A library refuses a dataset with any bit it does not know. Flags are
recomputed from the manifest's content on every commit (:func:`compute_feature_flags`), the way
Lance's ``apply_feature_flags`` does, so they never drift from what the manifest holds.
"""
from __future__ import annotations

from ..errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError

FLAG_DELETION_FILES = 1
FLAG_STABLE_ROW_IDS = 2
FLAG_USE_V2_FORMAT_DEPRECATED = 4
FLAG_TABLE_CONFIG = 8
FLAG_BASE_PATHS = 16
FLAG_DISABLE_TRANSACTION_FILE = 32
FLAG_UNSTABLE_DATA_OVERLAY_FILES = 64
FLAG_COVERED_INDEX_METADATA = 128
FLAG_MIXED_DATA_FILE_VERSIONS = 256
FLAG_FRAG_REUSE_WITH_STABLE_ROW_IDS = 512
FLAG_FRAGMENT_REUSE_INDEX = 1024
FLAG_SEMANTIC_TYPES = 2048
FLAG_FRAGMENT_TREE = 4096

FLAG_NAMES = {
    FLAG_DELETION_FILES: "deletion_files",
    FLAG_STABLE_ROW_IDS: "stable_row_ids",
    FLAG_USE_V2_FORMAT_DEPRECATED: "use_v2_format_deprecated",
    FLAG_TABLE_CONFIG: "table_config",
    FLAG_BASE_PATHS: "base_paths",
    FLAG_DISABLE_TRANSACTION_FILE: "disable_transaction_file",
    FLAG_UNSTABLE_DATA_OVERLAY_FILES: "unstable_data_overlay_files",
    FLAG_COVERED_INDEX_METADATA: "covered_index_metadata",
    FLAG_MIXED_DATA_FILE_VERSIONS: "mixed_data_file_versions",
    FLAG_FRAG_REUSE_WITH_STABLE_ROW_IDS: "frag_reuse_with_stable_row_ids",
    FLAG_FRAGMENT_REUSE_INDEX: "fragment_reuse_index",
    FLAG_SEMANTIC_TYPES: "semantic_types",
    FLAG_FRAGMENT_TREE: "fragment_tree",
}

# What lancefmt understands. Bit 4 is a legacy marker readers only use to guess the data format
# of very old manifests; 8 and 32 only ever appear in writer flags but are harmless to readers.
SUPPORTED_READER_FLAGS = (FLAG_DELETION_FILES | FLAG_STABLE_ROW_IDS | FLAG_USE_V2_FORMAT_DEPRECATED
                          | FLAG_TABLE_CONFIG | FLAG_BASE_PATHS | FLAG_DISABLE_TRANSACTION_FILE)
SUPPORTED_WRITER_FLAGS = SUPPORTED_READER_FLAGS

# Set together in reader and writer flags and kept in every later version once set (Lance 14).
STICKY_PAIRED_FLAGS = FLAG_MIXED_DATA_FILE_VERSIONS | FLAG_SEMANTIC_TYPES


def flag_names(flags: int) -> list[str]:
    """Names of the bits set in ``flags`` (``"bit_N"`` for a bit Lance has not named)."""
    out = []
    bit = 1
    flags = int(flags)
    while bit <= flags:
        if flags & bit:
            out.append(FLAG_NAMES.get(bit, f"bit_{bit.bit_length() - 1}"))
        bit <<= 1
    return out


def _describe(bits: int) -> str:
    parts = []
    bit = 1
    while bit <= bits:
        if bits & bit:
            name = FLAG_NAMES.get(bit)
            parts.append(f"{bit} ({name})" if name else f"{bit} (unknown)")
        bit <<= 1
    return ", ".join(parts)


def _check(flags: int, supported: int, role: str, path) -> None:
    flags = int(flags)
    unknown = flags & ~supported
    if unknown:
        raise UnsupportedFeatureError(
            f"the dataset needs {role} features lancefmt does not support: {_describe(unknown)} "
            f"({role} flags = {flags})", path)


def check_paired_flags(reader_flags: int, writer_flags: int, path=None) -> None:
    """Refuse a manifest where only one of a paired reader/writer bit is set (Lance does too)."""
    half = (int(reader_flags) ^ int(writer_flags)) & STICKY_PAIRED_FLAGS
    if half:
        raise CorruptFileError(
            f"manifest sets only one of the reader/writer feature bits {_describe(half)}", path)


def check_reader_flags(flags: int, path=None) -> None:
    """Raise :class:`UnsupportedFeatureError` (naming each unknown bit) unless lancefmt can read
    a version with these reader flags."""
    _check(flags, SUPPORTED_READER_FLAGS, "reader", path)


def check_writer_flags(flags: int, path=None) -> None:
    """Raise :class:`UnsupportedFeatureError` unless lancefmt may commit on top of a version with
    these writer flags."""
    _check(flags, SUPPORTED_WRITER_FLAGS, "writer", path)


def compute_feature_flags(manifest, *, enable_stable_row_ids: bool = False,
                          disable_transaction_file: bool = False, fragments=None) -> tuple[int, int]:
    """``(reader_flags, writer_flags)`` for a ``table_pb2.Manifest``, as Lance recomputes them:

    deletion file anywhere -> 1 both; row ids (all fragments must have them) -> 2 both; non-empty
    config -> 8 writer only; non-empty base_paths -> 16 both; data overlays -> 64 both;
    ``disable_transaction_file`` -> 32 writer only; the covered-index bit (128) and the sticky
    paired bits (256, 2048) are carried over from the manifest's current flags.

    ``fragments`` may be the manifest's :class:`~lancefmt.table.manifest.FragmentTable` to avoid
    touching each fragment message (fast for very large manifests).
    """
    old_r, old_w = int(manifest.reader_feature_flags), int(manifest.writer_feature_flags)
    check_paired_flags(old_r, old_w)
    carried = ((old_r | old_w) & FLAG_COVERED_INDEX_METADATA) | (old_r & STICKY_PAIRED_FLAGS)
    if fragments is not None:
        n = len(fragments)
        any_deletions = bool(fragments.has_deletion_file.any())
        with_row_ids = int(fragments.has_row_ids.sum())
        any_overlays = bool(fragments.num_overlays.any())
    else:
        frags = manifest.fragments
        n = len(frags)
        any_deletions = any_overlays = False
        with_row_ids = 0
        for f in frags:
            if f.HasField("deletion_file"):
                any_deletions = True
            if f.WhichOneof("row_id_sequence") is not None:
                with_row_ids += 1
            if len(f.overlays):
                any_overlays = True
    reader = writer = 0
    if any_deletions:
        reader |= FLAG_DELETION_FILES
        writer |= FLAG_DELETION_FILES
    if with_row_ids or enable_stable_row_ids:
        if with_row_ids != n:
            raise InvalidArgumentError(
                f"all fragments must have row ids ({with_row_ids} of {n} have them)")
        reader |= FLAG_STABLE_ROW_IDS
        writer |= FLAG_STABLE_ROW_IDS
    if len(manifest.config):
        writer |= FLAG_TABLE_CONFIG
    if len(manifest.base_paths):
        reader |= FLAG_BASE_PATHS
        writer |= FLAG_BASE_PATHS
    if any_overlays:
        reader |= FLAG_UNSTABLE_DATA_OVERLAY_FILES
        writer |= FLAG_UNSTABLE_DATA_OVERLAY_FILES
    if disable_transaction_file:
        writer |= FLAG_DISABLE_TRANSACTION_FILE
    return reader | carried, writer | carried


def apply_feature_flags(manifest, **kwargs) -> None:
    """Set ``manifest``'s reader/writer flags to :func:`compute_feature_flags`."""
    reader, writer = compute_feature_flags(manifest, **kwargs)
    manifest.reader_feature_flags = reader
    manifest.writer_feature_flags = writer
