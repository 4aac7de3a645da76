"""Auto cleanup after a commit, driven by the ``lance.auto_cleanup.*`` config keys.

As Lance's commit hook does: when ``lance.auto_cleanup.interval`` is set and the new version is
a multiple of it, versions older than the one the commit read are cleaned up with ``lance.auto_cleanup.older_than`` (a humantime
duration such as ``"14days"``, ``"1h"`` or ``"3600s"``; 14 days when absent) and
``lance.auto_cleanup.retain_versions``; tagged old versions are skipped, not an error. The commit
has already succeeded, so a failing cleanup never fails it.
"""
from __future__ import annotations

import re
from datetime import timedelta
from typing import TypedDict

from ...errors import InvalidArgumentError, LanceError
from .cleanup import cleanup_old_versions

INTERVAL_KEY = "lance.auto_cleanup.interval"
OLDER_THAN_KEY = "lance.auto_cleanup.older_than"
RETAIN_KEY = "lance.auto_cleanup.retain_versions"

_UNITS = {
    "ns": 1e-9, "nsec": 1e-9, "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
    "M": 2630016, "month": 2630016, "months": 2630016,
    "y": 31557600, "year": 31557600, "years": 31557600,
}
_PART = re.compile(r"\s*(\d+)\s*([A-Za-z]+)")


def parse_duration(text: str) -> timedelta:
    """A humantime duration (``"1h 30m"``, ``"14days"``) as a timedelta."""
    pos, total, text = 0, 0.0, str(text).strip()
    if not text:
        raise InvalidArgumentError("empty duration")
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None or m.group(2) not in _UNITS:
            raise InvalidArgumentError(f"not a duration: {text!r}")
        total += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
        while pos < len(text) and text[pos] == " ":
            pos += 1
    return timedelta(seconds=total)


def cleanup_policy(config: dict, version: int):
    """(older_than, retain_versions) when a commit of ``version`` must clean up, else None."""
    interval = config.get(INTERVAL_KEY)
    if interval is None:
        return None
    try:
        n = int(interval)
    except ValueError:
        raise InvalidArgumentError(f"{INTERVAL_KEY} is not an integer: {interval!r}") from None
    if n <= 0 or version % n != 0:
        return None
    older = config.get(OLDER_THAN_KEY)
    older_than = parse_duration(older) if older is not None else timedelta(days=14)
    retain = config.get(RETAIN_KEY)
    return older_than, (int(retain) if retain is not None else None)


def maybe_auto_cleanup(snapshot):
    """Run the cleanup ``snapshot``'s config asks for after committing its version (the
    ``after_commit`` hook of the snapshots the ``Dataset`` facade makes)."""
    try:
        policy = cleanup_policy(snapshot.config(), snapshot.version)
        if policy is None:
            return None
        older_than, retain = policy
        if snapshot.version <= 1:
            return None
        # Lance runs the hook with the dataset as it was before the commit, so the version
        # the writer read stays (observed with pylance 14: interval 3 keeps version 2 at 3)
        before = snapshot.at(snapshot.version - 1)
        return cleanup_old_versions(before, older_than, retain, error_if_tagged_old_versions=False)
    except (LanceError, OSError, ValueError):
        return None


class AutoCleanupConfig(TypedDict):
    """pylance's ``write_dataset(auto_cleanup_options=...)``: every ``interval`` versions,
    remove versions older than ``older_than_seconds``."""

    interval: int
    older_than_seconds: int
