"""The details Lance infers for an index entry that has none.

Indices written before ``IndexMetadata.index_details`` existed, and segments committed by hand
with a ``CreateIndex`` whose ``Index`` names no details (the older distributed build), carry no
type. Lance then guesses from the column and the directory, and so does lancefmt: a list column
is a LABEL_LIST, a directory holding ``bitmap_page_lookup.lance`` a BITMAP, one holding
``metadata.lance`` (or the older ``invert.lance``) an INVERTED index, anything else a BTREE. A
vector column's index is none of these (None). pylance 14 still lists such an index as
``Unknown`` (``describe_indices`` shows no type URL) but uses it, and its ``index_stats``
reports the inferred type.
"""
from __future__ import annotations

from ...errors import InvalidArgumentError
from .registry import IndexType, by_name
from .store import IndexStore

BITMAP_LOOKUP = "bitmap_page_lookup.lance"
INVERTED_METADATA = "metadata.lance"
LEGACY_INVERTED = "invert.lance"


def inferred_type_name(logical_type: str, store: IndexStore) -> str | None:
    """The index type Lance infers for a details-less entry on a column of Lance logical type
    ``logical_type`` whose files are in ``store`` (None: a vector index)."""
    if logical_type == "list":
        return "LABEL_LIST"
    if logical_type.startswith("fixed_size_list"):
        return None
    if store.exists(BITMAP_LOOKUP):
        return "BITMAP"
    if store.exists(INVERTED_METADATA) or store.exists(LEGACY_INVERTED):
        return "INVERTED"
    return "BTREE"


def inferred_type(logical_type: str, store: IndexStore) -> IndexType | None:
    """The type of :func:`inferred_type_name` (None when lancefmt lacks it); a segment of it
    loads with the type's default details, which is what Lance does."""
    name = inferred_type_name(logical_type, store)
    if name is None:
        return None
    try:
        return by_name(name)
    except InvalidArgumentError:
        return None
