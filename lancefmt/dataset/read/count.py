"""Counting live rows: from the manifest alone when it can, else by scanning."""
from __future__ import annotations

from .scan import live_counts
from .scanner import LanceScanner


def count_rows(snapshot, filter=None, fragments=None) -> int:
    """Live rows (deletions subtracted) of ``fragments`` (default all) matching ``filter``;
    without a filter from metadata alone (plus any deletion file whose count the manifest
    leaves unknown)."""
    if filter is None and fragments is None:
        table = snapshot.fragment_table
        unknown = table.has_deletion_file & ~table.deletion_count_known
        if not unknown.any():
            return int(table.total_live_rows)
    pbs = snapshot.select_fragments(fragments)
    if filter is None:
        return int(live_counts(snapshot.ctx, pbs).sum())
    return LanceScanner(snapshot, columns=[], filter=filter, fragments=fragments).count_rows()
