"""Scalar index types. Importing this package registers every one of them."""
from . import bloomfilter, btree, zonemap  # noqa: F401
