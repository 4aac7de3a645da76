"""Multi-base datasets: adding and relocating base paths, per-base storage options, and the
storage prefixes one version touches.

* ``add_bases`` commits Lance's ``UpdateBases`` (op 114) exactly as pylance 14 does: new bases
  travel with id 0 (unless the caller chose one) and the manifest build gives them
  ``max(id) + 1``; a name or path already in use is refused.
* ``update_bases`` relocates existing bases (hot/cold re-tiering, moving a bucket, failing one
  region over to its replica): a new version whose only change is ``base_paths``, recorded as an
  ``UpdateBases`` carrying each changed BasePath under its existing id (see
  :class:`lancefmt.table.transaction.UpdateBases`). No data, deletion or index file is touched.
* Per-base storage options (a bucket may need other credentials or another endpoint):
  ``base_store_params={key: options}`` next to ``storage_options``, as pylance's
  ``base_store_params``. A key is a base's URI (as stored or resolved), its name, or its id; the
  options are laid over ``storage_options`` for files under that base. Keys that name no base
  of the version at hand are ignored (they may belong to another version).
"""
from __future__ import annotations

from dataclasses import dataclass

from .._proto import table_pb2
from ..errors import InvalidArgumentError
from ..io.uri import check_base_uri, has_scheme
from ..table.base_paths import BasePath, BasePathResolver, resolve_base_uri
from ..table.transaction import UpdateBases


def _is_under(uri: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/")
    return uri == prefix or uri.startswith(prefix + "/")


class BaseOptions:
    """Which storage options a file URI (or a base) is read and written with."""

    def __init__(self, resolver: BasePathResolver, storage_options=None, base_store_params=None):
        self.storage_options = dict(storage_options) if storage_options else None
        self._prefixes: list[tuple[str, dict]] = []
        by_key = {}
        for b in resolver.bases.values():
            by_key.setdefault(b.id, b)
            if b.name is not None:
                by_key.setdefault(b.name, b)
            by_key.setdefault(b.path, b)
            by_key.setdefault(resolve_base_uri(b.path), b)
        for key, options in (base_store_params or {}).items():
            if options is None:
                continue
            if not isinstance(options, dict):
                raise InvalidArgumentError(f"base_store_params[{key!r}] must be a dict of options")
            b = by_key.get(key)
            if b is None and isinstance(key, str) and key.isdigit():
                b = by_key.get(int(key))
            if b is not None:
                prefix = resolver.base_uri(b.id)
            elif isinstance(key, str) and (has_scheme(key) or key.startswith("/")):
                prefix = resolve_base_uri(key)
            else:
                continue
            self._prefixes.append((prefix, dict(options)))
        # Longest prefix first: a base nested below another (or below the root) wins.
        self._prefixes.sort(key=lambda p: len(p[0]), reverse=True)

    def for_uri(self, uri: str) -> dict | None:
        for prefix, options in self._prefixes:
            if _is_under(uri, prefix):
                return {**(self.storage_options or {}), **options}
        return self.storage_options


def base_pb(b: BasePath, id: int | None = None) -> table_pb2.BasePath:
    """The protobuf of ``b`` (``id`` overrides; a missing id is sent as 0 = "assign")."""
    check_base_uri(b.path)
    pb = table_pb2.BasePath(id=b.id if id is None and b.id is not None else (id or 0),
                            is_dataset_root=b.is_dataset_root, path=b.path)
    if b.name is not None:
        pb.name = b.name
    return pb


def add_bases(ds, bases, *, transaction_properties=None):
    """Commit a new version of ``ds`` with ``bases`` (``BasePath``s) registered."""
    from .write import _bases_of

    new = [base_pb(b) for b in _bases_of(bases)]
    if not new:
        raise InvalidArgumentError("add_bases needs at least one BasePath")
    return ds._commit(UpdateBases(new), transaction_properties=transaction_properties)


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


def update_bases(ds, changes: dict, *, transaction_properties=None):
    """Commit a new version of ``ds`` whose only change is the paths of some bases."""
    new = relocation(ds.base_paths, dict(changes))
    return ds._commit(UpdateBases(new, relocate=True), transaction_properties=transaction_properties)


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


def storage_prefixes(ds) -> list[StoragePrefix]:
    """The distinct directories the version's files live in (from the columnar fragment view:
    no object per fragment), plus the dataset root (manifests and transactions)."""
    import numpy as np

    resolver = ds._ctx.resolver
    table = ds.fragment_table
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
    for idx in ds.manifest_file.indices:
        add("indices", idx.base_id if idx.HasField("base_id") else None, 1)
    out = []
    for (kind, base_id), c in counts.items():
        base = resolver.base(base_id)
        prefix = {"root": resolver.base_uri, "data": resolver.data_dir,
                  "deletions": resolver.deletion_dir, "indices": resolver.index_root}[kind](base_id)
        if kind == "root":
            prefix = ds.uri
        out.append(StoragePrefix(prefix, kind, base_id, base.name if base else None, c))
    out.sort(key=lambda p: (p.prefix, p.kind))
    return out
