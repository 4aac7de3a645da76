"""Per-base storage options and coercion of user-given base paths.

A multi-base dataset may keep each base in another bucket that needs other credentials or
another endpoint: ``base_store_params={key: options}`` next to ``storage_options``, as
pylance's ``base_store_params``. A key is a base's URI (as stored or resolved), its name, or
its id; the options are laid over ``storage_options`` for files under that base. Keys that
name no base of the version at hand are ignored (they may belong to another version).
"""
from __future__ import annotations

from ...errors import InvalidArgumentError
from ...io.uri import has_scheme
from ...table.base_paths import BasePath, BasePathResolver, resolve_base_uri


def is_under(uri: str, prefix: str) -> bool:
    """``uri`` is ``prefix`` or lies below it."""
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
            if is_under(uri, prefix):
                return {**(self.storage_options or {}), **options}
        return self.storage_options


def as_base_paths(bases) -> list[BasePath]:
    """``BasePath``s from what users pass: ours, pylance's ``DatasetBasePath``, or protobufs."""
    out = []
    for b in bases or []:
        if isinstance(b, BasePath):
            out.append(b)
        elif hasattr(b, "path") and hasattr(b, "is_dataset_root"):
            out.append(BasePath(b.path, getattr(b, "name", None) or None, bool(b.is_dataset_root),
                                getattr(b, "id", None)))
        else:
            raise InvalidArgumentError(f"not a BasePath: {b!r}")
    return out
