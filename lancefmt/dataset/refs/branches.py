"""Branches: ``_refs/branches/{name}.json`` plus the branch's own dataset under
``tree/{name}/``, created as a shallow clone of the source version (pylance 14.0.2 layout).

* the branch's first manifest keeps the source version number and has ``branch = name``; the
  source dataset (main's root, or the parent branch's ``tree/`` directory) becomes a
  dataset-root base named after the source branch (None for main);
* the branch file holds ``parentBranch``, ``parentVersion``, ``createAt`` (unix seconds),
  ``manifestSize`` (of the source manifest), ``metadata`` and pylance 14's
  ``identifier.version_mapping`` lineage (the parent's list plus ``[parentVersion, uuid]``);
* tags live at the dataset root for every branch and name the branch they tag.
"""
from __future__ import annotations

import time
import uuid as _uuid

from ...errors import DatasetExistsError, InvalidArgumentError
from ...table.refs import (
    Branch, branch_file_uri, branch_uri, check_branch_name, list_branches, read_branch,
    version_mapping, write_branch,
)
from ..core.snapshot import Snapshot
from ..core.view import View
from .clone import clone_version


def create_branch(snapshot, name: str, version=None) -> Snapshot:
    """Branch ``name`` from ``snapshot``'s dataset at ``version`` (None = the snapshot's
    version); the branch's first snapshot."""
    check_branch_name(name)
    root = snapshot.root
    store = snapshot.store
    if store.exists(branch_file_uri(root, name)):
        raise DatasetExistsError(f"branch {name!r} already exists")
    src = snapshot if version is None else snapshot.at(version)
    parent = read_branch(root, src.branch, store=store) if src.branch is not None else None
    target = branch_uri(root, name)
    new = clone_version(src, target, ref_name=src.branch, branch_name=name,
                        storage_options=snapshot.storage_options,
                        base_store_params=snapshot.base_store_params,
                        manifest_store=snapshot.manifest_store,
                        after_commit=snapshot.after_commit)
    mapping = version_mapping(parent) + [[src.version, _uuid.uuid4().hex]]
    record = Branch(name, src.branch, src.version, int(time.time()), src.manifest_file.size, {},
                    {"version_mapping": mapping})
    if not write_branch(root, record, store=store):
        remove_tree(store, target)
        raise DatasetExistsError(f"branch {name!r} was created concurrently")
    return new


def checkout_branch(snapshot, name: str | None, version=None) -> Snapshot:
    """The latest (or ``version``) of branch ``name``; None or ``"main"`` is the main branch."""
    root = snapshot.root
    if name in (None, "main"):
        uri = root
    else:
        read_branch(root, name, store=snapshot.store)  # DatasetNotFoundError if there is none
        uri = branch_uri(root, name)
    return Snapshot.open(uri, version, storage_options=snapshot.storage_options,
                         base_store_params=snapshot.base_store_params,
                         manifest_store=snapshot.manifest_store,
                         after_commit=snapshot.after_commit)


def remove_tree(store, uri: str, keep=()) -> int:
    """Delete every file below ``uri`` except those below a directory in ``keep``."""
    n = 0
    for info in list(store.walk(uri)):
        if any(info.uri.startswith(k.rstrip("/") + "/") for k in keep):
            continue
        store.delete(info.uri)
        n += 1
    return n


class Branches:
    """``Dataset.branches``: list and delete branches (create with ``Dataset.create_branch``)."""

    def __init__(self, view: View):
        self._view = view
        self._root = view.snapshot.root

    def list(self) -> dict:
        """``{name: {"parent_branch", "parent_version", "create_at", "manifest_size",
        "metadata"}}``, the shape of pylance's ``branches.list()``."""
        out = {}
        for name, b in list_branches(self._root, store=self._view.snapshot.store).items():
            out[name] = {"parent_branch": b.parent_branch, "parent_version": b.parent_version,
                         "create_at": b.create_at, "manifest_size": b.manifest_size,
                         "metadata": dict(b.metadata)}
        return out

    def delete(self, name: str) -> None:
        """Remove the branch file and the branch's files under ``tree/{name}`` (but not nested
        branches' directories). A branch other branches were forked from is refused."""
        check_branch_name(name)
        store = self._view.snapshot.store
        branches = list_branches(self._root, store=store)
        if name not in branches:
            raise InvalidArgumentError(f"no branch {name!r}")
        children = sorted(n for n, b in branches.items() if b.parent_branch == name)
        if children:
            raise InvalidArgumentError(f"branch {name!r} has child branches {children}; delete "
                                       f"them first")
        target = branch_uri(self._root, name)
        nested = [branch_uri(self._root, n) for n in branches
                  if n != name and n.startswith(name + "/")]
        store.delete(branch_file_uri(self._root, name))
        remove_tree(store, target, keep=nested)
