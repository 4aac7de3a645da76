"""``Dataset.shallow_clone``: a new dataset that references the source's files through a
dataset-root BasePath (no data copied), committed as Lance's Clone transaction (op 113).

What lands at the target (checked against pylance 14.0.2): ``_transactions/{v}-{uuid}.txn``
with ``Clone{is_shallow, ref_version: v, ref_path: source uri}`` (read_version v), and
``_versions/<name of v>`` - the clone keeps the source's version number. The clone then appends,
deletes and evolves on its own; its new files have no base id and live under its own root.
Clones of clones add one more base each.
"""
from __future__ import annotations

from ...errors import DatasetExistsError
from ...io import open_store
from ...io.uri import normalize_uri
from ...table.clone import build_clone_manifest
from ...table.commit import put_manifest, transaction_file_uri
from ...table.manifest_stores import as_manifest_store
from ...table.manifest import encode_manifest_file, parse_manifest_file
from ...table.naming import transaction_file_name
from ...table.transaction import Clone, Transaction
from ...table.version_hint import wants_version_hint, write_version_hint
from ...table.versions import list_manifests, manifest_uri
from ..core.snapshot import Snapshot


def clone_version(src, target_uri: str, *, ref_name=None, branch_name=None, storage_options=None,
                  base_store_params=None, manifest_store=None, after_commit=None) -> Snapshot:
    """Commit the clone of snapshot ``src`` (one version) at ``target_uri``; its snapshot."""
    store = open_store(target_uri, storage_options, as_manifest_store(manifest_store))
    if list_manifests(target_uri, store=store):
        raise DatasetExistsError(f"a Lance dataset already exists at {target_uri}")
    op = Clone(True, ref_name, src.version, src.uri, branch_name)
    txn = Transaction(src.version, op)
    txn_name = transaction_file_name(src.version, txn.uuid)
    manifest, indices = build_clone_manifest(src.manifest, src.manifest_file.indices, op,
                                             transaction_file=txn_name)
    txn_pb = txn.to_pb()
    txn_uri = transaction_file_uri(target_uri, txn_name)
    store.put(txn_uri, txn_pb.SerializeToString())
    uri = manifest_uri(target_uri, src.version, "v2")  # new datasets use V2 names (pylance 14)
    data = encode_manifest_file(manifest, txn_pb, indices, src.manifest_file.dictionary_values())
    if not put_manifest(target_uri, src.version, uri, data, store):
        store.delete(txn_uri)
        raise DatasetExistsError(f"a Lance dataset was created concurrently at {target_uri}")
    if wants_version_hint(target_uri):
        try:
            write_version_hint(target_uri, src.version, store=store)
        except OSError:
            pass
    return Snapshot(target_uri, parse_manifest_file(data, uri), storage_options,
                    base_store_params=base_store_params, manifest_store=store.manifest_store,
                    after_commit=after_commit)


def shallow_clone(snapshot, target_uri, version=None, *, storage_options=None,
                  base_store_params=None) -> Snapshot:
    """Clone ``snapshot``'s dataset (at ``version``: None = the snapshot's version, an int, or
    a tag) to ``target_uri``; the clone's snapshot. Storage options default to the source's."""
    target_uri = normalize_uri(target_uri)
    if normalize_uri(snapshot.uri) == target_uri:
        raise DatasetExistsError(f"cannot clone {snapshot.uri} onto itself")
    src = snapshot if version is None else snapshot.at(version)
    if storage_options is None:
        storage_options = snapshot.storage_options
    if base_store_params is None:
        base_store_params = snapshot.base_store_params
    return clone_version(src, target_uri, ref_name=src.branch, storage_options=storage_options,
                         base_store_params=base_store_params,
                         manifest_store=snapshot.manifest_store,
                         after_commit=snapshot.after_commit)
