"""The Lance data FILE format (v2): :class:`LanceFileReader` / :class:`LanceFileWriter`.

Schema conversion helpers live in :mod:`lancefmt.file.schema`; read projections (including the
dataset layer's field-id based one) in :mod:`lancefmt.file.projection`.
"""
from .projection import Projection
from .reader import LanceFileReader
from .writer import LanceFileWriter

__all__ = ["LanceFileReader", "LanceFileWriter", "Projection"]
