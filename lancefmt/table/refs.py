"""Tags and branches (``_refs/``), read side, plus a pylance-compatible tag writer.

* ``_refs/tags/{name}.json`` - pretty-printed JSON (2-space indent) with camelCase keys, as
  pylance 14.0.2 writes it::

      {"branch": null, "version": 2, "createdAt": "<RFC 3339, Z>", "updatedAt": "...",
       "manifestSize": 663, "metadata": {}}

  Older files with only ``branch``/``version``/``manifestSize`` are read too. Tags always live at
  the dataset root, also for versions of a branch (then ``branch`` names it).
* ``_refs/branches/{name}.json`` - a ``/`` in the branch name is stored as ``%2F`` in the file
  name; the branch's own dataset lives under ``tree/{name}/`` (with real sub-directories).
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from ..errors import CorruptFileError, DatasetNotFoundError, InvalidArgumentError
from ..io import open_store
from ..io.uri import child
from .naming import BRANCHES_DIR, TAGS_DIR, TREE_DIR

_REF_CHARS = re.compile(r"^[A-Za-z0-9._-]+$")
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$")


# -- timestamps as chrono writes them ---------------------------------------------------------

def format_rfc3339(ns: int) -> str:
    """Nanoseconds since the epoch as chrono's ``DateTime<Utc>`` serializes them: seconds, then
    a fraction of 3, 6 or 9 digits only when non-zero, then ``Z``."""
    secs, frac = divmod(int(ns), 10**9)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    if frac == 0:
        return base + "Z"
    if frac % 10**6 == 0:
        return f"{base}.{frac // 10**6:03d}Z"
    if frac % 10**3 == 0:
        return f"{base}.{frac // 10**3:06d}Z"
    return f"{base}.{frac:09d}Z"


def parse_rfc3339(text: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 timestamp (ValueError if malformed)."""
    import calendar

    m = _RFC3339.match(text)
    if not m:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    frac = int((m.group(7) or "0").ljust(9, "0"))
    secs = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    tz = m.group(8)
    if tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        secs -= sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    return secs * 10**9 + frac


# -- tags -------------------------------------------------------------------------------------

@dataclass
class Tag:
    """One tag: the version it names (on ``branch``, None = main) and its bookkeeping."""

    name: str
    version: int
    branch: str | None = None
    created_at: int | None = None      # ns since the epoch
    updated_at: int | None = None
    manifest_size: int | None = None   # bytes of the tagged manifest (saves a HEAD request)
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The pylance ``tags.list()`` shape (without datetime objects)."""
        return {"branch": self.branch, "version": self.version, "manifest_size": self.manifest_size,
                "created_at": self.created_at, "updated_at": self.updated_at,
                "metadata": dict(self.metadata)}


def check_tag_name(name: str) -> str:
    """Lance's tag name rules; :class:`InvalidArgumentError` otherwise."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError("tag name must be a non-empty string")
    if (not _REF_CHARS.match(name) or name.startswith(".") or name.endswith(".")
            or name.endswith(".lock") or ".." in name):
        raise InvalidArgumentError(
            f"invalid tag name {name!r}: use letters, digits, '.', '_' and '-', not starting or "
            f"ending with '.', without '..', not ending with '.lock'")
    return name


def tag_uri(dataset_uri: str, name: str) -> str:
    return child(dataset_uri, TAGS_DIR, check_tag_name(name) + ".json")


def _opt_int(obj, key, path):
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise CorruptFileError(f"{key} must be a non-negative integer, got {v!r}", path)
    return v


def _opt_time(obj, key, path):
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int)):  # 1e999, lists, objects...
        raise CorruptFileError(f"{key} is not a timestamp: {v!r}", path)
    try:
        return parse_rfc3339(v) if isinstance(v, str) else int(v)
    except (ValueError, TypeError, OverflowError):
        raise CorruptFileError(f"{key} is not a timestamp: {v!r}", path) from None


def _json(data: bytes, path):
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptFileError(f"not valid JSON: {e}", path) from None
    except RecursionError:
        raise CorruptFileError("JSON nested too deeply", path) from None
    if not isinstance(obj, dict):
        raise CorruptFileError("expected a JSON object", path)
    return obj


