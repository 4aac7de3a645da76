"""Where a fragment's files are, and removing the files an operation wrote when it fails.

Nothing an operation writes is visible before its commit succeeds, so a failed operation
removes what it wrote (data files, deletion files) and the temporaries a local write of them
leaves behind when its process dies before renaming the temp into place.
"""
from __future__ import annotations

from ...io import open_store
from ...io.store import LocalStore
from ...io.uri import child
from ...table.deletion import deletion_file_kind
from ...table.naming import deletion_file_name


def data_file_uri(resolver, df) -> str:
    """The resolved URI of data file ``df`` (a ``DataFile`` protobuf)."""
    return resolver.data_file_uri(df.path, df.base_id if df.HasField("base_id") else None)


def data_file_uris(resolver, fragments) -> list[str]:
    """Resolved URIs of every data file of ``fragments`` (``FragmentMetadata``s)."""
    return [data_file_uri(resolver, df) for f in fragments for df in f.pb.files]


def deletion_file_uri(resolver, pb) -> str | None:
    """The resolved URI of fragment ``pb``'s deletion file, or None."""
    if not pb.HasField("deletion_file"):
        return None
    d = pb.deletion_file
    name = deletion_file_name(pb.id, d.read_version, d.id, deletion_file_kind(d))
    return resolver.deletion_file_uri(name, d.base_id if d.HasField("base_id") else None)


def delete_files(uris, storage_options=None) -> None:
    """Best-effort removal of files this process (or a job's tasks) wrote, after a failed
    write, commit or job; with the temporary files a local write of them leaves behind when
    its process dies before renaming the temp into place (``.tmp_<name>_<hex>`` beside it).
    A URI ending in ``/`` names a directory one operation wrote whole (an index segment,
    staged before its files existed): everything in it goes (:func:`delete_index_dir`)."""
    uris = list(uris)
    for d in [u for u in uris if u.endswith("/")]:
        delete_index_dir(d.rstrip("/"), storage_options)
    uris = [u for u in uris if not u.endswith("/")]
    for u in uris:
        try:
            open_store(u, storage_options).delete(u)
        except OSError:
            pass
    _delete_local_temps(uris, storage_options)


def discard_written(resolver, updated, written, storage_options=None) -> None:
    """Remove what a failed mutation wrote: ``written`` data files and the deletion files of
    the ``updated`` fragments (``FragmentMetadata``s it gave new deletion files)."""
    uris = list(written)
    for f in updated:
        uri = deletion_file_uri(resolver, f.pb)
        if uri:
            uris.append(uri)
    delete_files(uris, storage_options)


def _delete_local_temps(uris, storage_options) -> None:
    """Remove ``.tmp_<name>_*`` beside each local ``uris`` entry (data file names are unique to
    their write, so such a temp belongs to it and to nothing else): one listing per directory."""
    by_dir: dict = {}
    for u in uris:
        store = open_store(u, storage_options)
        if isinstance(store, LocalStore):
            parent, _, name = u.rstrip("/").rpartition("/")
            by_dir.setdefault(parent, (store, set()))[1].add(name)
    for parent, (store, names) in by_dir.items():
        try:
            entries = store.list(parent)
        except OSError:
            continue
        for e in entries:
            if e.is_dir or not e.name.startswith(".tmp_"):
                continue
            stem = e.name[len(".tmp_"):].rpartition("_")[0]
            if stem in names:
                try:
                    store.delete(child(parent, e.name))
                except OSError:  # already gone (another abort got there first): nothing left
                    continue


def delete_index_dir(uri: str, storage_options=None) -> None:
    """Best-effort removal of an index directory this process (or a job's task) wrote and no
    commit names: its files (temporaries of a write cut short included), then (local disks)
    its directories."""
    store = open_store(uri, storage_options)
    try:
        found = [e.uri for e in store.walk(uri)]
    except OSError:
        return
    for u in found:
        try:
            store.delete(u)
        except OSError:
            pass
    store.prune_empty_dirs(uri)
