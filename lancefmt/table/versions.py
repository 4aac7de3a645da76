"""Finding versions: which manifests exist in ``_versions/``, which is the latest, where version N
lives, and opening one.

The latest version always comes from one listing of ``_versions/`` (never from the
``latest_version_hint.json`` hint, see :mod:`.version_hint`): every name that parses as a
manifest counts, temp/staged names are skipped, detached versions (``d{v}.manifest``) are never
the latest, and a directory that mixes V1 and V2 names is refused as corrupt. A given version is
looked up as Lance does: the V2 name first, then the V1 name.

With an external manifest store bound to the store (``store.manifest_store``, see
:mod:`.commit_external`), the latest version and version N come from the external store (the
listing is completed with the versions it committed), and half-finished commits are finished.
"""
from __future__ import annotations

from ..errors import CorruptFileError, DatasetNotFoundError
from ..io import open_store
from ..io.uri import child
from .commit_external import merge_listing, resolve_latest, resolve_version
from .manifest import ManifestFile, read_manifest
from .manifest_location import ManifestLocation
from .naming import VERSIONS_DIR, is_detached_version, listing_scheme, manifest_file_name, \
    parse_manifest_name
from .refs import resolve_version_ref


def versions_dir(dataset_uri: str) -> str:
    return child(dataset_uri, VERSIONS_DIR)


def manifest_uri(dataset_uri: str, version: int, scheme: str = "v2") -> str:
    """URI of version ``version``'s manifest under the given naming scheme."""
    return child(dataset_uri, VERSIONS_DIR, manifest_file_name(version, scheme))


def list_manifests(dataset_uri: str, *, store=None, storage_options=None,
                   include_detached: bool = False) -> list[ManifestLocation]:
    """Every committed manifest of the dataset, oldest first, from one listing."""
    store = store or open_store(dataset_uri, storage_options)
    vdir = versions_dir(dataset_uri)
    out = _locations(store.list(vdir), vdir, include_detached)
    if getattr(store, "manifest_store", None) is not None:
        out = merge_listing(dataset_uri, out, store, store.manifest_store)
    return out


def _locations(listing, vdir: str, include_detached: bool = False) -> list[ManifestLocation]:
    infos = [i for i in listing if not i.is_dir]
    listing_scheme((i.name for i in infos), vdir)
    out = []
    for info in infos:
        parsed = parse_manifest_name(info.name)
        if parsed is None:
            continue
        version, scheme, detached = parsed
        if detached and not include_detached:
            continue
        out.append(ManifestLocation(version, info.uri, info.size, scheme, detached))
    out.sort(key=lambda loc: loc.version)
    return out


def latest_manifest(dataset_uri: str, *, store=None, storage_options=None) -> ManifestLocation:
    """The latest version's manifest; :class:`DatasetNotFoundError` if there is none."""
    store = store or open_store(dataset_uri, storage_options)
    if getattr(store, "manifest_store", None) is not None:
        loc = resolve_latest(dataset_uri, store, store.manifest_store)
        if loc is not None:
            return loc
    else:
        loc = _latest_from_first_page(dataset_uri, store)
        if loc is not None:
            return loc
    locs = list_manifests(dataset_uri, store=store)
    if not locs:
        raise DatasetNotFoundError(f"no Lance dataset at {dataset_uri} (no manifest in "
                                   f"{versions_dir(dataset_uri)})")
    return locs[-1]


def _latest_from_first_page(dataset_uri: str, store) -> ManifestLocation | None:
    """The latest version from one lexically ordered page of ``_versions/`` (object stores):
    the whole listing if it fits, else the first V2 name, which is the newest version (Lance
    does the same). None when the page does not settle it."""
    vdir = versions_dir(dataset_uri)
    page = store.list_sorted_page(vdir) if hasattr(store, "list_sorted_page") else None
    if page is None:
        return None
    infos, complete = page
    if complete:
        locs = _locations(infos, vdir)
        if not locs:
            raise DatasetNotFoundError(f"no Lance dataset at {dataset_uri} (no manifest in {vdir})")
        return locs[-1]
    for info in infos:
        parsed = parse_manifest_name(info.name)
        if parsed is None or parsed[2]:
            continue
        version, scheme, _ = parsed
        return ManifestLocation(version, info.uri, info.size, scheme) if scheme == "v2" else None
    return None


def locate_manifest(dataset_uri: str, version: int, *, store=None,
                    storage_options=None) -> ManifestLocation:
    """Where version ``version`` is: the V2 name if it exists, else the V1 name (detached
    versions have one name). :class:`DatasetNotFoundError` if neither exists."""
    store = store or open_store(dataset_uri, storage_options)
    version = int(version)
    if getattr(store, "manifest_store", None) is not None:
        loc = resolve_version(dataset_uri, version, store, store.manifest_store)
        if loc is not None:
            return loc
    schemes = ("v2",) if is_detached_version(version) else ("v2", "v1")
    for scheme in schemes:
        uri = manifest_uri(dataset_uri, version, scheme)
        try:
            size = store.size(uri)
        except (FileNotFoundError, NotADirectoryError):
            continue
        return ManifestLocation(version, uri, size, scheme, is_detached_version(version))
    raise DatasetNotFoundError(f"version {version} of dataset {dataset_uri} does not exist")


def load_manifest(dataset_uri: str, version=None, *, store=None, storage_options=None,
                  check: bool = True) -> ManifestFile:
    """Open version ``version`` (None = latest, an int, or a tag name) of the dataset.

    With ``check`` (the default), a version whose reader feature flags lancefmt does not support
    is refused with :class:`~lancefmt.UnsupportedFeatureError`; ``check=False`` is for tools
    that only show metadata. A tag of a branch opens the manifest under ``tree/{branch}``
    (``ManifestFile.uri`` tells where).
    """
    store = store or open_store(dataset_uri, storage_options)
    uri, v = resolve_version_ref(dataset_uri, version, store=store)
    loc = (latest_manifest(uri, store=store) if v is None
           else locate_manifest(uri, v, store=store))
    m = read_manifest(loc.uri, size=loc.size, store=store)
    if m.version != loc.version:
        raise CorruptFileError(f"manifest is named for version {loc.version} but holds version "
                               f"{m.version}", loc.uri)
    if check:
        m.check_readable()
    return m


def list_versions(dataset_uri: str, *, store=None, storage_options=None) -> list[dict]:
    """``[{"version", "timestamp", "metadata"}]`` for every version, oldest first, shaped like
    pylance's ``LanceDataset.versions()`` (naive local ``datetime``; ``metadata`` is the
    manifest summary with the same keys and string values)."""
    store = store or open_store(dataset_uri, storage_options)
    out = []
    for loc in list_manifests(dataset_uri, store=store):
        m = read_manifest(loc.uri, size=loc.size, store=store)
        out.append({"version": m.version, "timestamp": m.timestamp,
                    "metadata": m.fragments.summary()})
    return out
