"""Committing one operation (or a staged ``Transaction``) to a dataset URI.

This is the one way every dataset operation writes a new version: it wraps the operation in
a transaction against the version it was planned on, and hands it to the table format's
commit protocol (:func:`lancefmt.table.commit.commit_transaction`), which checks conflicts
with what was committed since, rebases compatible ones and retries lost races.
"""
from __future__ import annotations

import random
import time

from ...errors import DatasetNotFoundError, InvalidArgumentError, RetryableCommitConflictError
from ...file.format import write_version_name
from ...io import open_store
from ...io.memory_scope import private_memory_options
from ...io.uri import normalize_uri
from ...table.commit import CommitOptions, commit_transaction
from ...table.manifest_stores import as_manifest_store
from ...table.manifest_builder import BuildOptions
from ...table.transaction import Restore, Transaction
from ...table.versions import latest_manifest, load_manifest

COMMIT_MESSAGE_KEY = "__lance_commit_message"
CONFLICT_RETRIES = 10


def dataset_options(uri, storage_options):
    """A Dataset passed as the URI lends its storage options (a private ``memory://`` store's
    namespace included); a plain ``memory://`` URI gets a store of its own, as in pylance."""
    if hasattr(uri, "uri") and hasattr(uri, "storage_options") and storage_options is None:
        return uri.storage_options
    return private_memory_options(uri, storage_options)


def commit_manifest(uri, operation, read_version: int | None = None, *,
                    storage_options: dict | None = None, max_retries: int = 20,
                    enable_v2_manifest_paths: bool = True,
                    data_storage_version: str | None = None, enable_stable_row_ids: bool = False,
                    commit_message: str | None = None, transaction_properties: dict | None = None,
                    must_create: bool = False, manifest_store=None):
    """Commit ``operation`` (a ``lancefmt.Operation.*`` or a staged ``Transaction``) to the
    dataset at ``uri``: ``(normalized uri, storage options, store, committed ManifestFile)``.

    ``read_version`` is the version the operation was planned against (None: the latest, 0
    when creating). A Dataset passed as ``uri`` lends its manifest store and options.
    """
    if manifest_store is None:
        manifest_store = getattr(uri, "manifest_store", None)
    storage_options = dataset_options(uri, storage_options)
    uri = normalize_uri(uri)
    store = open_store(uri, storage_options, as_manifest_store(manifest_store))
    if isinstance(operation, Transaction):
        # a transaction staged earlier (e.g. ``execute_uncommitted``) names its read version
        if commit_message is not None:
            raise InvalidArgumentError("commit_message is not supported when committing a "
                                       "Transaction: set it in the transaction properties")
        txn = Transaction(operation.read_version, operation.operation, operation.uuid,
                          operation.tag, {**operation.transaction_properties,
                                          **(transaction_properties or {})})
        operation = txn.operation
    else:
        if read_version is None:
            try:
                read_version = latest_manifest(uri, store=store).version
            except DatasetNotFoundError:
                read_version = 0
        props = dict(transaction_properties or {})
        if commit_message is not None:
            props[COMMIT_MESSAGE_KEY] = commit_message
        txn = Transaction(int(read_version), operation, transaction_properties=props)
    restore_source = None
    if isinstance(operation, Restore):
        old = load_manifest(uri, operation.version, store=store)
        restore_source = (old.manifest, old.indices)
    options = CommitOptions(
        max_retries=max_retries, manifest_scheme="v2" if enable_v2_manifest_paths else "v1",
        must_create=must_create,
        build=BuildOptions(data_storage_version=(write_version_name(data_storage_version)
                                                 if data_storage_version else None),
                           enable_stable_row_ids=enable_stable_row_ids))
    mf = commit_transaction(uri, txn, store=store, options=options, restore_source=restore_source)
    return uri, storage_options, store, mf


def conflict_backoff(attempt: int) -> None:
    """Wait before re-planning an operation that lost to a concurrent writer (exponential,
    jittered, at most about a second)."""
    time.sleep(min(1.0, 0.01 * 2 ** attempt) * (0.5 + random.random()))


def commit_retrying(snapshot, stage, retries: int = CONFLICT_RETRIES):
    """Plan, write and commit an operation, re-planning on the latest version when a
    concurrent writer made a retryable conflict (Lance's ``conflict_retries``).

    ``stage(snapshot)`` returns ``(operation or None, result, undo)``: the operation to commit
    (None: nothing to do), what to hand back, and a function removing the files it wrote.
    Returns ``(committed snapshot, result)``; the snapshot's ``after_commit`` hook has run.
    """
    attempt = 0
    while True:
        operation, result, undo = stage(snapshot)
        if operation is None:
            return snapshot, result
        try:
            committed = snapshot.commit(operation)
        except RetryableCommitConflictError:
            undo()
            attempt += 1
            if attempt > retries:
                raise
            conflict_backoff(attempt)
            snapshot = snapshot.latest()
            continue
        except BaseException:
            undo()
            raise
        return committed.run_after_commit(), result
