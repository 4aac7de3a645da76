"""Datasets: the user-facing layer over the table and file formats (docs/api.md)."""
from .dataset import Dataset, dataset
from .fragment import Fragment
from .write import commit, write_dataset, write_fragments

__all__ = ["Dataset", "Fragment", "dataset", "write_dataset", "write_fragments", "commit"]
