"""CommitPlan: an operation to commit and the files written for it."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CommitPlan:
    """An operation to commit and the files written for it (removed if the commit fails)."""

    operation: object
    written: list = field(default_factory=list)   # [(uri, storage_options)]
