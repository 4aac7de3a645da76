"""``memory://`` datasets are private to the objects that made them, as in pylance.

pylance opens a new in-memory object store for every ``memory://`` URI it is handed: a
dataset written to ``memory://x`` is reachable through the returned dataset object (and what
is derived from it), not by opening ``memory://x`` again, and a second ``write_dataset`` to
``memory://x`` starts a new, separate dataset. lancefmt does the same by giving each such
entry a namespace inside the process-wide memory file system, carried in the dataset's
``storage_options`` under :data:`NAMESPACE_KEY` (so it follows the dataset into checkouts,
commits, fragments and pickles).
"""
from __future__ import annotations

import uuid

from .uri import as_uri_string, split_uri

NAMESPACE_KEY = "lancefmt.memory_namespace"


def is_memory(uri) -> bool:
    try:
        return split_uri(as_uri_string(uri)).protocol == "memory"
    except (TypeError, ValueError):
        return False


def private_memory_options(uri, storage_options: dict | None) -> dict | None:
    """``storage_options`` with a fresh memory namespace when ``uri`` is a ``memory://`` URI
    given without one; unchanged otherwise."""
    if not is_memory(uri) or (storage_options and NAMESPACE_KEY in storage_options):
        return storage_options
    out = dict(storage_options or {})
    out[NAMESPACE_KEY] = uuid.uuid4().hex
    return out


def namespace_prefix(storage_options: dict | None) -> str:
    """The store-path prefix of a namespace ("" for the shared memory file system)."""
    ns = (storage_options or {}).get(NAMESPACE_KEY)
    return f"/.lancefmt-private/{ns}" if ns else ""
