"""Object stores: the only code in lancefmt that touches storage.

``ObjectStore.for_uri(uri, storage_options)`` returns a store for the URI's scheme. All
methods take full URIs (so a multi-base dataset can mix buckets and credentials freely) and
the store maps them to its own paths.

The one operation the commit protocol depends on is :meth:`ObjectStore.put_if_absent`: it
makes an object visible *whole* and *only if* nothing is there yet, atomically:

* local files: write and fsync a temporary file beside the target, then ``os.link`` it to the
  final name (``link`` fails if the name exists; readers never see a partial file); where hard
  links are refused (some FUSE/SMB mounts), ``renameat2(RENAME_NOREPLACE)`` (:mod:`.local_commit`),
  and where that is missing too, a :class:`~lancefmt.errors.ConditionalPutUnsupportedError`
  asking for an external manifest store;
* ``memory://``: a check and a write under one process-wide lock;
* ``s3://``: a conditional PUT with ``If-None-Match: *`` (:mod:`.s3`; a retried PUT whose
  first response was lost is recognised as ours).

``storage_options`` are pylance's (``aws_endpoint``, ``allow_http``, ``AWS_*`` variables...) or
fsspec's own arguments; :mod:`.options` maps them. Remote failures are retried as pylance
retries them (:mod:`.retry`); what reaches a caller is always a :class:`StorageError`.
"""
from __future__ import annotations

import abc
import errno
import functools
import os
import threading
import uuid as _uuid
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence


from ..errors import InvalidArgumentError, LanceError
from .durable import defer_sync, sync_enabled, wait_durable
from .local_commit import fsync_dir, rename_noreplace, start_writeback
from .options import StoreSettings, env_fingerprint, family, resolve
from .retry import as_storage_error, is_dependency_error
from .uri import split_uri, join_uri

# Store methods whose OS errors become StorageErrors (naming the operation and the object).
_GUARDED = ("read", "read_range", "read_ranges", "read_many", "read_tail", "size", "exists", "list",
            "list_sorted_page", "put", "put_durable",
            "put_if_absent", "delete", "delete_many", "copy", "open_output", "open_input")


def _guard(name: str, fn):
    """``fn`` with its ``OSError``s raised as :class:`StorageError` (``__cause__`` = the OS
    error); LanceErrors (already reported) pass through."""

    @functools.wraps(fn)
    def guarded(self, *args, **kwargs):
        try:
            out = fn(self, *args, **kwargs)
        except LanceError:
            raise
        except Exception as e:  # noqa: BLE001 - a client library's errors become StorageErrors
            if not is_dependency_error(e):
                raise
            raise as_storage_error(e, name, _subject(args)) from e
        if name == "open_output":
            return _GuardedOutput(out, _subject(args))
        return out

    guarded._guarded = True
    return guarded


def _guard_walk(fn):
    @functools.wraps(fn)
    def guarded(self, uri, *args, **kwargs):
        try:
            yield from fn(self, uri, *args, **kwargs)
        except LanceError:
            raise
        except Exception as e:  # noqa: BLE001
            if not is_dependency_error(e):
                raise
            raise as_storage_error(e, "walk", uri) from e

    guarded._guarded = True
    return guarded


def _subject(args) -> str | None:
    if not args:
        return None
    first = args[0]
    if isinstance(first, str):
        return first
    if isinstance(first, (list, tuple)) and first and isinstance(first[0], tuple):
        return ", ".join(sorted({str(r[0]) for r in first})[:3])  # read_many's requests
    try:
        return ", ".join(list(first)[:3]) or None
    except TypeError:
        return repr(first)


class _GuardedOutput:
    """An output stream whose write/close failures (disk full...) are StorageErrors."""

    def __init__(self, inner, uri):
        self._inner, self._uri = inner, uri

    def _call(self, op, *args):
        try:
            return getattr(self._inner, op)(*args)
        except LanceError:
            raise
        except Exception as e:  # noqa: BLE001
            if not is_dependency_error(e):
                raise
            raise as_storage_error(e, op, self._uri) from e

    def write(self, data):
        return self._call("write", data)

    def close(self):
        return self._call("close")

    def close_later(self):
        """Close, letting the last upload finish in the background where the stream can
        (S3, see :mod:`.uploads`); a plain close elsewhere."""
        if hasattr(self._inner, "close_later"):
            return self._call("close_later")
        return self._call("close")

    def tell(self):
        return self._inner.tell()

    def __getattr__(self, name):  # abort/discard/closed...: the inner stream's
        return getattr(self._inner, name)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif hasattr(self._inner, "abort"):
            self._inner.abort()
        elif hasattr(self._inner, "discard"):
            self._inner.discard()


