"""The Lance data FILE format (v2): LanceFileReader / LanceFileWriter.

Schema conversion helpers live in :mod:`lancefmt.file.schema`.
"""
from .reader import LanceFileReader

__all__ = ["LanceFileReader"]
