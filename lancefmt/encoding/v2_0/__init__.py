"""Lance file version 2.0: ArrayEncoding page trees, one column per field (pre-order).

* :mod:`.page_decoder` / :mod:`.page_encoder`: one page <-> Arrow;
* :mod:`.field_reader` / :mod:`.field_writer`: fields over columns (structs' header columns,
  lists' offsets columns).
"""
from .field_reader import assign_columns, build_field_reader

PAGE_ENCODING_URL = "/lance.encodings.ArrayEncoding"


class FieldReaders:
    """The 2.0 structural scheme, as :func:`lancefmt.encoding.field_readers_for` returns it."""

    version = (2, 0)
    page_encoding_url = PAGE_ENCODING_URL

    @staticmethod
    def assign_columns(roots):
        return assign_columns(roots)

    @staticmethod
    def build(root, dtype, column_of, columns, path):
        return build_field_reader(root, dtype, column_of, columns, path)
