"""The commit protocol of the Lance table format (seeds/lance-table-format.md, "Committing").

1. The writer has already written its data (and deletion) files.
2. The transaction is written to ``_transactions/{read_version}-{uuid}.txn``.
3. Every version committed since the read version is checked against it with the conflict
   matrix (:mod:`.conflict`); an incompatible one aborts the commit.
4. The next manifest is built from the latest manifest + the transaction and created with an
   atomic put-if-absent. If another writer took that version first, go back to 3 (bounded
   retries with jittered backoff); fragment ids and row ids are re-assigned on every attempt.

Nothing becomes visible before step 4 succeeds; on any failure the transaction file written in
step 2 is removed again, so the dataset is exactly as it was.

With an external manifest store bound to the store (``store.manifest_store``), step 4 runs the
external store protocol of :mod:`.commit_external` instead; without one, a remote store's
conditional put is probed once (:mod:`.conditional_put`) so that a store that ignores it cannot
silently lose commits.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass

from ..errors import (
    CommitConflictError, CorruptFileError, DatasetExistsError, DatasetNotFoundError, LanceError,
    RetryableCommitConflictError,
)
from ..io import open_store, wait_durable
from ..io.uri import check_relative, child
from .conflict import Verdict, check_conflict
from .legacy_dictionaries import carried_dictionaries
from .manifest import ManifestFile, encode_manifest_file, parse_manifest_file, read_manifest
from .manifest_builder import BuildOptions, build_manifest
from .naming import TRANSACTIONS_DIR, transaction_file_name
from .transaction import Transaction
from .version_hint import wants_version_hint, write_version_hint
from .versions import list_manifests, manifest_uri

DEFAULT_MAX_RETRIES = 20


@dataclass
class CommitOptions:
    """How to commit: retries, manifest naming for new datasets, and what to build."""

    max_retries: int = DEFAULT_MAX_RETRIES
    manifest_scheme: str = "v2"          # only used when creating a dataset
    must_create: bool = False            # refuse if a dataset already exists
    build: BuildOptions | None = None
    write_transaction_file: bool = True


def transaction_file_uri(dataset_uri: str, name: str) -> str:
    """``{dataset}/_transactions/{name}``; a name that would leave ``_transactions/`` (a crafted
    manifest's ``../../x``) is an InvalidPathError."""
    return child(dataset_uri, TRANSACTIONS_DIR, check_relative(name, "transaction file name"))


def read_transaction_of(mf: ManifestFile, dataset_uri: str, store) -> Transaction | None:
    """The transaction that produced a version: inline copy first, then ``_transactions/``."""
    try:
        pb = mf.transaction()
        if pb is not None:
            return Transaction.from_pb(pb)
    except LanceError:
        pass  # an unreadable inline copy: fall back to the _transactions/ file below
    name = mf.header.transaction_file
    if not name:
        return None
    uri = transaction_file_uri(dataset_uri, name)
    try:
        data = store.read(uri)
    except FileNotFoundError:
        return None
    try:
        return Transaction.from_bytes(data)
    except Exception as e:  # protobuf DecodeError and friends: treat as unreadable
        raise CorruptFileError(f"cannot decode transaction: {e}", uri) from None


def _backoff(attempt: int) -> None:
    time.sleep(min(1.0, 0.01 * (2 ** attempt)) * (0.5 + random.random()))


def commit_transaction(dataset_uri: str, txn: Transaction, *, store=None, storage_options=None,
                       options: CommitOptions | None = None,
                       restore_source: tuple | None = None) -> ManifestFile:
    """Commit ``txn`` to the dataset at ``dataset_uri``; returns the new version's manifest.

    Raises :class:`DatasetExistsError` (``must_create`` and a dataset exists),
    :class:`RetryableCommitConflictError` (redo the operation on the new version) or
    :class:`CommitConflictError` (incompatible, or too many lost races).
    """
    options = options or CommitOptions()
    store = store or open_store(dataset_uri, storage_options)
    txn_pb = txn.to_pb()
    txn_name = transaction_file_name(txn.read_version, txn.uuid)
    txn_uri = transaction_file_uri(dataset_uri, txn_name)
    if options.write_transaction_file:
        store.put(txn_uri, txn_pb.SerializeToString())
    committed = False
    try:
        checked = txn.read_version
        for attempt in range(options.max_retries + 1):
            locations = list_manifests(dataset_uri, store=store)
            latest = locations[-1] if locations else None
            if latest is None:
                if txn.read_version:
                    raise DatasetNotFoundError(f"no Lance dataset at {dataset_uri}")
                previous = None
                version, scheme = 1, options.manifest_scheme
            else:
                if options.must_create:
                    raise DatasetExistsError(f"a Lance dataset already exists at {dataset_uri}")
                previous = None
                for loc in locations:
                    if loc.version <= checked and loc is not latest:
                        continue
                    mf = read_manifest(loc.uri, size=loc.size, store=store)
                    if loc.version > checked and txn.read_version:
                        _check_against(txn, mf, dataset_uri, store)
                        if options.max_retries == 0 and txn.kind == "overwrite":
                            # a strict overwrite (pylance: max_retries=0) is not rebased
                            raise CommitConflictError(
                                f"Commit conflict for version {loc.version}: this overwrite "
                                f"read version {txn.read_version} of {dataset_uri} and "
                                "max_retries=0 forbids rebasing it onto newer versions")
                    if loc is latest:
                        previous = mf
                        fill_row_counts(previous, dataset_uri, store)
                checked = latest.version
                version, scheme = latest.version + 1, latest.scheme
            manifest, indices = build_manifest(
                previous.manifest if previous is not None else None,
                previous.indices if previous is not None else [],
                txn, version=version, transaction_file=txn_name if options.write_transaction_file else "",
                options=options.build, restore_source=restore_source)
            uri = manifest_uri(dataset_uri, version, scheme)
            dictionaries = carried_dictionaries(manifest, previous, dataset_uri, store)
            data = encode_manifest_file(manifest, txn_pb, indices, dictionaries)
            if put_manifest(dataset_uri, version, uri, data, store):
                committed = True
                if wants_version_hint(dataset_uri):
                    try:
                        write_version_hint(dataset_uri, version, store=store)
                    except OSError:
                        pass  # only a hint: readers never trust it over the listing
                return parse_manifest_file(data, uri)
            if options.must_create:
                raise DatasetExistsError(f"a Lance dataset was created concurrently at {dataset_uri}")
            _backoff(attempt)
        raise CommitConflictError(
            f"gave up committing to {dataset_uri} after {options.max_retries + 1} attempts: "
            "other writers kept committing first")
    finally:
        if not committed and options.write_transaction_file:
            try:
                store.delete(txn_uri)
            except OSError:
                pass


def fill_row_counts(mf: ManifestFile, dataset_uri: str, store) -> None:
    """Fragments whose ``physical_rows`` the manifest leaves 0, or cannot be trusted for (no
    writer_version: 0.8.0 recorded the live count), get their data file's row count before a
    commit copies them, as Lance's commit does; the new manifest then carries right counts."""
    from ..file.reader import LanceFileReader
    from .base_paths import BasePathResolver

    frags = mf.fragments
    todo = frags.unknown_row_counts().tolist()
    if not todo:
        return
    resolver = BasePathResolver(dataset_uri, mf.header.base_paths, mf.uri)
    counts = {}
    for i in todo:
        df = frags.fragment(i).files[0]
        uri = resolver.data_file_uri(df.path, df.base_id if df.HasField("base_id") else None)
        counts[i] = LanceFileReader(uri, store=store if uri.startswith(dataset_uri) else None,
                                    file_size=df.file_size_bytes or None).num_rows
    mf.set_row_counts(counts)


def put_manifest(dataset_uri: str, version: int, uri: str, data: bytes, store) -> bool:
    """Create version ``version``'s manifest unless that version exists (the commit point),
    after the local files it may name are durable (whatever store holds the manifest)."""
    wait_durable()
    ms = getattr(store, "manifest_store", None)
    if ms is not None:
        from .commit_external import put_manifest_external

        return put_manifest_external(dataset_uri, version, uri, data, store, ms)
    from .conditional_put import check_conditional_put

    check_conditional_put(store, dataset_uri)
    return store.put_if_absent(uri, data)


def _check_against(txn: Transaction, mf: ManifestFile, dataset_uri: str, store) -> None:
    theirs = read_transaction_of(mf, dataset_uri, store)
    result = check_conflict(txn, theirs)
    if result.verdict is Verdict.COMPATIBLE:
        return
    retryable = result.verdict is Verdict.RETRYABLE
    # pylance's wording ("Commit conflict for version N: ..."), which callers match on
    message = (f"{'Retryable commit' if retryable else 'Commit'} conflict for version "
               f"{mf.version}: this {txn.kind} transaction (read version {txn.read_version}) "
               f"conflicts with the concurrent {theirs.kind if theirs is not None else 'commit'} "
               f"at version {mf.version} of {dataset_uri}: {result.reason}")
    if retryable:
        raise RetryableCommitConflictError(message)
    raise CommitConflictError(message)
