"""Page descriptions of Lance 2.1 / 2.2: the ``PageLayout`` protobuf and its rep/def layers.

A page's Any payload is parsed once and kept on the page description. Layout names are checked
against the file version here (2.2's u32 mini-block grammar, 2.1's all-null-only constant
pages), so the decoders can trust them.
"""
from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import DecodeError

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import CorruptFileError, UnsupportedFeatureError
from ..column import PageInfo

PAGE_LAYOUT_URL = "/lance.encodings21.PageLayout"

ALL_VALID_ITEM = pb.REPDEF_ALL_VALID_ITEM
ALL_VALID_LIST = pb.REPDEF_ALL_VALID_LIST
NULLABLE_ITEM = pb.REPDEF_NULLABLE_ITEM
NULLABLE_LIST = pb.REPDEF_NULLABLE_LIST
EMPTYABLE_LIST = pb.REPDEF_EMPTYABLE_LIST
NULL_AND_EMPTY_LIST = pb.REPDEF_NULL_AND_EMPTY_LIST

ITEM_LAYERS = (ALL_VALID_ITEM, NULLABLE_ITEM)
LIST_LAYERS = (ALL_VALID_LIST, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST)


def parse_layout(page: PageInfo, version, path) -> pb.PageLayout:
    """The PageLayout of ``page`` (cached on it); other page encodings are refused by name."""
    layout = page.parsed
    if layout is not None:
        return layout
    if page.type_url != PAGE_LAYOUT_URL:
        raise UnsupportedFeatureError(
            f"{page.describe()}: page encoding {page.type_url!r} in a "
            f"{version[0]}.{version[1]} file", path)
    layout = pb.PageLayout()
    try:
        layout.ParseFromString(page.encoding)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise CorruptFileError(f"{page.describe()}: undecodable PageLayout ({e})", path) from None
    kind = layout.WhichOneof("layout")
    if kind is None:
        raise UnsupportedFeatureError(
            f"{page.describe()}: unknown page layout (not mini-block, full-zip, constant or "
            f"blob; a newer Lance writer?)", path)
    _check_version(page, layout, kind, tuple(version), path)
    page.parsed = layout
    return layout


def _check_version(page, layout, kind, version, path):
    if kind == "mini_block_layout":
        large = layout.mini_block_layout.has_large_chunk
        if version == (2, 1) and large:
            raise CorruptFileError(f"{page.describe()}: large mini-block chunks are not part of "
                                   f"the Lance 2.1 grammar", path)
        if version >= (2, 2) and not large:
            raise CorruptFileError(f"{page.describe()}: Lance 2.2 mini-block pages need the u32 "
                                   f"chunk grammar (has_large_chunk)", path)
    elif kind == "constant_layout" and version == (2, 1):
        c = layout.constant_layout
        if c.HasField("inline_value") or c.HasField("rep_compression") or \
                c.HasField("def_compression") or len(page.buffer_offsets) not in (0, 2):
            raise CorruptFileError(f"{page.describe()}: Lance 2.1 only has the all-null form of "
                                   f"constant pages", path)
    elif kind == "blob_layout":
        inner = layout.blob_layout.inner_layout.WhichOneof("layout")
        if inner != "mini_block_layout":
            raise UnsupportedFeatureError(f"{page.describe()}: blob layout over {inner!r}", path)
        _check_version(page, layout.blob_layout.inner_layout, inner, version, path)


@dataclass(frozen=True)
class Layers:
    """Def codes and visibility of a page's rep/def ``layers`` (innermost first).

    ``null_code[i]`` / ``empty_code[i]`` are the def values meaning "layer i is null / an
    empty list" (0: the layer has none); ``cum[i]`` is the highest code of layers 0..i.
    """

    kinds: tuple
    null_code: tuple
    empty_code: tuple
    cum: tuple

    @classmethod
    def of(cls, layers, where: str, path) -> "Layers":
        kinds = tuple(int(k) for k in layers)
        if not kinds:
            raise CorruptFileError(f"{where}: page has no rep/def layers", path)
        nulls, empties, cum = [], [], []
        c = 0
        for k in kinds:
            if k not in ITEM_LAYERS and k not in LIST_LAYERS:
                raise UnsupportedFeatureError(f"{where}: rep/def layer kind {k}", path)
            null = empty = 0
            if k in (NULLABLE_ITEM, NULLABLE_LIST, NULL_AND_EMPTY_LIST):
                c += 1
                null = c
            if k in (EMPTYABLE_LIST, NULL_AND_EMPTY_LIST):
                c += 1
                empty = c
            nulls.append(null)
            empties.append(empty)
            cum.append(c)
        return cls(kinds, tuple(nulls), tuple(empties), tuple(cum))

    @property
    def num_lists(self) -> int:
        return sum(1 for k in self.kinds if k in LIST_LAYERS)

    @property
    def max_def(self) -> int:
        return self.cum[-1]

    def is_list(self, i: int) -> bool:
        return self.kinds[i] in LIST_LAYERS

    def run_top(self, i: int) -> int:
        """The highest def code of layer ``i`` and the item layers right above it (up to the
        next list layer): entries with a def up to this belong to layer i's run."""
        j = i
        while j + 1 < len(self.kinds) and self.kinds[j + 1] in ITEM_LAYERS:
            j += 1
        return self.cum[j]

    @property
    def max_visible_def(self) -> int:
        """Entries with a def up to this own a value slot (leaf items, null leaves included)."""
        return self.run_top(0)
