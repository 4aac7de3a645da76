"""Multi-base datasets: adding and relocating base paths, and the storage prefixes one
version touches.

* ``add_bases`` commits Lance's ``UpdateBases`` (op 114) exactly as pylance 14 does: new bases
  travel with id 0 (unless the caller chose one) and the manifest build gives them
  ``max(id) + 1``; a name or path already in use is refused.
* ``update_bases`` relocates existing bases (hot/cold re-tiering, moving a bucket, failing one
  region over to its replica): a new version whose only change is ``base_paths``, recorded as an
  ``UpdateBases`` carrying each changed BasePath under its existing id (see
  :class:`lancefmt.table.transaction.UpdateBases`). No data, deletion or index file is touched.
* per-base storage options are :mod:`lancefmt.dataset.core.base_options`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._proto import table_pb2
from ...errors import InvalidArgumentError
from ...io.uri import check_base_uri
from ...table.base_paths import BasePath
from ...table.transaction import UpdateBases
from ..core.base_options import as_base_paths


def base_pb(b: BasePath, id: int | None = None) -> table_pb2.BasePath:
    """The protobuf of ``b`` (``id`` overrides; a missing id is sent as 0 = "assign")."""
    check_base_uri(b.path)
    pb = table_pb2.BasePath(id=b.id if id is None and b.id is not None else (id or 0),
                            is_dataset_root=b.is_dataset_root, path=b.path)
    if b.name is not None:
        pb.name = b.name
    return pb


def add_bases(snapshot, bases, *, transaction_properties=None):
    """Commit a new version with ``bases`` (``BasePath``s) registered; its snapshot."""
    new = [base_pb(b) for b in as_base_paths(bases)]
    if not new:
        raise InvalidArgumentError("add_bases needs at least one BasePath")
    return snapshot.commit(UpdateBases(new), transaction_properties=transaction_properties)


def find_base(bases: dict, key) -> BasePath:
    """The base of ``bases`` (id -> BasePath) named by ``key``: an id (int or digits) or a name."""
    if isinstance(key, bool):
        raise InvalidArgumentError(f"not a base id or name: {key!r}")
    if isinstance(key, int):
        if key in bases:
            return bases[key]
    elif isinstance(key, str):
        named = [b for b in bases.values() if b.name == key]
        if named:
            return named[0]
        if key.isdigit() and int(key) in bases:
            return bases[int(key)]
    raise InvalidArgumentError(f"the dataset has no base {key!r} (bases: "
                               f"{[(b.id, b.name, b.path) for b in bases.values()]})")


def relocation(bases: dict, changes: dict) -> list:
    """The ``BasePath`` protobufs (existing ids) for ``{id_or_name: new path | BasePath}``."""
    out = []
    seen = set()
    for key, target in changes.items():
        b = find_base(bases, key)
        if b.id in seen:
            raise InvalidArgumentError(f"base {b.id} is named twice in the update")
        seen.add(b.id)
        if isinstance(target, BasePath):
            moved = BasePath(target.path, target.name if target.name is not None else b.name,
                             target.is_dataset_root, b.id)
        elif isinstance(target, str):
            moved = BasePath(target, b.name, b.is_dataset_root, b.id)
        else:
            raise InvalidArgumentError(f"new location of base {key!r} must be a path string or "
                                       f"a BasePath, not {type(target).__name__}")
        out.append(base_pb(moved, b.id))
    if not out:
        raise InvalidArgumentError("update_bases needs at least one base to change")
    return out


def update_bases(snapshot, changes: dict, *, transaction_properties=None):
    """Commit a new version whose only change is the paths of some bases; its snapshot."""
    new = relocation(snapshot.base_paths, dict(changes))
    return snapshot.commit(UpdateBases(new, relocate=True),
                           transaction_properties=transaction_properties)


@dataclass
class StoragePrefix:
    """One storage location a version reads from: what credential vending has to cover."""

    prefix: str                 # resolved URI of the directory
    kind: str                   # "root" | "data" | "deletions" | "indices"
    base_id: int | None         # None = the dataset root
    base_name: str | None
    files: int                  # referenced files below it

    def to_dict(self) -> dict:
        return {"prefix": self.prefix, "kind": self.kind, "base_id": self.base_id,
                "base_name": self.base_name, "files": self.files}


def storage_prefixes(snapshot) -> list[StoragePrefix]:
    """The distinct directories the version's files live in (from the columnar fragment view:
    no object per fragment), plus the dataset root (manifests and transactions)."""
    resolver = snapshot.ctx.resolver
    table = snapshot.fragment_table
    counts: dict = {}

    def add(kind, base_id, n):
        key = (kind, base_id)
        counts[key] = counts.get(key, 0) + int(n)

    add("root", None, 0)
    ids, n = np.unique(table.file_base_id, return_counts=True)
    for b, c in zip(ids.tolist(), n.tolist()):
        add("data", None if b < 0 else b, c)
    dels = table.deletion_base_id[table.has_deletion_file]
    ids, n = np.unique(dels, return_counts=True)
    for b, c in zip(ids.tolist(), n.tolist()):
        add("deletions", None if b < 0 else b, c)
    for idx in snapshot.manifest_file.indices:
        add("indices", idx.base_id if idx.HasField("base_id") else None, 1)
    out = []
    for (kind, base_id), c in counts.items():
        base = resolver.base(base_id)
        prefix = {"root": resolver.base_uri, "data": resolver.data_dir,
                  "deletions": resolver.deletion_dir, "indices": resolver.index_root}[kind](base_id)
        if kind == "root":
            prefix = snapshot.uri
        out.append(StoragePrefix(prefix, kind, base_id, base.name if base else None, c))
    out.sort(key=lambda p: (p.prefix, p.kind))
    return out