@dataclass(frozen=True)
class FileInfo:
    """One listed object: its URI, base name, size in bytes, whether it is a directory, and its
    last-modified time (seconds since the epoch; None where the store does not say)."""

    uri: str
    name: str
    size: int
    is_dir: bool = False
    mtime: float | None = None


def _freeze(options: dict | None):
    if not options:
        return ()
    return tuple(sorted((k, repr(v)) for k, v in options.items()))


_STORES: dict = {}
_STORES_LOCK = threading.Lock()


class ObjectStore(abc.ABC):
    """Storage behind one URI scheme (and one set of ``storage_options``)."""

    protocol: str = ""
    settings: StoreSettings = StoreSettings()
    # The external manifest store commits and version lookups go through (None: the object
    # store's own put-if-absent); set on a copy by :func:`with_manifest_store`.
    manifest_store = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _GUARDED:
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_guarded", False):
                setattr(cls, name, _guard(name, fn))
        walk = cls.__dict__.get("walk")
        if walk is not None and not getattr(walk, "_guarded", False):
            cls.walk = _guard_walk(walk)

    def __init__(self, protocol: str, storage_options: dict | None = None):
        self.protocol = protocol
        self.storage_options = dict(storage_options or {})

    # -- construction -------------------------------------------------------------------
    @staticmethod
    def for_uri(uri, storage_options: dict | None = None) -> "ObjectStore":
        """The cached store for ``uri``'s scheme, these options and the environment variables
        they may be completed from (a changed ``AWS_ENDPOINT`` gets a new store)."""
        protocol = split_uri(uri).protocol
        key = (protocol, _freeze(storage_options), env_fingerprint(protocol))
        store = _STORES.get(key)
        if store is None:
            with _STORES_LOCK:
                store = _STORES.get(key)
                if store is None:
                    store = _new_store(protocol, storage_options)
                    _STORES[key] = store
        return store

    def __reduce__(self):
        if self.manifest_store is not None:
            return (_rebind, (join_uri(self.protocol, "/"), self.storage_options or None,
                              self.manifest_store))
        return (ObjectStore.for_uri, (join_uri(self.protocol, "/"), self.storage_options or None))

    def _path(self, uri: str) -> str:
        proto, path = split_uri(uri)
        if proto != self.protocol:
            raise LanceError(f"{uri} is not a {self.protocol} URI")
        return path

    def _uri(self, path: str) -> str:
        return join_uri(self.protocol, path)

    # -- the interface (implemented by subclasses) ---------------------------------------
    @abc.abstractmethod
    def read(self, uri: str) -> bytes:
        """Implemented by each store."""

    @abc.abstractmethod
    def read_range(self, uri: str, start: int, length: int) -> bytes:
        """Implemented by each store."""

    def read_ranges(self, uri: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """``read_many`` of ranges of one object."""
        return [self.read_range(uri, s, n) for s, n in ranges]

    def read_many(self, requests: Sequence[tuple[str, int, int]]) -> list[bytes]:
        """The bytes of every ``(uri, start, length)``, in the order asked, each exactly
        ``length`` long unless the object ends first (as ``pread``). Remote stores send the
        whole batch at once: nearby ranges merged, up to ``settings.io_parallelism`` requests
        in flight; local and memory stores read object by object."""
        out: list = [None] * len(requests)
        by_uri: dict = {}
        for i, (uri, start, length) in enumerate(requests):
            by_uri.setdefault(uri, []).append(i)
        for uri, idx in by_uri.items():
            got = self.read_ranges(uri, [(requests[i][1], requests[i][2]) for i in idx])
            for i, data in zip(idx, got):
                out[i] = data
        return out

    @abc.abstractmethod
    def size(self, uri: str) -> int:
        """Implemented by each store."""

    @abc.abstractmethod
    def exists(self, uri: str) -> bool:
        """Implemented by each store."""

    @abc.abstractmethod
    def list(self, uri: str) -> list[FileInfo]:
        """Direct children of the directory/prefix ``uri`` (empty if it does not exist)."""

    def list_sorted_page(self, uri: str, limit: int = 1000):
        """``(files, complete)``: the first ``limit`` files directly under ``uri`` in lexical
        order from one request, and whether that was all of them; None where the store cannot
        (then :meth:`list` is the way). Object stores list lexically, so the newest V2 manifest
        name comes first."""
        return None

    def walk(self, uri: str) -> Iterator[FileInfo]:
        """Every file (not directory) below ``uri``, recursively."""
        for info in self.list(uri):
            if info.is_dir:
                yield from self.walk(info.uri)
            else:
                yield info

    @abc.abstractmethod
    def put(self, uri: str, data: bytes) -> None:
        """Write ``data`` at ``uri``, replacing what is there."""

    def put_durable(self, uri: str, data: bytes) -> None:
        """:meth:`put`, and on stores with a write cache (local disks) flushed to stable storage
        before returning: for manifests committed through an external manifest store."""
        self.put(uri, data)

    @abc.abstractmethod
    def put_if_absent(self, uri: str, data: bytes) -> bool:
        """Atomically create ``uri`` with ``data``; False (and nothing written) if it exists."""

    @abc.abstractmethod
    def delete(self, uri: str, missing_ok: bool = True) -> None:
        """Implemented by each store."""

    def delete_many(self, uris: Iterable[str]) -> None:
        for u in uris:
            self.delete(u)

    # Whether emptied directories stay behind (local disks): see prune_empty_dirs.
    has_dirs = False

    def prune_empty_dirs(self, uri: str, older_than: float | None = None) -> list[str]:
        """Remove the directories at and below ``uri`` that hold no file, deepest first (with
        ``older_than``: only those last modified before it, seconds since the epoch); the URIs
        removed. Object stores have no directories (a prefix goes with its last object)."""
        return []

    def abort_stale_uploads(self, uri: str, before: float, dry_run: bool = False) -> list[str]:
        """Abort the multipart uploads begun below ``uri`` before ``before`` (seconds since the
        epoch) and never completed (a writer killed mid-upload leaves them, invisible and
        billed); the URIs of their objects. Stores without multipart uploads have none."""
        return []

    @abc.abstractmethod
    def copy(self, src: str, dst: str) -> None:
        """Implemented by each store."""

    @abc.abstractmethod
    def open_output(self, uri: str):
        """A writable binary file object; the object appears (whole) when it is closed."""

    @abc.abstractmethod
    def open_input(self, uri: str):
        """A seekable readable binary file object."""

    def read_tail(self, uri: str, n: int, size: int | None = None) -> tuple[bytes, int]:
        """The last ``min(n, size)`` bytes of the object, and its total size."""
        if size is None:
            size = self.size(uri)
        start = max(0, size - n)
        return self.read_range(uri, start, size - start), size


# Store classes of their own for a family of schemes (``"s3"``: :class:`~.s3.S3Store`), filled
# in by those modules when the io package imports them; every other scheme goes through fsspec.
_FAMILY_STORES: dict = {}


def register_family_store(family_name: str, cls) -> None:
    """Serve every scheme of ``family_name`` with ``cls(protocol, storage_options, resolved)``."""
    _FAMILY_STORES[family_name] = cls


def _new_store(protocol: str, storage_options: dict | None) -> ObjectStore:
    resolved = resolve(protocol, storage_options)
    if protocol == "file":
        return LocalStore(storage_options, resolved.settings)
    if protocol == "memory":
        return MemoryStore(storage_options)
    special = _FAMILY_STORES.get(family(protocol))
    if special is not None:
        return special(protocol, storage_options, resolved)
    return FsspecStore(protocol, storage_options, resolved)


def with_manifest_store(store: ObjectStore, manifest_store) -> ObjectStore:
    """A copy of ``store`` whose commits and version lookups use ``manifest_store`` (an
    :class:`~lancefmt.table.external_manifest.ExternalManifestStore`); the cached store itself
    is never changed."""
    if manifest_store is None or store.manifest_store is manifest_store:
        return store
    if isinstance(manifest_store, str):  # a programming error below the dataset layer
        raise TypeError("open_store takes a manifest store object; resolve "
                        f"{manifest_store!r} with table.manifest_stores.as_manifest_store")
    bound = object.__new__(type(store))  # not copy.copy: __reduce__ returns the cached store
    bound.__dict__.update(store.__dict__)
    bound.manifest_store = manifest_store
    return bound


def _rebind(uri, storage_options, manifest_store):
    return with_manifest_store(ObjectStore.for_uri(uri, storage_options), manifest_store)


class LocalStore(ObjectStore):
    """Local file system, with plain ``os`` calls (``pread`` for ranged reads)."""

    has_dirs = True

    def __init__(self, storage_options=None, settings: StoreSettings | None = None):
        super().__init__("file", storage_options)
        if settings is not None:
            self.settings = settings

    def read(self, uri):
        with open(self._path(uri), "rb") as f:
            return f.read()

    def read_range(self, uri, start, length):
        if start < 0 or length < 0:
            raise ValueError("negative range")
        fd = os.open(self._path(uri), os.O_RDONLY)
        try:
            out = os.pread(fd, length, start)
            if len(out) < length:  # pread may return short on some file systems
                parts = [out]
                got = len(out)
                while got < length:
                    more = os.pread(fd, length - got, start + got)
                    if not more:
                        break
                    parts.append(more)
                    got += len(more)
                out = b"".join(parts)
            return out
        finally:
            os.close(fd)

    def read_ranges(self, uri, ranges):
        fd = os.open(self._path(uri), os.O_RDONLY)
        try:
            return [os.pread(fd, n, s) for s, n in ranges]
        finally:
            os.close(fd)

    def read_tail(self, uri, n, size=None):
        fd = os.open(self._path(uri), os.O_RDONLY)
        try:
            if size is None:
                size = os.fstat(fd).st_size
            start = max(0, size - n)
            return os.pread(fd, size - start, start), size
        finally:
            os.close(fd)

    def size(self, uri):
        return os.stat(self._path(uri)).st_size

    def exists(self, uri):
        return os.path.exists(self._path(uri))

    def list(self, uri):
        path = self._path(uri)
        out = []
        try:
            it = os.scandir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        with it:
            for e in it:
                try:  # an entry may vanish between readdir and stat (a concurrent writer's temp file)
                    is_dir = e.is_dir()
                    st = None if is_dir else e.stat()
                except FileNotFoundError:
                    continue
                out.append(FileInfo(path.rstrip("/") + "/" + e.name, e.name,
                                    0 if st is None else st.st_size, is_dir,
                                    None if st is None else st.st_mtime))
        return out

    def _tmp_beside(self, path):
        d, name = os.path.split(path)
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, f".tmp_{name}_{_uuid.uuid4().hex}")

    def put(self, uri, data):
        self._replace_whole(self._path(uri), data, durable=False)

    def _replace_whole(self, path: str, data, durable: bool) -> None:
        """Write a temp file beside ``path`` and rename it over ``path``, so readers see the old
        or the new bytes, never a torn file; ``durable`` also syncs file and directory."""
        tmp = self._tmp_beside(path)
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            _unlink_quiet(tmp)
            raise
        if durable:
            fsync_dir(os.path.dirname(path))

    def put_if_absent(self, uri, data):
        wait_durable()  # a manifest (or ref) is created only after the files it may name
        path = self._path(uri)
        tmp = self._tmp_beside(path)
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError as e:
                if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                    raise
                # No hard links here: an atomic no-replace rename of the whole file (never an
                # exclusive create followed by a write, which a crash would leave torn).
                if not rename_noreplace(tmp, path):
                    return False
            fsync_dir(os.path.dirname(path))
            return True
        finally:
            _unlink_quiet(tmp)

    def put_durable(self, uri, data):
        self._replace_whole(self._path(uri), data, durable=True)

    def delete(self, uri, missing_ok=True):
        try:
            os.unlink(self._path(uri))
        except FileNotFoundError:
            if not missing_ok:
                raise

    def prune_empty_dirs(self, uri, older_than=None):
        removed = []
        for d, _, names in os.walk(self._path(uri), topdown=False):
            if names:
                continue
            try:
                if older_than is not None and os.stat(d).st_mtime >= older_than:
                    continue
                os.rmdir(d)  # refused when a subdirectory was kept or a file just arrived
            except OSError:
                continue
            removed.append(self._uri(d))
        return removed

    def copy(self, src, dst):
        import shutil

        d = os.path.dirname(self._path(dst))
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(self._path(src), self._path(dst))

    def open_output(self, uri):
        return _LocalAtomicWriter(self._path(uri), self._tmp_beside(self._path(uri)))

    def open_input(self, uri):
        return open(self._path(uri), "rb")


