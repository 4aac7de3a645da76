"""Scalar index types. Importing this package registers every one of them."""
from . import bitmap, bloomfilter, btree, json_index, label_list, ngram, zonemap  # noqa: F401
