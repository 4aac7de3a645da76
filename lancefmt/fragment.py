"""pylance's ``lance.fragment``: fragments of a dataset and writing uncommitted ones.

``LanceFragment`` is :class:`lancefmt.dataset.fragment.Fragment`; ``FragmentMetadata`` and
``DeletionFile`` describe a fragment as a manifest stores it; :func:`write_fragments` takes
pylance's arguments (a Dataset or a URI, ``progress``, ``return_transaction``...) and writes
with :func:`lancefmt.dataset.write_fragments`.
"""
from __future__ import annotations

import os

from .dataset import Dataset, write_fragments as write_data_fragments
from .dataset.fragment import Fragment, FragmentSession
from .dataset.write.dataset_write import report_progress
from .dataset.write.files import DEFAULT_MAX_BYTES_PER_FILE
from .errors import InvalidArgumentError
from .table.data_file import DataFile
from .table.fragment import DeletionFile, FragmentMetadata
from .table.transaction import Append, Overwrite, Transaction

LanceFragment = Fragment

__all__ = ["DataFile", "DeletionFile", "Fragment", "FragmentMetadata", "FragmentSession",
           "LanceFragment", "write_fragments"]

_IGNORED = ("data_cache_bytes", "max_page_bytes", "target_all_bases", "namespace_client",
            "table_id", "session", "external_blob_mode", "allow_external_blob_outside_bases")


def write_fragments(data, dataset_uri, schema=None, *, return_transaction: bool = False,
                    mode: str = "append", max_rows_per_file: int = 1024 * 1024,
                    max_rows_per_group: int | None = 1024,
                    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE, progress=None,
                    data_storage_version: str | None = None, use_legacy_format=None,
                    storage_options: dict | None = None, enable_stable_row_ids: bool = False,
                    **options):
    """Write ``data`` as new fragments of ``dataset_uri`` (ids 0), nothing committed: the
    fragments, or with ``return_transaction`` the Append/Overwrite Transaction to commit.
    ``progress`` (a ``FragmentWriteProgress``) hears of each fragment written."""
    for k in _IGNORED:
        options.pop(k, None)
    if max_rows_per_group is not None and int(max_rows_per_group) <= 0:
        raise InvalidArgumentError("max_rows_per_group must be positive")
    if use_legacy_format is not None and data_storage_version is None:
        data_storage_version = "legacy" if use_legacy_format else "stable"
    read_version = 0
    if isinstance(dataset_uri, Dataset):
        storage_options = storage_options or dataset_uri.snapshot.storage_options
        options.setdefault("base_store_params", dataset_uri.snapshot.base_store_params)
        read_version = dataset_uri.version
        dataset_uri = dataset_uri.uri
    frags = write_data_fragments(data, os.fspath(dataset_uri), schema=schema, mode=mode,
                                 max_rows_per_file=max_rows_per_file,
                                 max_bytes_per_file=max_bytes_per_file,
                                 data_storage_version=data_storage_version,
                                 storage_options=storage_options, **options)
    report_progress(progress, frags)
    if not return_transaction:
        return frags
    if mode == "append":
        if not read_version:
            from .dataset import dataset as open_dataset

            read_version = open_dataset(os.fspath(dataset_uri),
                                        storage_options=storage_options).version
        return Transaction(read_version, Append(frags))
    if schema is None:
        schema = _schema_of(data)
    return Transaction(read_version, Overwrite(schema, frags))


def _schema_of(data):
    schema = getattr(data, "schema", None)
    if schema is None:
        raise InvalidArgumentError("return_transaction with mode='overwrite' needs schema=")
    return schema
