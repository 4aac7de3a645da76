"""Base paths: where a multi-base dataset's files live, and how a file reference is resolved.

A manifest lists ``BasePath{id, name, is_dataset_root, path}`` entries; data files, deletion
files and indices carry an optional ``base_id``. Resolution has two steps (storage-layout spec,
Lance ``data_file_dir``):

1. the base: no ``base_id`` -> the dataset root (itself a dataset root); otherwise the entry with
   that id (an unknown id is a corrupt manifest);
2. the file: a dataset-root base puts files under ``data/``, ``_deletions/`` and ``_indices/``;
   any other base holds the files directly (``{base}/{name}``).

How pylance 14.0.2 stores and resolves the ``path`` string (checked by experiment):

* it stores exactly what it was given: ``DatasetBasePath("relb")`` is stored as ``"relb"``,
  ``"file:///x"`` as ``"file:///x"``, and a shallow clone of a dataset opened as ``"src"``
  records ``path="src"``;
* a path without a scheme that is not absolute is resolved against the **current working
  directory of the process reading the dataset** (not against the dataset root): files written
  to base ``"relb"`` from ``/a`` land in ``/a/relb/`` and reading from ``/b`` looks in
  ``/b/relb/``. :func:`resolve_base_uri` does the same, so lancefmt and pylance agree in the same
  process; datasets meant to be moved should register absolute base URIs.
* base ids given by the caller are kept; the others get the smallest unused id starting at 1
  (:func:`assign_base_ids`); ``add_bases`` gives ``max(ids) + 1``; a shallow clone adds its
  source under the smallest unused id counting from 0 (pylance 14.0.2, by experiment).
"""
from __future__ import annotations

import os

from .._proto import table_pb2
from ..errors import CorruptFileError, InvalidArgumentError
from ..io.uri import check_base_uri, check_relative, child, has_scheme, normalize_uri
from .naming import DATA_DIR, DELETIONS_DIR, INDICES_DIR


class BasePath:
    """One storage location of a dataset (mirrors the BasePath proto and pylance's
    ``DatasetBasePath``). ``id`` is None until a commit assigns one."""

    __slots__ = ("path", "name", "is_dataset_root", "id")

    def __init__(self, path, name: str | None = None, is_dataset_root: bool = False,
                 id: int | None = None):
        path = os.fspath(path)
        if not isinstance(path, str) or not path:
            raise InvalidArgumentError("a base path needs a non-empty path")
        if id is not None:
            id = int(id)
            if not 0 <= id <= 0xFFFFFFFF:
                raise InvalidArgumentError(f"base path id {id} is outside 0..2**32-1")
        self.path = path
        self.name = name
        self.is_dataset_root = bool(is_dataset_root)
        self.id = id

    @classmethod
    def from_pb(cls, pb: "table_pb2.BasePath") -> "BasePath":
        return cls(pb.path, pb.name if pb.HasField("name") else None, pb.is_dataset_root, pb.id)

    def to_pb(self) -> "table_pb2.BasePath":
        if self.id is None:
            raise InvalidArgumentError(f"base path {self.path!r} has no id yet")
        pb = table_pb2.BasePath(id=self.id, is_dataset_root=self.is_dataset_root, path=self.path)
        if self.name is not None:
            pb.name = self.name
        return pb

    def with_id(self, id: int) -> "BasePath":
        return BasePath(self.path, self.name, self.is_dataset_root, id)

    def _key(self):
        return (self.path, self.name, self.is_dataset_root, self.id)

    def __eq__(self, other):
        return isinstance(other, BasePath) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __reduce__(self):
        return (BasePath, self._key())

    def __repr__(self):
        return (f"BasePath(path={self.path!r}, name={self.name!r}, "
                f"is_dataset_root={self.is_dataset_root}, id={self.id})")


def assign_base_ids(existing_ids, new_bases) -> list[BasePath]:
    """Give every base in ``new_bases`` without an id the smallest unused id >= 1 (as pylance
    does for ``initial_bases`` and ``add_bases``); ids already given must not collide."""
    used = {int(i) for i in existing_ids}
    out = []
    for b in new_bases:
        if b.id is not None:
            if b.id in used:
                raise InvalidArgumentError(f"base path id {b.id} is already used")
            used.add(b.id)
    nxt = 1
    for b in new_bases:
        if b.id is None:
            while nxt in used:
                nxt += 1
            b = b.with_id(nxt)
            used.add(nxt)
        out.append(b)
    return out


