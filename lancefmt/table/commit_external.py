"""The external manifest store protocol (seeds/lance-table-format.md, "External Manifest Store").

Commit of version N (:func:`put_manifest_external`):

1. put the manifest (durably) at ``_versions/{final name}-{uuid}`` (a staged name no reader
   takes for a manifest);
2. ``put_if_not_exists(base_uri, N, staged)`` in the external store: the commit point; losing it
   means another writer took N (the staged file is removed, the caller retries);
3. copy the manifest to its final name (a whole-object put: atomic on S3, temp + rename locally);
4. ``put_if_exists(base_uri, N, final)``, then remove the staged file.

A writer that dies after step 2 leaves a committed version whose final manifest may be missing.
Every reader and writer that resolves versions through the external store finishes such a copy
(:func:`finalize`) and refuses to load (``CorruptFileError``) when it cannot, so the directory
alone stays a complete dataset for readers without the external store (pylance), at most one
version behind.
"""
from __future__ import annotations

import uuid as _uuid

from ..errors import CorruptFileError
from .external_manifest import ExternalManifestStore, ManifestEntry
from .naming import MANIFEST_SUFFIX, parse_manifest_name
from .manifest_location import ManifestLocation


def staged_manifest_uri(final_uri: str) -> str:
    """Lance's staging name: the final name plus ``-{uuid}``."""
    return f"{final_uri}-{_uuid.uuid4()}"


def final_manifest_uri(path: str) -> str:
    """The final name a staged (or final) manifest path stands for."""
    i = path.rfind(MANIFEST_SUFFIX)
    if i < 0:
        raise CorruptFileError("an external manifest store entry does not name a manifest", path)
    return path[:i + len(MANIFEST_SUFFIX)]


def _location(entry_version: int, final: str, size) -> ManifestLocation:
    parsed = parse_manifest_name(final.rsplit("/", 1)[-1])
    if parsed is None or parsed[0] != entry_version:
        raise CorruptFileError(f"an external manifest store entry for version {entry_version} "
                               "names another manifest", final)
    version, scheme, detached = parsed
    return ManifestLocation(version, final, size, scheme, detached)


def finalize(dataset_uri: str, entry: ManifestEntry, store, ms: ExternalManifestStore) -> ManifestLocation:
    """The final location of a committed version, finishing its copy first if the writer died
    before it did. Raises :class:`CorruptFileError` if neither copy of the manifest exists."""
    final = final_manifest_uri(entry.path)
    if entry.path == final:
        return _location(entry.version, final, entry.size)
    loc = _location(entry.version, final, entry.size)
    try:
        data = store.read(entry.path)
    except FileNotFoundError:
        data = None
    if data is None:  # another reader finished it and removed the staged copy, or it is lost
        again = ms.get(dataset_uri, entry.version)
        if again is not None and again.path == final:
            return _location(entry.version, final, again.size)
        try:
            size = store.size(final)
        except FileNotFoundError:
            raise CorruptFileError(
                f"version {entry.version} is committed in the external manifest store, but "
                "neither its staged nor its final manifest exists; refusing to load",
                entry.path) from None
        ms.put_if_exists(dataset_uri, entry.version, final, size, entry.e_tag)
        return _location(entry.version, final, size)
    if entry.size is not None and len(data) != entry.size:
        raise CorruptFileError(f"staged manifest holds {len(data)} bytes, the external manifest "
                               f"store recorded {entry.size}", entry.path)
    if not _same_final(store, final, data):
        store.put_durable(final, data)
    ms.put_if_exists(dataset_uri, entry.version, final, len(data), entry.e_tag)
    try:
        store.delete(entry.path)
    except OSError:
        pass  # an orphan staged file is harmless (no reader takes it for a manifest)
    return ManifestLocation(loc.version, final, len(data), loc.scheme, loc.detached)


def _same_final(store, final: str, data: bytes) -> bool:
    """Whether the final name already holds exactly ``data``; a *different* manifest there means
    a writer committed this version without the external store."""
    try:
        existing = store.read(final)
    except FileNotFoundError:
        return False
    if existing == data:
        return True
    raise CorruptFileError("two different manifests were committed for this version (a writer "
                           "did not use the external manifest store)", final)


def put_manifest_external(dataset_uri: str, version: int, final_uri: str, data: bytes, store,
                          ms: ExternalManifestStore) -> bool:
    """Commit ``data`` as version ``version`` through the external store; False if another
    writer committed that version first (nothing of ours is left behind)."""
    staged = staged_manifest_uri(final_uri)
    store.put_durable(staged, data)
    try:
        won = ms.put_if_not_exists(dataset_uri, version, staged, len(data), None)
    except BaseException:
        _delete_quietly(store, staged)
        raise
    if not won:
        _delete_quietly(store, staged)
        return False
    try:  # the version is committed; a failure from here on is finished by the next reader
        _finish_commit(dataset_uri, ManifestEntry(version, staged, len(data)), store, ms)
    except (OSError, CorruptFileError):
        pass
    return True


def _finish_commit(dataset_uri, entry, store, ms):
    """Steps 3 and 4 for the writer itself (a separate name so tests can stop a writer here)."""
    finalize(dataset_uri, entry, store, ms)


def _delete_quietly(store, uri):
    try:
        store.delete(uri)
    except OSError:
        pass


def resolve_latest(dataset_uri: str, store, ms: ExternalManifestStore) -> ManifestLocation | None:
    """The latest committed version per the external store (None if it has no entry: a dataset
    created before the store was used is found by listing)."""
    entry = ms.get_latest_version(dataset_uri)
    return None if entry is None else finalize(dataset_uri, entry, store, ms)


def resolve_version(dataset_uri: str, version: int, store,
                    ms: ExternalManifestStore) -> ManifestLocation | None:
    entry = ms.get(dataset_uri, int(version))
    return None if entry is None else finalize(dataset_uri, entry, store, ms)


def merge_listing(dataset_uri: str, locations: list, store, ms: ExternalManifestStore) -> list:
    """A ``_versions/`` listing completed with the versions the external store committed after
    its newest manifest (finishing their copies)."""
    entry = ms.get_latest_version(dataset_uri)
    if entry is None:
        return locations
    top = max((loc.version for loc in locations), default=0)
    if entry.version <= top:
        return locations
    extra = []
    for v in range(top + 1, entry.version + 1):
        e = entry if v == entry.version else ms.get(dataset_uri, v)
        if e is not None:
            extra.append(finalize(dataset_uri, e, store, ms))
    return list(locations) + extra
