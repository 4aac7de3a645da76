"""lancefmt: Lance datasets from Python + Cython, byte-compatible with pylance.

This module re-exports the public API (pylance's names: ``dataset``, ``write_dataset``,
``LanceDataset``, ...) and nothing else; docs/ describes it page by page.
"""
from .errors import (
    CommitConflictError,
    ConditionalPutUnsupportedError,
    CorruptFileError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidArgumentError,
    InvalidInputError,
    NotSupportedError,
    InvalidPathError,
    LanceError,
    StorageError,
    UnsupportedFeatureError,
)
from .table.base_paths import BasePath

DatasetBasePath = BasePath  # pylance's name

from .version import __version__  # noqa: E402

from .dataset import Dataset, Fragment, commit, dataset, write_dataset, write_fragments  # noqa: E402
from .table.fragment import FragmentMetadata  # noqa: E402
from .table.index_entry import Index, IndexFile  # noqa: E402
from .table.transaction import Operation, Transaction  # noqa: E402
from .dataset.read.scanner import LanceScanner  # noqa: E402
from .dataset.read.scan_stats import ScanStatistics  # noqa: E402

# pylance's names for the same classes (code written for ``import lance`` runs unchanged)
LanceDataset = Dataset
LanceFragment = Fragment
LanceOperation = Operation
from .table.external_manifest import (  # noqa: E402
    ExternalManifestStore, ManifestEntry, SqliteManifestStore,
)
from .table.dynamodb_manifest import DynamoDBManifestStore  # noqa: E402
from .dataset.mutate.udf import BatchUDF, batch_udf  # noqa: E402
from .dataset.maintain.compaction import CompactionMetrics  # noqa: E402
from .dataset.mutate.merge_insert import MergeInsertBuilder  # noqa: E402
from .dataset.read.blobs import BlobColumn, BlobFile  # noqa: E402
from .dataset import AutoCleanupConfig, LANCE_COMMIT_MESSAGE_KEY, Session  # noqa: E402
from .table.lance_schema import LanceSchema  # noqa: E402
from .io.io_stats import bytes_read_counter, iops_counter  # noqa: E402

__all__ = [
    "LanceError",
    "DatasetNotFoundError",
    "DatasetExistsError",
    "CommitConflictError",
    "ConditionalPutUnsupportedError",
    "CorruptFileError",
    "UnsupportedFeatureError",
    "InvalidPathError",
    "InvalidArgumentError",
    "InvalidInputError",
    "NotSupportedError",
    "StorageError",
    "BasePath",
    "__version__",
    "Dataset",
    "Fragment",
    "FragmentMetadata",
    "Operation",
    "Transaction",
    "commit",
    "dataset",
    "write_dataset",
    "write_fragments",
    "LanceDataset",
    "LanceFragment",
    "LanceOperation",
    "Index",
    "IndexFile",
    "ScanStatistics",
    "LanceScanner",
    "Session",
    "ExternalManifestStore",
    "ManifestEntry",
    "SqliteManifestStore",
    "DynamoDBManifestStore",
    "BatchUDF",
    "batch_udf",
    "CompactionMetrics",
    "MergeInsertBuilder",
    "BlobColumn",
    "BlobFile",
    "DatasetBasePath",
    "AutoCleanupConfig",
    "LANCE_COMMIT_MESSAGE_KEY",
    "LanceSchema",
    "bytes_read_counter",
    "iops_counter",
]
