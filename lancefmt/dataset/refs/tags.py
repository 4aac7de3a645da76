"""``Dataset.tags``: named versions in ``_refs/tags/{name}.json`` (the JSON pylance 14 writes).

Tags live at the dataset root for every branch; a tag made from a branch's Dataset records that
branch (``"branch": "feat/x"``), as pylance does.
"""
from __future__ import annotations

from ...errors import InvalidArgumentError
from ...table.refs import branch_uri, create_tag, list_tags, read_tag, tag_uri
from ...table.versions import locate_manifest
from ..core.view import View


class Tags:
    """``Dataset.tags`` (pylance's ``Tags``) of the dataset a view shows."""

    def __init__(self, view: View):
        self._view = view
        self._root = view.snapshot.root

    def list(self) -> dict:
        """``{name: {"version": int, "branch": str|None, "manifest_size": int|None}}``."""
        out = {}
        for name, tag in list_tags(self._root, store=self._view.snapshot.store).items():
            out[name] = {"version": tag.version, "branch": tag.branch,
                         "manifest_size": tag.manifest_size}
        return out

    def list_ordered(self, order: str | None = None) -> list:
        """``[(name, contents)]`` by version, newest first (``order="asc"``: oldest first);
        tags of one version by name."""
        if order not in (None, "asc", "desc"):
            raise InvalidArgumentError(f"order must be 'asc' or 'desc', not {order!r}")
        items = sorted(self.list().items(), key=lambda kv: (kv[1]["version"], kv[0]))
        return items if order == "asc" else items[::-1]

    def get_version(self, name: str) -> int:
        return read_tag(self._root, name, store=self._view.snapshot.store).version

    def create(self, name: str, version: int | None = None, branch: str | None = None) -> None:
        """Tag ``version`` (default: the version shown) of ``branch`` (default: the branch of
        this Dataset; ``"main"`` for the main branch)."""
        version = self._view.snapshot.version if version is None else int(version)
        branch = self._view.snapshot.branch if branch is None else (None if branch == "main" else branch)
        uri = self._root if branch is None else branch_uri(self._root, branch)
        loc = locate_manifest(uri, version, store=self._view.snapshot.store)
        create_tag(self._root, name, version, manifest_size=loc.size, branch=branch,
                   store=self._view.snapshot.store)

    def delete(self, name: str) -> None:
        uri = tag_uri(self._root, name)
        if not self._view.snapshot.store.exists(uri):
            raise InvalidArgumentError(f"no tag {name!r}")
        self._view.snapshot.store.delete(uri)
