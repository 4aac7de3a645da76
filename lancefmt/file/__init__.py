"""The Lance data FILE format (v2).

``lancefmt.file.LanceFileReader`` / ``LanceFileWriter`` are pylance's ``lance.file`` API
(:mod:`lancefmt.file.api`: results objects, ``metadata()`` method). lancefmt's own reader and
writer, which the dataset layer uses and which return Tables directly, are
:class:`lancefmt.file.reader.LanceFileReader` and :class:`lancefmt.file.writer.LanceFileWriter`.
Schema conversion helpers live in :mod:`lancefmt.file.schema`; read projections (including
the dataset layer's field-id based one) in :mod:`lancefmt.file.projection`.
"""
from .api import LanceFileReader, LanceFileSession, LanceFileWriter, ReaderResults, stable_version
from .projection import Projection

__all__ = ["LanceFileReader", "LanceFileSession", "LanceFileWriter", "stable_version", "ReaderResults", "Projection"]
