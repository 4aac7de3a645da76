"""Indices: what lets a read find rows without scanning them.

Shaped like Lance's ``lance-index`` crate: one small protocol and many index types.

* :mod:`.core` -- index metadata (the manifest's index section), the store an index's files
  live in (``_indices/{uuid}/``, Lance files written and read by :mod:`lancefmt.file`), the
  registry of index types, row-id sets and the planner that answers a filter's index terms.
* :mod:`.scalar` -- the scalar index types (BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER,
  NGRAM), each one module plus one registration.
* :mod:`.vector` -- vector search: distances, the IVF model, quantizers (PQ, SQ, flat) and the
  vector index type.
* :mod:`.fts` -- full-text search: the INVERTED index (tokenizer, posting lists, BM25) and
  the scorer of pylance's full-text queries.

This package sits above ``table`` and ``file`` and below ``dataset``: the dataset's read
planner, writes and maintenance use it; it never reads a dataset itself (training data is
handed to it).
"""

from . import fts, scalar  # noqa: E402,F401 -- registers the index types
from . import vector  # noqa: E402,F401 -- registers the vector index types
