"""Scalar index types. Importing this package registers every one of them."""
from . import bitmap, btree, label_list  # noqa: F401
