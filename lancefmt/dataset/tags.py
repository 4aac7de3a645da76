"""``Dataset.tags``: named versions in ``_refs/tags/{name}.json`` (the JSON pylance 14 writes)."""
from __future__ import annotations

from ..errors import InvalidArgumentError
from ..table.refs import create_tag, list_tags, read_tag, tag_uri
from ..table.versions import locate_manifest


class Tags:
    def __init__(self, ds):
        self._ds = ds

    def list(self) -> dict:
        """``{name: {"version": int, "branch": str|None, "manifest_size": int|None}}``."""
        out = {}
        for name, tag in list_tags(self._ds.uri, store=self._ds._store).items():
            out[name] = {"version": tag.version, "branch": tag.branch,
                         "manifest_size": tag.manifest_size}
        return out

    def get_version(self, name: str) -> int:
        return read_tag(self._ds.uri, name, store=self._ds._store).version

    def create(self, name: str, version: int | None = None) -> None:
        version = self._ds.version if version is None else int(version)
        loc = locate_manifest(self._ds.uri, version, store=self._ds._store)
        create_tag(self._ds.uri, name, version, manifest_size=loc.size, store=self._ds._store)

    def delete(self, name: str) -> None:
        uri = tag_uri(self._ds.uri, name)
        if not self._ds._store.exists(uri):
            raise InvalidArgumentError(f"no tag {name!r}")
        self._ds._store.delete(uri)
