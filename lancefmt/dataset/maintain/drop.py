"""pylance's ``LanceDataset.drop``: remove a whole dataset (every version, data file, tag
and branch) from storage."""
from __future__ import annotations

import shutil

from ...errors import DatasetNotFoundError
from ...io import open_store
from ...io.store import LocalStore
from ...io.uri import normalize_uri, split_uri


def drop_dataset(uri, storage_options: dict | None = None,
                 ignore_not_found: bool = False) -> None:
    """Delete everything under ``uri``; a missing dataset is DatasetNotFoundError (an
    OSError) unless ``ignore_not_found``."""
    uri = normalize_uri(uri)
    store = open_store(uri, storage_options)
    files = [info.uri for info in store.walk(uri)]
    if not files:
        if ignore_not_found:
            return
        raise DatasetNotFoundError(f"Dataset at path {uri} was not found")
    if isinstance(store, LocalStore):  # directories too, as pylance leaves none behind
        shutil.rmtree(split_uri(uri).path, ignore_errors=True)
        return
    store.delete_many(files)
