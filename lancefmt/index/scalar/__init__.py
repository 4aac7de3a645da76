"""Scalar index types. Importing this package registers every one of them."""
from . import bitmap, bloomfilter, btree, label_list, ngram, zonemap  # noqa: F401
