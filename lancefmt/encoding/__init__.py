"""Page encodings and field layouts of Lance data files, one subpackage per structural scheme.

* ``v2_0``: file version 2.0 -- every field owns a column; pages hold ``ArrayEncoding`` trees
  (Any type URL ``/lance.encodings.ArrayEncoding``).
* ``v2_1``: file versions 2.1 and 2.2 -- structural: rep/def levels per leaf column,
  ``/lance.encodings21.PageLayout`` pages with mini-block / full-zip / constant / blob layouts
  (read and written). Both plug in through :func:`field_readers_for` / :func:`field_writers_for`.

Shared pieces: :mod:`.column` (pages, columns, the page source), :mod:`.compression`
(zstd/lz4 as Lance frames them) and the Cython kernels ``_offsets``, ``_validity``,
``_dictionary``.
"""
from __future__ import annotations

from ..errors import UnsupportedFeatureError


def field_readers_for(version: tuple[int, int], path: str | None = None):
    """The structural scheme that reads fields of a file of ``version``."""
    if tuple(version) == (2, 0):
        from .v2_0 import FieldReaders

        return FieldReaders
    if tuple(version) in ((2, 1), (2, 2)):
        from .v2_1 import FieldReaders as Structural

        return Structural(version)
    raise UnsupportedFeatureError(
        f"reading Lance file version {version[0]}.{version[1]} is not supported "
        f"(lancefmt reads 2.0, 2.1 and 2.2)", path)


def field_writers_for(version: tuple[int, int]):
    """The structural scheme that writes fields of ``version``."""
    if tuple(version) == (2, 0):
        from .v2_0 import FieldWriters

        return FieldWriters
    if tuple(version) in ((2, 1), (2, 2)):
        from .v2_1.field_writer import FieldWriters as Structural

        return Structural(version)
    raise UnsupportedFeatureError(
        f"writing Lance file version {version[0]}.{version[1]} is not supported "
        f"(lancefmt writes 2.0, 2.1 and 2.2)")
