"""Scalar index types. Importing this package registers every one of them."""
from . import btree  # noqa: F401
