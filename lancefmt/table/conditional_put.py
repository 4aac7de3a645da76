"""Is the object store's conditional put honoured? One cheap probe per bucket and process.

Commits rely on ``put_if_absent`` (``If-None-Match: *`` on S3). Older S3-compatible servers and
some gateways accept the header and ignore it: two writers then both "win" version N and one
commit is silently lost. Before the first commit to a remote bucket, the probe creates a
uniquely named object twice with ``put_if_absent``; a store that lets the second create succeed
(or rejects the header) is refused with :class:`ConditionalPutUnsupportedError`, which tells the
user to commit through an external manifest store. Three requests, once per bucket per process.
Setting ``LANCEFMT_ASSUME_CONDITIONAL_PUT=1`` skips the probe.

The probe object is a temporary of ``_versions/`` (``.tmp_conditional_put_probe-<hex>``), so
that the one a writer killed mid-probe leaves is removed by either library's cleanup, as
their own manifest temporaries are; readers ignore names that are not manifests.
"""
from __future__ import annotations

import os
import threading
import uuid as _uuid

from ..errors import ConditionalPutUnsupportedError
from ..io.store import LocalStore, MemoryStore
from ..io.uri import child, split_uri
from .naming import VERSIONS_DIR

PROBE_PREFIX = ".tmp_conditional_put_probe-"

_verdicts: dict = {}
_lock = threading.Lock()


def _key(store, dataset_uri: str):
    path = split_uri(dataset_uri).path.lstrip("/")
    bucket = path.split("/", 1)[0]
    return (store.protocol, bucket, tuple(sorted((k, repr(v)) for k, v in
                                                 (store.storage_options or {}).items())))


def probe_conditional_put(store, dataset_uri: str) -> str | None:
    """None if ``put_if_absent`` refuses to overwrite, else why it cannot be trusted."""
    probe = child(dataset_uri, VERSIONS_DIR, PROBE_PREFIX + _uuid.uuid4().hex)
    try:
        try:
            first = store.put_if_absent(probe, b"1")
            second = store.put_if_absent(probe, b"2")
        except OSError as e:
            return f"a conditional put failed ({e})"
    finally:
        try:
            store.delete(probe)
        except OSError:
            pass
    if not first:
        return "a conditional put of a new object reported that it exists"
    if second:
        return "a conditional put replaced an existing object (If-None-Match is ignored)"
    return None


def check_conditional_put(store, dataset_uri: str) -> None:
    """Raise :class:`ConditionalPutUnsupportedError` if the store cannot commit by itself."""
    if isinstance(store, (LocalStore, MemoryStore)):
        return  # checked by construction (link/renameat2, a process lock)
    if os.environ.get("LANCEFMT_ASSUME_CONDITIONAL_PUT") == "1":
        return
    key = _key(store, dataset_uri)
    verdict = _verdicts.get(key, False)
    if verdict is False:
        with _lock:
            verdict = _verdicts.get(key, False)
            if verdict is False:
                verdict = probe_conditional_put(store, dataset_uri)
                _verdicts[key] = verdict
    if verdict is not None:
        raise ConditionalPutUnsupportedError(
            f"cannot commit to {dataset_uri} safely: {verdict}, so concurrent commits could be "
            "lost. Commit through an external manifest store, e.g. "
            "manifest_store=lancefmt.SqliteManifestStore('/path/manifests.db') (Spark option "
            "manifest_store=sqlite:///path/manifests.db)")