def _unlink_quiet(path):
    try:
        os.unlink(path)
    except OSError:
        pass


class _LocalAtomicWriter:
    """Writes to a temporary file and renames it into place on a clean close; the file's
    fsync then runs in the background (:mod:`.durable`), and a manifest is created only after
    it (``put_if_absent`` waits)."""

    # Written bytes are handed to the kernel's writeback every this many bytes, so the fsync
    # overlaps with the encoding that goes on meanwhile instead of following it.
    WRITEBACK_BYTES = 4 * 1024 * 1024

    def __init__(self, final, tmp):
        self.final, self.tmp = final, tmp
        self._f = open(tmp, "wb")
        self.closed = False
        self._pos = 0
        self._synced = 0

    def write(self, data):
        n = self._f.write(data)
        self._pos += n
        if self._pos - self._synced >= self.WRITEBACK_BYTES and sync_enabled():
            self._f.flush()
            start_writeback(self._f.fileno(), self._synced, self._pos - self._synced)
            self._synced = self._pos
        return n

    def tell(self):
        return self._f.tell()

    def close(self):
        if self.closed:
            return
        self._f.flush()
        if not sync_enabled():  # LANCEFMT_FSYNC=0: no sync, as pylance (durable.py)
            self._f.close()
            os.replace(self.tmp, self.final)
            self.closed = True
            return
        fd = os.dup(self._f.fileno())  # synced (and closed) in the background: durable.py
        try:
            self._f.close()
            os.replace(self.tmp, self.final)
        except BaseException:
            os.close(fd)
            raise
        defer_sync(fd, self.final)
        self.closed = True

    def abort(self):
        if not self.closed:
            self._f.close()
            _unlink_quiet(self.tmp)
            self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _mtime(entry: dict) -> float | None:
    """Last-modified time of an fsspec listing entry (s3: ``LastModified``, memory: ``created``)."""
    v = entry.get("LastModified", entry.get("mtime", entry.get("created")))
    if v is None:
        return None
    if hasattr(v, "timestamp"):
        return float(v.timestamp())
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class FsspecStore(ObjectStore):
    """Any fsspec file system (s3fs for ``s3://``, gcsfs, ...)."""

    def __init__(self, protocol, storage_options=None, resolved=None):
        super().__init__(protocol, storage_options)
        import fsspec  # imported on first use: local-only processes (Spark planners) skip it

        if resolved is None:
            resolved = resolve(protocol, storage_options)
        self.settings = resolved.settings
        options = dict(resolved.fs_kwargs)
        if protocol != "memory":
            # No listings cache: after a listing, s3fs answers size/exists of a newer object
            # from the cached listing ("not found"), which hides other writers' commits.
            options.setdefault("use_listings_cache", False)
        try:
            self.fs = fsspec.filesystem(protocol, **options)
        except ImportError as e:
            from ..errors import MissingDependencyError

            raise MissingDependencyError(f"{protocol}:// storage needs a package that is not "
                                         f"installed: {e}") from e
        except (TypeError, ValueError, KeyError) as e:
            raise InvalidArgumentError(
                f"storage options for {protocol}:// refused by fsspec: {e}") from e

    def read(self, uri):
        return self.fs.cat_file(self._path(uri))

    def read_range(self, uri, start, length):
        if length == 0:
            return b""
        return self.fs.cat_file(self._path(uri), start=start, end=start + length)

    def read_ranges(self, uri, ranges):
        if not ranges:
            return []
        p = self._path(uri)
        # on_error="raise": fsspec's default puts exceptions in the result list
        return self.fs.cat_ranges([p] * len(ranges), [s for s, _ in ranges],
                                  [s + n for s, n in ranges], on_error="raise")

    def size(self, uri):
        return int(self.fs.size(self._path(uri)))

    def exists(self, uri):
        return self.fs.exists(self._path(uri))

    def list(self, uri):
        path = self._path(uri).rstrip("/")
        try:
            entries = self.fs.ls(path, detail=True, refresh=True)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for e in entries:
            name = e["name"].rstrip("/")
            if name == path:
                continue
            is_dir = e.get("type") == "directory"
            out.append(FileInfo(self._uri(name), name.rsplit("/", 1)[-1],
                                int(e.get("size") or 0), is_dir, _mtime(e)))
        return out

    def list_sorted_page(self, uri, limit=1000):
        if self.protocol not in ("s3", "s3a"):
            return None
        bucket, key, _ = self.fs.split_path(self._path(uri))
        prefix = key.rstrip("/") + "/"
        resp = self.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, Delimiter="/",
                               MaxKeys=int(limit))
        out = []
        for o in resp.get("Contents", []):
            name = o["Key"][len(prefix):]
            if not name:
                continue
            modified = o.get("LastModified")
            out.append(FileInfo(self._uri(f"{bucket}/{o['Key']}"), name, int(o.get("Size") or 0),
                                False, modified.timestamp() if modified is not None else None))
        return out, not resp.get("IsTruncated", False)

    def walk(self, uri):
        path = self._path(uri).rstrip("/")
        try:
            found = self.fs.find(path, detail=True)
        except FileNotFoundError:
            return
        for name, e in found.items():
            if e.get("type") == "directory":
                continue
            yield FileInfo(self._uri(name), name.rsplit("/", 1)[-1], int(e.get("size") or 0),
                           False, _mtime(e))

    def put(self, uri, data):
        self.fs.pipe_file(self._path(uri), data)

    def put_if_absent(self, uri, data):
        try:
            self.fs.pipe_file(self._path(uri), data, mode="create")
        except FileExistsError:
            return False
        except OSError as e:
            text = str(e)
            if "PreconditionFailed" in text or "Precondition" in text or "ConditionalRequestConflict" in text:
                return False
            raise
        return True

    def delete(self, uri, missing_ok=True):
        try:
            self.fs.rm_file(self._path(uri))
        except FileNotFoundError:
            if not missing_ok:
                raise

    def delete_many(self, uris):
        paths = [self._path(u) for u in uris]
        if paths:
            try:
                self.fs.rm(paths)
            except FileNotFoundError:
                pass

    def copy(self, src, dst):
        self.fs.copy(self._path(src), self._path(dst))

    def open_output(self, uri):
        return self.fs.open(self._path(uri), "wb")

    def open_input(self, uri):
        return self.fs.open(self._path(uri), "rb")