def resolve_base_uri(path: str) -> str:
    """The URI a stored base ``path`` points at: URIs and absolute paths as they are; a relative
    path against the current working directory (pylance's behaviour). Paths with ``.``/``..``
    segments raise :class:`~lancefmt.InvalidPathError`."""
    check_base_uri(path)
    if has_scheme(path) or os.path.isabs(path):
        return normalize_uri(path)
    return normalize_uri(os.path.abspath(path))


class BasePathResolver:
    """Resolves file references of one manifest to URIs.

    ``base_paths``: the manifest's ``base_paths`` (protobuf messages), BasePath objects, or a
    ``dict`` id -> BasePath. ``manifest_path`` names the manifest in errors.
    """

    def __init__(self, dataset_uri: str, base_paths=(), manifest_path: str | None = None):
        self.dataset_uri = normalize_uri(dataset_uri)
        self.manifest_path = manifest_path
        if isinstance(base_paths, dict):
            base_paths = base_paths.values()
        bases: dict[int, BasePath] = {}
        for b in base_paths:
            if not isinstance(b, BasePath):
                b = BasePath.from_pb(b)
            if b.id is None:
                raise InvalidArgumentError(f"base path {b.path!r} has no id")
            if b.id in bases:
                raise CorruptFileError(f"base path id {b.id} appears twice", manifest_path)
            bases[b.id] = b
        self.bases = bases
        self._roots: dict = {}

    def base(self, base_id) -> BasePath | None:
        """The BasePath for ``base_id`` (None for the dataset root)."""
        if base_id is None or base_id < 0:
            return None
        b = self.bases.get(int(base_id))
        if b is None:
            raise CorruptFileError(f"a file refers to base id {base_id}, which the manifest "
                                   f"does not define", self.manifest_path)
        return b

    def _root(self, base_id, subdir: str) -> str:
        key = (-1 if base_id is None or base_id < 0 else int(base_id), subdir)
        root = self._roots.get(key)
        if root is None:
            b = self.base(base_id)
            if b is None:
                root = child(self.dataset_uri, subdir)
            else:
                uri = resolve_base_uri(b.path)
                root = child(uri, subdir) if b.is_dataset_root else uri
            self._roots[key] = root
        return root

    def base_uri(self, base_id=None) -> str:
        """The resolved location of the base itself (the dataset root for None)."""
        b = self.base(base_id)
        return self.dataset_uri if b is None else resolve_base_uri(b.path)

    def data_dir(self, base_id=None) -> str:
        return self._root(base_id, DATA_DIR)

    def deletion_dir(self, base_id=None) -> str:
        return self._root(base_id, DELETIONS_DIR)

    def index_root(self, base_id=None) -> str:
        return self._root(base_id, INDICES_DIR)

    def data_file_uri(self, path: str, base_id=None) -> str:
        """URI of the data file ``path`` (``DataFile.path``) stored in base ``base_id``."""
        return child(self.data_dir(base_id), check_relative(path, "data file path"))

    def deletion_file_uri(self, name: str, base_id=None) -> str:
        """URI of the deletion file ``name`` (see ``naming.deletion_file_name``)."""
        return child(self.deletion_dir(base_id), check_relative(name, "deletion file name"))

    def index_dir_uri(self, index_uuid: str, base_id=None) -> str:
        """URI of the directory holding the files of index ``index_uuid``."""
        return child(self.index_root(base_id), check_relative(str(index_uuid), "index directory"))

    def data_file_uris(self, paths, base_ids) -> list[str]:
        """Vectorised :meth:`data_file_uri` (``base_ids``: ints, -1 or None = dataset root)."""
        out = []
        for p, b in zip(paths, base_ids):
            out.append(child(self.data_dir(None if b is None or b < 0 else int(b)),
                             check_relative(p, "data file path")))
        return out