def decode_tag(name: str, data: bytes, path=None) -> Tag:
    obj = _json(data, path)
    version = _opt_int(obj, "version", path)
    if version is None:
        raise CorruptFileError("tag has no version", path)
    branch = obj.get("branch")
    if branch is not None and not isinstance(branch, str):
        raise CorruptFileError(f"branch must be a string or null, got {branch!r}", path)
    metadata = obj.get("metadata")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise CorruptFileError("metadata must be an object", path)
    return Tag(name, version, branch, _opt_time(obj, "createdAt", path),
               _opt_time(obj, "updatedAt", path), _opt_int(obj, "manifestSize", path), metadata)


def encode_tag(tag: Tag) -> bytes:
    """A tag file byte-for-byte as pylance 14.0.2 writes it."""
    obj = {"branch": tag.branch, "version": tag.version}
    if tag.created_at is not None:
        obj["createdAt"] = format_rfc3339(tag.created_at)
    if tag.updated_at is not None:
        obj["updatedAt"] = format_rfc3339(tag.updated_at)
    obj["manifestSize"] = tag.manifest_size
    obj["metadata"] = tag.metadata
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


def list_tags(dataset_uri: str, *, store=None, storage_options=None) -> dict[str, Tag]:
    """Every tag of the dataset, by name (sorted)."""
    store = store or open_store(dataset_uri, storage_options)
    return _list_refs(store, child(dataset_uri, TAGS_DIR), lambda stem: stem, decode_tag)


def _list_refs(store, directory: str, name_of, decode) -> dict:
    """The refs stored as ``<name>.json`` files in ``directory``, decoded, by name (sorted)."""
    out = {}
    for info in store.list(directory):
        if info.is_dir or not info.name.endswith(".json"):
            continue
        name = name_of(info.name[:-5])
        out[name] = decode(name, store.read(info.uri), info.uri)
    return dict(sorted(out.items()))


def _read_ref(store, uri: str, what: str, decode):
    """The ref stored at ``uri``; :class:`DatasetNotFoundError` naming ``what`` if missing."""
    try:
        data = store.read(uri)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise DatasetNotFoundError(what) from None
    return decode(data, uri)


def read_tag(dataset_uri: str, name: str, *, store=None, storage_options=None) -> Tag:
    """The tag ``name``; :class:`DatasetNotFoundError` if there is no such tag."""
    store = store or open_store(dataset_uri, storage_options)
    return _read_ref(store, tag_uri(dataset_uri, name), f"dataset {dataset_uri} has no tag {name!r}",
                     lambda data, uri: decode_tag(name, data, uri))


def create_tag(dataset_uri: str, name: str, version: int, *, manifest_size: int,
               branch: str | None = None, store=None, storage_options=None,
               now_ns: int | None = None) -> Tag:
    """Write a new tag file (refuses to replace an existing tag). The caller checks that the
    version exists and passes its manifest's size, as pylance records it."""
    store = store or open_store(dataset_uri, storage_options)
    now = time.time_ns() if now_ns is None else int(now_ns)
    tag = Tag(check_tag_name(name), int(version), branch, now, now, int(manifest_size), {})
    if not store.put_if_absent(tag_uri(dataset_uri, name), encode_tag(tag)):
        raise InvalidArgumentError(f"tag {name!r} already exists")
    return tag


# -- branches ---------------------------------------------------------------------------------

@dataclass
class Branch:
    """One branch: where it was forked from and its bookkeeping."""

    name: str
    parent_branch: str | None
    parent_version: int
    create_at: int | None = None       # unix seconds
    manifest_size: int | None = None
    metadata: dict = field(default_factory=dict)
    identifier: dict | None = None     # pylance 14: {"version_mapping": [[version, uuid hex]]}


def check_branch_name(name: str) -> str:
    """Lance's branch name rules; :class:`InvalidArgumentError` otherwise."""
    if not isinstance(name, str) or not name or name == "main":
        raise InvalidArgumentError(f"invalid branch name {name!r}")
    if name.startswith("/") or name.endswith("/") or "//" in name or ".." in name or "\\" in name \
            or name.endswith(".lock"):
        raise InvalidArgumentError(f"invalid branch name {name!r}")
    for seg in name.split("/"):
        if not _REF_CHARS.match(seg):
            raise InvalidArgumentError(f"invalid branch name {name!r}")
    return name


