"""``write_dataset``: write data files and commit them as a new dataset, an append or an
overwrite, removing the files again when the commit fails."""
from __future__ import annotations

import pyarrow as pa

from ...errors import CommitConflictError, DatasetExistsError, InvalidArgumentError
from ...file.schema import schema_metadata_to_proto
from ...io import io_scope, open_store
from ...io.memory_scope import private_memory_options
from ...io.uri import normalize_uri
from ...table.manifest_stores import as_manifest_store
from ...table.transaction import Append, Overwrite
from ..core.files import delete_files
from ..core.snapshot import Snapshot
from .files import DEFAULT_MAX_BYTES_PER_FILE, DEFAULT_MAX_ROWS_PER_FILE, write_files
from .plan import WritePlan, existing_manifest, plan_write


@io_scope()  # its files and the barrier before its commit: one writer (io/uploads.py)
def write_and_commit(data, uri, schema=None, mode: str = "create", *,
                  max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                  max_rows_per_group: int = 1024,
                  max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                  progress=None, storage_options: dict | None = None,
                  data_storage_version: str | None = None,
                  enable_v2_manifest_paths: bool = True, enable_stable_row_ids: bool = False,
                  auto_cleanup_options: dict | None = None, commit_message: str | None = None,
                  transaction_properties: dict | None = None, initial_bases=None,
                  target_bases=None, base_store_params: dict | None = None,
                  manifest_store=None, after_commit=None) -> Snapshot:
    """Write ``data`` as a new dataset, or append to / overwrite an existing one; the new
    version's snapshot. pylance's parameters in pylance's order (``schema`` third, ``mode``
    fourth); ``after_commit`` as :class:`~lancefmt.dataset.core.snapshot.Snapshot`'s.

    ``max_rows_per_group`` is accepted for compatibility (2.0 files have pages, not row
    groups, and pylance ignores it for them too). ``progress`` is pylance's
    ``FragmentWriteProgress`` (``begin``/``complete`` called per fragment written).
    ``auto_cleanup_options`` (``{"interval", "older_than_seconds"}``) is stored in the new
    dataset's config as pylance stores it. ``base_store_params``: per-base storage options
    (see :mod:`lancefmt.dataset.core.base_options`). ``manifest_store``: commit through an external
    manifest store (:mod:`lancefmt.table.external_manifest`)."""
    if int(max_rows_per_group) <= 0:
        raise InvalidArgumentError("max_rows_per_group must be positive")
    if hasattr(uri, "uri") and hasattr(uri, "version"):  # a Dataset: append to it
        if storage_options is None:
            storage_options = uri.storage_options
        if base_store_params is None:
            base_store_params = getattr(uri, "base_store_params", None)
        if manifest_store is None:
            manifest_store = getattr(uri, "manifest_store", None)
        uri = uri.uri
    else:
        storage_options = private_memory_options(uri, storage_options)
    uri = normalize_uri(uri)
    plan = plan_write(data, uri, mode, schema, data_storage_version, initial_bases, storage_options,
                 manifest_store)
    fragments, written = write_files(plan, target_bases, max_rows_per_file, max_bytes_per_file,
                                     storage_options, base_store_params,
                                     max_rows_per_group=max_rows_per_group)
    report_progress(progress, fragments)
    if plan.existing is not None and mode == "append":
        operation = Append(fragments)
        read_version = plan.existing.version
    else:
        bases = [b.to_pb() for b in plan.bases] if plan.existing is None else None
        config = auto_cleanup_config(auto_cleanup_options) if plan.existing is None else None
        operation = Overwrite(plan.fields, fragments, bases, config_upsert_values=config,
                              schema_metadata=_schema_metadata(plan.schema))
        read_version = plan.existing.version if plan.existing is not None else 0
    creating_append = plan.existing is None and mode == "append"
    try:
        try:
            new = Snapshot.commit_to(
                uri, operation, read_version, storage_options=storage_options,
                enable_v2_manifest_paths=enable_v2_manifest_paths,
                data_storage_version=plan.storage_version,
                enable_stable_row_ids=enable_stable_row_ids if plan.existing is None else False,
                commit_message=commit_message, transaction_properties=transaction_properties,
                must_create=(mode == "create" or creating_append),
                base_store_params=base_store_params, manifest_store=manifest_store,
                after_commit=after_commit)
        except DatasetExistsError:
            if not creating_append:
                raise
            # Lost the race to create the dataset: the files are written, append them instead.
            new = _append_after_lost_create(plan, fragments, storage_options, commit_message,
                                            transaction_properties, base_store_params,
                                            manifest_store, after_commit)
    except BaseException:
        for file_uri, options in written:
            delete_files([file_uri], options)
        raise
    return new.run_after_commit()


def _append_after_lost_create(plan: WritePlan, fragments, storage_options, commit_message,
                              transaction_properties, base_store_params, manifest_store=None,
                              after_commit=None) -> Snapshot:
    """Commit ``fragments`` (written for a new dataset) as an Append to the dataset a concurrent
    writer created first, when their files fit it: same fields (names, types, ids), storage
    version and bases. Otherwise the create conflicts (nothing of ours is committed)."""
    store = open_store(plan.uri, storage_options, as_manifest_store(manifest_store))
    existing = existing_manifest(plan.uri, store)
    if existing is None:  # created and gone again: nothing sensible to rebase on
        raise CommitConflictError(f"the dataset at {plan.uri} was created concurrently and removed")
    existing.check_writable()
    header = existing.header
    ours = [f.SerializeToString(deterministic=True) for f in plan.fields]
    theirs = [f.SerializeToString(deterministic=True) for f in header.fields]
    same_bases = sorted(b.to_pb().SerializeToString(deterministic=True) for b in plan.bases) == \
        sorted(b.SerializeToString(deterministic=True) for b in header.base_paths)
    if ours != theirs or existing.data_storage_version != plan.storage_version or not same_bases:
        raise CommitConflictError(
            f"a dataset was created concurrently at {plan.uri} with a different schema, storage "
            f"version or bases; this append's data was not committed")
    return Snapshot.commit_to(plan.uri, Append(fragments), existing.version,
                              storage_options=storage_options,
                              data_storage_version=plan.storage_version,
                              commit_message=commit_message,
                              transaction_properties=transaction_properties,
                              base_store_params=base_store_params, manifest_store=manifest_store,
                              after_commit=after_commit)


def _schema_metadata(schema: pa.Schema) -> dict:
    return schema_metadata_to_proto(schema.metadata)


def auto_cleanup_config(options) -> dict | None:
    """The config keys pylance writes for ``auto_cleanup_options``."""
    if not options:
        return None
    try:
        return {"lance.auto_cleanup.interval": str(int(options["interval"])),
                "lance.auto_cleanup.older_than": f"{int(options['older_than_seconds'])}s"}
    except (KeyError, TypeError, ValueError):
        raise InvalidArgumentError("auto_cleanup_options needs integer 'interval' and "
                                   "'older_than_seconds'") from None


def report_progress(progress, fragments) -> None:
    if progress is None:
        return
    for f in fragments:
        if hasattr(progress, "begin"):
            progress.begin(f)
        if hasattr(progress, "complete"):
            progress.complete(f)