class MemoryStore(FsspecStore):
    """fsspec's process-global in-memory file system (``memory://``), for tests and demos."""

    _lock = threading.Lock()

    def __init__(self, storage_options=None):
        from .memory_scope import NAMESPACE_KEY, namespace_prefix

        options = dict(storage_options or {})
        self._prefix = namespace_prefix(options)  # a private dataset's own corner (memory_scope)
        options.pop(NAMESPACE_KEY, None)
        super().__init__("memory", options)
        self.storage_options = dict(storage_options or {})

    def _path(self, uri: str) -> str:
        return self._prefix + super()._path(uri)

    def _uri(self, path: str) -> str:
        if self._prefix and path.startswith(self._prefix):
            path = path[len(self._prefix):]
        return super()._uri(path)

    def put_if_absent(self, uri, data):
        path = self._path(uri)
        with MemoryStore._lock:
            if self.fs.exists(path):
                return False
            self.fs.pipe_file(path, bytes(data))
            return True

    def put(self, uri, data):
        with MemoryStore._lock:
            self.fs.pipe_file(self._path(uri), bytes(data))

    def walk(self, uri):
        path = self._path(uri).rstrip("/")
        for name, e in self.fs.find(path, detail=True).items():
            if e.get("type") != "directory":
                yield FileInfo(self._uri(name), name.rsplit("/", 1)[-1], int(e.get("size") or 0),
                               False, _mtime(e))
