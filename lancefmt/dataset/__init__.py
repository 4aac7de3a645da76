"""Datasets: pylance's ``lance.dataset`` surface over the operations below it.

* :mod:`.core`: one version as a snapshot, commits, scan contexts, written-file bookkeeping;
* :mod:`.read`: scans, scanners, projections, takes, row lookups, statistics, blobs;
* :mod:`.write`: writing data files and committing them (``write_dataset``,
  ``write_fragments``, distributed-job staging);
* :mod:`.mutate`: delete, update, merge insert, schema evolution, metadata;
* :mod:`.maintain`: compaction, cleanup, auto-cleanup, validation;
* :mod:`.refs`: tags, branches, shallow clones, base paths;
* :mod:`.dataset`, :mod:`.fragment`, :mod:`.read_api`: the ``Dataset`` / ``Fragment`` facade.
"""
from .core.commit import COMMIT_MESSAGE_KEY as LANCE_COMMIT_MESSAGE_KEY
from .core.session import Session
from .dataset import Dataset, commit, dataset, write_dataset, write_fragments
from .maintain.auto_cleanup import AutoCleanupConfig
from .fragment import Fragment
from .mutate.merge_insert import MergeInsertBuilder
from .read.index_info import VectorIndexReader
from .read.scanner import LanceScanner
from ..table.index_entry import Index, IndexFile

# pylance's names for the same classes
LanceDataset = Dataset
LanceFragment = Fragment

__all__ = ["AutoCleanupConfig", "LANCE_COMMIT_MESSAGE_KEY", "Dataset", "Fragment", "LanceDataset", "LanceFragment", "LanceScanner",
           "MergeInsertBuilder", "Session", "Index", "IndexFile", "VectorIndexReader", "dataset", "write_dataset",
           "write_fragments", "commit"]
