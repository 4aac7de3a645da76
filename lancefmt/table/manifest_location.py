"""ManifestLocation: where one version's manifest is."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ManifestLocation:
    """Where one version's manifest is: its URI, size in bytes (None if unknown), naming
    scheme (``"v1"``/``"v2"``) and whether it is a detached version."""

    version: int
    uri: str
    size: int | None
    scheme: str
    detached: bool = False
