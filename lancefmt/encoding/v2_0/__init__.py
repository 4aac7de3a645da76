"""Lance file version 2.0: ArrayEncoding page trees, one column per field (pre-order).

* :mod:`.page_decoder` / :mod:`.page_encoder`: one page <-> Arrow;
* :mod:`.field_reader` / :mod:`.field_writer`: fields over columns (structs' header columns,
  lists' offsets columns).
"""
from .field_reader import assign_columns, build_field_reader
from .field_writer import (DEFAULT_MAX_PAGE_BYTES, DEFAULT_PAGE_BUFFER_BYTES, build_field_writer,
                           column_allocation)

PAGE_ENCODING_URL = "/lance.encodings.ArrayEncoding"


class FieldReaders:
    """The 2.0 read scheme, as :func:`lancefmt.encoding.field_readers_for` returns it."""

    version = (2, 0)
    page_encoding_url = PAGE_ENCODING_URL

    @staticmethod
    def assign_columns(roots, columns=None, path=None):
        return assign_columns(roots, columns, path)

    @staticmethod
    def column_field_ids(root) -> set:
        """Ids of the fields under ``root`` that own a column (all but packed children)."""
        return set(assign_columns([root]))

    @staticmethod
    def build(root, dtype, column_of, columns, path):
        return build_field_reader(root, dtype, column_of, columns, path)


class FieldWriters:
    """The 2.0 write scheme, as :func:`lancefmt.encoding.field_writers_for` returns it."""

    version = (2, 0)
    page_encoding_url = PAGE_ENCODING_URL
    default_max_page_bytes = DEFAULT_MAX_PAGE_BYTES
    default_page_buffer_bytes = DEFAULT_PAGE_BUFFER_BYTES

    @staticmethod
    def column_allocation(roots):
        return column_allocation(roots)

    @staticmethod
    def build(root, arrow_field, column_of, sink, page_buffer_bytes, max_page_bytes):
        return build_field_writer(root, arrow_field, column_of, sink, page_buffer_bytes,
                                  max_page_bytes)
