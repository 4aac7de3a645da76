"""A dataset's commit history, one version at a time, for the streaming source and sink.

Both need what a version's transaction says: the sink looks for the micro-batch a streaming query
committed last (its id and batch id are transaction properties), the source for which versions
only appended rows. Manifests are read one by one (newest first for the sink); nothing here
caches, so every answer reflects storage at the time of the call.
"""
from __future__ import annotations

from ..io import open_store
from ..table.commit import read_transaction_of
from ..table.versions import list_manifests, load_manifest

QUERY_ID_KEY = "lancefmt.streaming.query_id"
BATCH_ID_KEY = "lancefmt.streaming.batch_id"


def version_numbers(uri: str, storage_options=None) -> list[int]:
    """Every committed version, oldest first ([] when there is no dataset)."""
    store = open_store(uri, storage_options)
    return [loc.version for loc in list_manifests(uri, store=store)]


def transaction(uri: str, version: int, storage_options=None, store=None):
    """``(manifest, transaction)`` of ``version`` (the transaction may be None: not recorded)."""
    store = store or open_store(uri, storage_options)
    mf = load_manifest(uri, int(version), store=store)
    return mf, read_transaction_of(mf, uri, store)


def last_streamed_batch(uri: str, query_id: str, storage_options=None) -> int | None:
    """The highest micro-batch id streaming query ``query_id`` committed to ``uri`` (None: none).

    Walks back from the latest version and stops at the first commit of that query (a query
    commits its batches in order, so that one holds the highest id).
    """
    store = open_store(uri, storage_options)
    for version in reversed([loc.version for loc in list_manifests(uri, store=store)]):
        _, txn = transaction(uri, version, store=store)
        if txn is not None and txn.transaction_properties.get(QUERY_ID_KEY) == query_id:
            try:
                return int(txn.transaction_properties.get(BATCH_ID_KEY, ""))
            except ValueError:
                return None
    return None
