"""View: a movable pointer at a snapshot, what a user's ``Dataset`` is without its API.

pylance's mutations move the dataset object they are called on to the version they commit.
Objects that act on a dataset later (a merge-insert builder, the optimizer, tags) hold the
view, so they see the version the dataset shows when they run and can move it.
"""
from __future__ import annotations

from .snapshot import Snapshot


class View:
    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot

    def move_to(self, snapshot: Snapshot) -> Snapshot:
        """Show ``snapshot`` from now on (a committed version of the same dataset)."""
        self.snapshot = snapshot
        return snapshot
