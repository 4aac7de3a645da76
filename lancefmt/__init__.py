"""lancefmt: Lance datasets from Python + Cython, byte-compatible with pylance.

This module re-exports the public API of docs/api.md and nothing else.
"""
from .errors import (
    CommitConflictError,
    CorruptFileError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidArgumentError,
    InvalidPathError,
    LanceError,
    UnsupportedFeatureError,
)
from .table.base_paths import BasePath

__version__ = "0.1.0"

__all__ = [
    "LanceError",
    "DatasetNotFoundError",
    "DatasetExistsError",
    "CommitConflictError",
    "CorruptFileError",
    "UnsupportedFeatureError",
    "InvalidPathError",
    "InvalidArgumentError",
    "BasePath",
    "__version__",
]
