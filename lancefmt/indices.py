"""pylance's ``lance.indices``: index configuration and description types.

``IndexConfig(index_type, parameters)`` may be passed to ``create_index`` /
``create_scalar_index`` in place of a type name; the descriptions are what
``Dataset.describe_indices`` returns.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .dataset.read.index_info import IndexDescription, IndexSegmentDescription, IvfModel
from .table.index_entry import Index as IndexSegment

__all__ = ["IndexConfig", "IndexFileVersion", "IndexSegment", "IndexSegmentDescription",
           "IndexDescription", "SupportedDistributedIndices", "IvfModel"]


@dataclass
class IndexConfig:
    """An index type and its parameters (pylance's ``lance.indices.IndexConfig``)."""
    index_type: str
    parameters: dict = field(default_factory=dict)


class IndexFileVersion(str, Enum):
    LEGACY = "Legacy"
    V3 = "V3"


class SupportedDistributedIndices(str, Enum):
    BTREE = "BTREE"
    INVERTED = "INVERTED"
    IVF_FLAT = "IVF_FLAT"
    IVF_PQ = "IVF_PQ"
    IVF_SQ = "IVF_SQ"
    VECTOR = "VECTOR"
