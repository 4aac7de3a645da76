"""What a page encoder takes (levels + visible values of one leaf column) and gives back (the
``PageLayout`` and its buffers)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..._proto import encodings_v2_1_pb2 as pb


@dataclass
class EncodedPage:
    encoding: pb.PageLayout
    buffers: list = field(default_factory=list)
    num_rows: int = 0


@dataclass
class PageInput:
    layers: list              # RepDefLayer innermost first
    rep: np.ndarray | None    # uint16 per entry
    defs: np.ndarray | None   # uint16 per entry
    block: object             # FixedBlock | VariableBlock of the visible items
    visible: np.ndarray | None  # bool per entry (None: every entry is visible)
    num_rows: int
    max_rep: int
    max_visible_def: int