def branch_uri(dataset_uri: str, name: str) -> str:
    """Root of the branch's own dataset: ``{root}/tree/{name}``."""
    return child(dataset_uri, TREE_DIR, check_branch_name(name))


def branch_file_uri(dataset_uri: str, name: str) -> str:
    return child(dataset_uri, BRANCHES_DIR, quote(check_branch_name(name), safe="") + ".json")


def decode_branch(name: str, data: bytes, path=None) -> Branch:
    obj = _json(data, path)
    parent_version = _opt_int(obj, "parentVersion", path)
    if parent_version is None:
        raise CorruptFileError("branch has no parentVersion", path)
    parent = obj.get("parentBranch")
    if parent is not None and not isinstance(parent, str):
        raise CorruptFileError(f"parentBranch must be a string or null, got {parent!r}", path)
    identifier = obj.get("identifier")
    if identifier is not None and not isinstance(identifier, dict):
        raise CorruptFileError("identifier must be an object", path)
    metadata = obj.get("metadata")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise CorruptFileError("metadata must be an object", path)
    return Branch(name, parent, parent_version, _opt_int(obj, "createAt", path),
                  _opt_int(obj, "manifestSize", path), metadata, identifier)


def list_branches(dataset_uri: str, *, store=None, storage_options=None) -> dict[str, Branch]:
    """Every branch of the dataset, by name (sorted)."""
    store = store or open_store(dataset_uri, storage_options)
    return _list_refs(store, child(dataset_uri, BRANCHES_DIR), unquote, decode_branch)


def read_branch(dataset_uri: str, name: str, *, store=None, storage_options=None) -> Branch:
    store = store or open_store(dataset_uri, storage_options)
    return _read_ref(store, branch_file_uri(dataset_uri, name),
                     f"dataset {dataset_uri} has no branch {name!r}",
                     lambda data, uri: decode_branch(name, data, uri))


# -- version references -----------------------------------------------------------------------

def resolve_version_ref(dataset_uri: str, ref, *, store=None, storage_options=None):
    """``(dataset_uri, version)`` for a version reference: None (latest), an int, or a tag name.
    A tag of a branch version resolves to the branch's dataset under ``tree/``."""
    if ref is None:
        return dataset_uri, None
    if isinstance(ref, str):
        tag = read_tag(dataset_uri, ref, store=store, storage_options=storage_options)
        uri = dataset_uri if tag.branch is None else branch_uri(dataset_uri, tag.branch)
        return uri, tag.version
    if isinstance(ref, bool):
        raise InvalidArgumentError(f"not a version: {ref!r}")
    try:
        version = ref.__index__()
    except AttributeError:
        raise InvalidArgumentError(f"a version is an int or a tag name, got {ref!r}") from None
    if version < 0:
        raise InvalidArgumentError(f"version {version} is negative")
    return dataset_uri, version


def encode_branch(branch: Branch) -> bytes:
    """A branch file as pylance 14.0.2 writes it (key order and 2-space indent included)."""
    obj = {"parentBranch": branch.parent_branch}
    if branch.identifier is not None:
        obj["identifier"] = branch.identifier
    obj["parentVersion"] = branch.parent_version
    obj["createAt"] = branch.create_at
    obj["manifestSize"] = branch.manifest_size
    obj["metadata"] = branch.metadata
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


def write_branch(dataset_uri: str, branch: Branch, *, store=None, storage_options=None) -> bool:
    """Create the branch file; False (nothing written) if the branch already exists."""
    store = store or open_store(dataset_uri, storage_options)
    return store.put_if_absent(branch_file_uri(dataset_uri, branch.name), encode_branch(branch))


def version_mapping(branch: Branch | None) -> list:
    """The lineage pylance 14 records: ``[[version, uuid hex], ...]`` from main to ``branch``."""
    if branch is None or not branch.identifier:
        return []
    mapping = branch.identifier.get("version_mapping") or []
    if not isinstance(mapping, list) or not all(
            isinstance(m, list) and len(m) == 2 and isinstance(m[0], int)
            and not isinstance(m[0], bool) and isinstance(m[1], str) for m in mapping):
        raise CorruptFileError(f"branch {branch.name!r} has a malformed version_mapping "
                               f"(expected [[version, uuid], ...])")
    return [list(m) for m in mapping]
