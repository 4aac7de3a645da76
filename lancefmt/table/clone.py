"""The first manifest of a shallow clone (or of a branch), as Lance's ``Manifest::shallow_clone``
and ``do_commit_new_dataset`` build it. Pure data: no storage access.

* the source is registered as a dataset-root BasePath with the smallest id not in use,
  counting from 0 (pylance 14.0.2: a source with base 1 gets its clone base 0; the 1.0.0-beta
  snapshot used ``max(id) + 1``), named after the source branch (``ref_name``; None for main
  and for clones made from a tag or version);
* every data and deletion file without a ``base_id`` gets that id (files already in a base keep
  theirs), and every index gets it;
* the version number of the source is kept; ``branch`` is the new branch (or cleared);
  ``tag``, feature flags, index/transaction sections are reset and recomputed on encode.
"""
from __future__ import annotations

from .._proto import table_pb2
from . import feature_flags
from .manifest_builder import BuildOptions, finish_manifest
from .transaction import Clone


def clone_base_id(manifest) -> int:
    used = {b.id for b in manifest.base_paths}
    i = 0
    while i in used:
        i += 1
    return i


def build_clone_manifest(source: table_pb2.Manifest, source_indices, op: Clone, *,
                         transaction_file: str, options: BuildOptions | None = None):
    """``(manifest, indices)`` of the clone described by ``op`` from the source manifest."""
    manifest = table_pb2.Manifest()
    manifest.CopyFrom(source)
    base_id = clone_base_id(source)
    for frag in manifest.fragments:
        for df in frag.files:
            if not df.HasField("base_id"):
                df.base_id = base_id
        if frag.HasField("deletion_file") and not frag.deletion_file.HasField("base_id"):
            frag.deletion_file.base_id = base_id
    base = manifest.base_paths.add(id=base_id, is_dataset_root=True, path=op.ref_path)
    if op.ref_name is not None:
        base.name = op.ref_name
    if op.branch_name is not None:
        manifest.branch = op.branch_name
    else:
        manifest.ClearField("branch")
    manifest.tag = ""
    indices = []
    for idx in source_indices:
        c = table_pb2.IndexMetadata()
        c.CopyFrom(idx)
        c.base_id = base_id
        indices.append(c)
    stable = bool(source.reader_feature_flags & feature_flags.FLAG_STABLE_ROW_IDS)
    manifest = finish_manifest(manifest, source, source.version, transaction_file,
                       options or BuildOptions(), stable)
    return manifest, indices
