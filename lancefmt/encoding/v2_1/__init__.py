"""Lance file versions 2.1 and 2.2: structural encodings (pylance's ``lance.encodings21``).

Only leaf fields own columns; structs and lists above a leaf live in its pages as
repetition/definition levels (``layers``, innermost first). Pages are ``PageLayout`` messages
(Any type URL ``/lance.encodings21.PageLayout``).

Structural layouts read (:mod:`.pages`, :mod:`.assemble`, :mod:`.random_access`):

* **MiniBlock** -- 2.1's u16 and 2.2's u32 chunk metadata words, chunk headers (u16 levels and
  level sizes, u16/u32 value-buffer sizes, 8-byte aligned buffers), dictionary pages (u32
  indices into a block-encoded dictionary), the repetition index (random access by row);
* **FullZip** -- 0/1/2/4-byte control words, fixed and variable (u32/u64 length) values,
  the repetition index (width ``size / (rows + 1)``);
* **Constant / AllNull** -- all-null pages with or without levels, 2.2's constant-value pages
  (inline value or scalar buffer) and block-compressed levels;
* **Blob** (v1) -- (position, size) descriptions in a mini-block page, bytes out of line;
* rep/def levels of every layer kind (all-valid, nullable, empty and null lists), nested
  lists, structs with nulls at every level, fixed-size-list row validity, list<struct>.

Compressive encodings (:mod:`.compressive`, in mini-block, block and full-zip contexts): Flat,
Variable, InlineBitpacking and OutOfLineBitpacking (FastLanes), FSST, Dictionary items, RLE,
ByteStreamSplit, General (zstd / lz4), FixedSizeList, PackedStruct, VariablePackedStruct.
Anything else (2.3's PlanarLayout, Range, Delta...) is refused by name.
"""
from .field_reader import assign_columns, build_field_reader
from .layout import PAGE_LAYOUT_URL


class FieldReaders:
    """The 2.1 / 2.2 read scheme, as :func:`lancefmt.encoding.field_readers_for` returns it."""

    page_encoding_url = PAGE_LAYOUT_URL

    def __init__(self, version):
        self.version = tuple(version)

    @staticmethod
    def assign_columns(roots, columns=None, path=None):
        """(``columns``/``path``: the 2.0 scheme's signature; 2.1 layouts need neither.)"""
        return assign_columns(roots)

    @staticmethod
    def column_field_ids(root) -> set:
        """Ids of the fields under ``root`` that own a column (the leaves)."""
        return set(assign_columns([root]))

    def build(self, root, dtype, column_of, columns, path):
        return build_field_reader(root, dtype, column_of, columns, self.version, path)
