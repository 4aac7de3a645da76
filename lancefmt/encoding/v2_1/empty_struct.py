"""Empty structs (``struct<>``) in Lance 2.1 / 2.2 files: a field with no children is a leaf
with a column of its own, each page an all-null ConstantLayout without buffers that no reader
looks at (Lance's encoder: "overkill to invent a new layout just for empty structs"). Lance
refuses an empty struct with levels (nulls, or inside a list or a struct), so only top-level,
non-null ones are written and read here.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from .encoded_page import EncodedPage
from .layout import parse_layout

EMPTY = pa.struct([])


def is_empty_struct_node(node) -> bool:
    return node.logical_type == "struct" and not node.is_packed_struct() and not node.children


def empty_structs(n: int) -> pa.Array:
    """``n`` valid empty structs (no buffers: a struct<> holds nothing)."""
    return pa.StructArray.from_buffers(EMPTY, int(n), [None], children=[])


def refuse_nested(node, path_in_field: tuple, where) -> None:
    if path_in_field:
        raise UnsupportedFeatureError(f"field {node.name!r}: an empty struct inside another "
                                      f"field (Lance writes none)", where)


class EmptyStructLeafWriter:
    """Pages of an empty-struct column: row counts only."""

    def __init__(self, column: int, sink, name: str):
        self.column, self.sink, self.name = column, sink, name
        self.pending_rows = None
        self.wrote_any = False

    def append(self, arr: pa.Array):
        if arr.null_count:
            raise InvalidArgumentError(
                f"Empty structs with rep/def information are not yet supported. The field "
                f"{self.name} is an empty struct that either has nulls or is in a list.")
        self.pending_rows = (self.pending_rows or 0) + len(arr)

    def flush(self):
        if self.pending_rows is None or (self.pending_rows == 0 and self.wrote_any):
            self.pending_rows = None
            return
        c = pb.ConstantLayout()
        c.layers.extend([pb.REPDEF_NULLABLE_ITEM])
        page = EncodedPage(pb.PageLayout(constant_layout=c), [], self.pending_rows)
        self.pending_rows = None
        self.wrote_any = True
        submit = getattr(self.sink, "submit", None)
        if submit is None:
            self.sink.emit(self.column, page)
        else:
            submit(self.column, lambda: page)

    def finish(self):
        pass


class EmptyStructLeafReader:
    """An empty-struct column: its pages are checked to be buffer-less constant pages, and
    rows are made, never decoded."""

    def __init__(self, column, version, path):
        self.column = column
        self.dtype = EMPTY
        self.path = path
        self.num_rows = column.num_rows
        for page in column.pages:
            layout = parse_layout(page, version, path)
            if layout.WhichOneof("layout") != "constant_layout" or len(page.buffer_sizes):
                raise CorruptFileError(f"{page.describe()}: an empty struct's page must be a "
                                       f"constant page without buffers", path)

    def pages_for(self, start, stop) -> list:
        return []   # nothing to fetch

    def read(self, source, start, stop) -> list:
        return [empty_structs(max(0, min(stop, self.num_rows) - start))]

    def take(self, source, rows: np.ndarray) -> list:
        return [empty_structs(len(rows))]

    def evict_before(self, source, row) -> None:
        pass
