"""Vector indices and search: distances, IVF clustering, quantizers (PQ, SQ, flat) and the
index types built from them. Importing this package registers the vector index types."""

from . import vector_type  # noqa: E402,F401 -- registers the vector index types
