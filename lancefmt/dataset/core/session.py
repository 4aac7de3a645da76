"""Session: what one opened dataset shares across the versions it moves to (pylance's Session).

pylance gives every ``lance.dataset(...)`` call a session of its own, holding its index cache;
checking out another version or committing keeps the session. lancefmt does the same: loaded
index segments (and the pages they loaded) live in the session, so a look-up repeated on one
Dataset pays nothing again, and a freshly opened Dataset starts cold.
"""
from __future__ import annotations

from ...index.core.catalog import MAX_LOADED, LoadedCache


class Session:
    def __init__(self, max_indices: int = MAX_LOADED):
        self.index_cache = LoadedCache(max_indices)

    def index_cache_entry_count(self) -> int:
        return len(self.index_cache)

    def __repr__(self):
        return f"Session(indices={self.index_cache_entry_count()})"
