"""External manifest stores: a key-value store with put-if-absent that commits versions for
object stores that cannot (seeds/lance-table-format.md, "External Manifest Store").

The store maps ``(base_uri, version)`` to where that version's manifest is. A writer stages its
manifest under a unique name, claims the version with :meth:`ExternalManifestStore.put_if_not_exists`
(the commit point), copies the manifest to its final name and records the final location with
:meth:`ExternalManifestStore.put_if_exists` (:mod:`.commit_external` runs the protocol). The
object store keeps every final manifest, so a reader without the external store (pylance) reads
the dataset too, at most one version behind.

Writing another backend (DynamoDB, etcd, a SQL server) is one subclass of
:class:`ExternalManifestStore` with four methods. The only atomic operation needed is
:meth:`~ExternalManifestStore.put_if_not_exists`; for DynamoDB that is a ``PutItem`` with
``ConditionExpression="attribute_not_exists(base_uri) AND attribute_not_exists(version)"`` on a
table keyed by ``base_uri`` (hash key, string) and ``version`` (range key, number), as Lance's
DynamoDB store does; :meth:`~ExternalManifestStore.get_latest_version` is a ``Query`` on
``base_uri`` with ``ScanIndexForward=False, Limit=1`` and :meth:`~ExternalManifestStore.put_if_exists`
a ``PutItem`` with ``attribute_exists`` conditions. Reads must be strongly consistent.
"""
from __future__ import annotations

import abc
import contextlib
import os
from dataclasses import dataclass

from ..errors import InvalidArgumentError, NotSupportedError
from .sqlite_pool import ConnectionPool, ForkedStoreError


@dataclass(frozen=True)
class ManifestEntry:
    """One committed version in an external store: the manifest's URI (staged or final), its size
    in bytes (None if unknown) and an opaque e-tag (None if unknown)."""

    version: int
    path: str
    size: int | None = None
    e_tag: str | None = None


class ExternalManifestStore(abc.ABC):
    """Where ``(base_uri, version) -> manifest location`` entries live (Lance's
    ``ExternalManifestStore``). ``base_uri`` is the dataset's normalized URI (a branch is its own
    ``.../tree/{name}`` base). Implementations must be safe to call from several threads and
    processes, and must make :meth:`put_if_not_exists` atomic."""

    @abc.abstractmethod
    def get(self, base_uri: str, version: int) -> ManifestEntry | None:
        """The entry of ``version``, or None if the store has none."""

    @abc.abstractmethod
    def get_latest_version(self, base_uri: str) -> ManifestEntry | None:
        """The entry with the highest version of ``base_uri``, or None if there is none."""

    @abc.abstractmethod
    def put_if_not_exists(self, base_uri: str, version: int, path: str, size: int | None = None,
                          e_tag: str | None = None) -> bool:
        """Atomically create the entry; False (nothing changed) if ``version`` already has one.
        This is the commit point of a version."""

    @abc.abstractmethod
    def put_if_exists(self, base_uri: str, version: int, path: str, size: int | None = None,
                      e_tag: str | None = None) -> bool:
        """Replace an existing entry (to point it at the final manifest); False if there is none."""

    def delete(self, base_uri: str) -> None:
        """Forget every entry of ``base_uri`` (after the dataset is deleted). Optional."""
        raise NotSupportedError(f"{type(self).__name__} cannot delete entries")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS manifests (
    base_uri TEXT NOT NULL,
    version INTEGER NOT NULL,
    path TEXT NOT NULL,
    size INTEGER,
    e_tag TEXT,
    PRIMARY KEY (base_uri, version)
) WITHOUT ROWID
"""


class SqliteManifestStore(ExternalManifestStore):
    """An embedded external store in one SQLite file (WAL mode, one transaction per put).

    SQLite's file locking makes it safe across threads and processes on one machine (or on a
    file system with working POSIX locks); every put is its own ``BEGIN IMMEDIATE`` transaction,
    so a process killed mid-put leaves the entry either absent or whole. Connections are pooled
    and closed before every ``fork()`` (:mod:`.sqlite_pool`), so forked children are safe too.
    Pickles by path, so Spark tasks and subprocesses reopen the same file."""

    def __init__(self, path, *, timeout: float = 60.0):
        self.path = os.fspath(path)
        if not self.path:
            raise InvalidArgumentError("SqliteManifestStore needs a file path")
        self.timeout = float(timeout)
        self._pool = ConnectionPool(self.path, self.timeout)
        with self._tx() as con:
            con.execute(_SCHEMA)

    def __reduce__(self):
        # the absolute path: a worker started in another directory must open the same file
        return (_reopen_sqlite_store, (os.path.abspath(self.path), self.timeout))

    def __repr__(self):
        return f"SqliteManifestStore({self.path!r})"

    @contextlib.contextmanager
    def _tx(self):
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` write transaction (``ROLLBACK`` on error).

        A process forked inside it neither commits nor rolls back: the transaction is the
        parent's (:class:`~.sqlite_pool.ForkedStoreError` in the child)."""
        with self._pool.connection() as con:
            pid = os.getpid()
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                if os.getpid() == pid and con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            if os.getpid() != pid:
                raise ForkedStoreError(f"{self.path}: forked inside a transaction; the child "
                                       "does not commit it")
            con.execute("COMMIT")

    def _one(self, sql, args) -> ManifestEntry | None:
        # fetchall, not fetchone: an unfinished statement keeps its read snapshot open, and later
        # reads on this connection would not see other processes' commits.
        with self._pool.connection() as con:
            rows = con.execute(sql, args).fetchall()
        return ManifestEntry(*rows[0]) if rows else None

    def get(self, base_uri, version):
        return self._one("SELECT version, path, size, e_tag FROM manifests "
                         "WHERE base_uri=? AND version=?", (base_uri, int(version)))

    def get_latest_version(self, base_uri):
        return self._one("SELECT version, path, size, e_tag FROM manifests WHERE base_uri=? "
                         "ORDER BY version DESC LIMIT 1", (base_uri,))

    def put_if_not_exists(self, base_uri, version, path, size=None, e_tag=None):
        with self._tx() as con:
            cur = con.execute(
                "INSERT OR IGNORE INTO manifests (base_uri, version, path, size, e_tag) "
                "VALUES (?, ?, ?, ?, ?)", (base_uri, int(version), path, size, e_tag))
            return cur.rowcount == 1

    def put_if_exists(self, base_uri, version, path, size=None, e_tag=None):
        with self._tx() as con:
            cur = con.execute(
                "UPDATE manifests SET path=?, size=?, e_tag=? WHERE base_uri=? AND version=?",
                (path, size, e_tag, base_uri, int(version)))
            return cur.rowcount == 1

    def delete(self, base_uri):
        with self._tx() as con:
            con.execute("DELETE FROM manifests WHERE base_uri=?", (base_uri,))

    def close(self) -> None:
        """Close the idle connections (a later call reopens one)."""
        self._pool.close()


def _reopen_sqlite_store(path: str, timeout: float) -> SqliteManifestStore:
    """Unpickles a :class:`SqliteManifestStore` with its timeout from the first connection on."""
    return SqliteManifestStore(path, timeout=timeout)
