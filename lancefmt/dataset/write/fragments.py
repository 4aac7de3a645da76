"""``write_fragments``: data files for new data, returned as fragments, nothing committed
(what distributed writers call; a driver commits them later)."""
from __future__ import annotations

from ...errors import InvalidInputError
from ...io import io_scope, wait_durable
from ...io.uri import normalize_uri
from ...table.fragment import FragmentMetadata
from ..core.commit import dataset_options
from ..core.files import delete_files
from .files import DEFAULT_MAX_BYTES_PER_FILE, DEFAULT_MAX_ROWS_PER_FILE, write_files
from .plan import plan_write
from .staging import staged_task


@io_scope()  # fails on its own files' uploads/syncs only (io/uploads.py)
def write_fragments(data, uri, *, schema=None, mode: str = "append",
                    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                    data_storage_version: str | None = None, target_bases=None,
                    initial_bases=None, storage_options: dict | None = None,
                    base_store_params: dict | None = None,
                    target_offset: int = 0, staging: str | None = None,
                    staging_open: bool = False,
                    manifest_store=None, progress=None,
                    first_fragment_id: int = 0) -> list[FragmentMetadata]:
    """Write data files for ``data`` and return their fragments (ids 0), durable; commit
    nothing.

    ``mode="append"`` matches an existing dataset's schema and storage version;
    ``"overwrite"``/``"create"`` write with the data's own schema (for an Overwrite commit).
    ``target_offset`` is where the round-robin over ``target_bases`` starts: distributed
    writers pass their task number so that their first files spread over all bases.
    ``staging`` (a URI from :func:`.staging.staging_uri`) records every data file before it is created,
    so a distributed job can clean up after tasks that died; with ``staging_open`` the job
    was opened by :func:`.staging.open_staged_job` and the task refuses to write once it is closed.
    """
    storage_options = dataset_options(uri, storage_options)
    uri = normalize_uri(uri)
    if mode == "create":
        mode = "overwrite"
    plan = plan_write(data, uri, mode, schema, data_storage_version, initial_bases,
                      storage_options, manifest_store)
    with staged_task(staging, storage_options, require_open=staging_open):
        fragments, written = write_files(plan, target_bases, max_rows_per_file,
                                         max_bytes_per_file, storage_options, base_store_params,
                                         target_offset, staging, staging_open,
                                         progress=progress, first_fragment_id=first_fragment_id)
    try:
        wait_durable()  # the fragments may be committed by another process (a Spark driver)
    except BaseException:
        for file_uri, options in written:  # nobody may commit them, nor be failed by them
            delete_files([file_uri], options)
        raise
    return fragments


def create_fragment(dataset_uri, data, fragment_id=None, schema=None, max_rows_per_group=1024,
                    progress=None, mode="append", *, data_storage_version=None,
                    use_legacy_format=None, storage_options=None, **kwargs):
    """pylance's ``LanceFragment.create``: write ``data`` as ONE fragment of ``dataset_uri``
    (not committed; pass it to ``LanceOperation.Append/Overwrite``)."""
    if hasattr(dataset_uri, "uri") and storage_options is None:
        storage_options = getattr(dataset_uri, "storage_options", None)
    uri = dataset_uri if hasattr(dataset_uri, "uri") else normalize_uri(dataset_uri)
    fid = int(fragment_id) if fragment_id is not None else 0
    # progress is told when the data file is opened (its name chosen) and when it is closed
    frags = write_fragments(data, uri, schema=schema, mode=mode, max_rows_per_file=1 << 62,
                            max_bytes_per_file=1 << 62, data_storage_version=data_storage_version,
                            storage_options=storage_options, progress=progress,
                            first_fragment_id=fid)
    if not frags:
        raise InvalidInputError("LanceFragment.create needs at least one row")
    (frag,) = frags
    frag.id = fid
    return frag
