"""Planning a batch of ranged reads: which requests to send for which ranges.

Ranges of one object that lie close together are fetched as one request (the gap is read and
dropped): a request costs a round trip (tens of milliseconds on a cloud store) while a gap of
64 KiB costs well under a millisecond of transfer. Lance's scan scheduler does the same with the
store's block size as the gap (64 KiB for cloud stores, 4 KiB locally) and splits anything longer
than ``max_iop_size`` (16 MiB) so big reads go out as several parallel requests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Fetch:
    """One request: bytes ``[start, end)`` of ``uri``."""

    uri: str
    start: int
    end: int


@dataclass
class Plan:
    """The requests to send, and for each asked range the pieces of them that make it up:
    ``parts[i]`` is a list of ``(fetch index, offset in that fetch, length)``."""

    fetches: list
    parts: list

    def assemble(self, fetched: Sequence[bytes]) -> list[bytes]:
        """The asked ranges, in the order asked, from the fetched buffers (a range past the end
        of its object comes back short, as ``pread`` does)."""
        out = []
        for pieces in self.parts:
            if len(pieces) == 1:
                i, off, n = pieces[0]
                buf = fetched[i]
                out.append(buf if off == 0 and len(buf) == n else bytes(buf[off:off + n]))
            else:
                out.append(b"".join(bytes(fetched[i][off:off + n]) for i, off, n in pieces))
        return out


def plan_reads(requests: Sequence[tuple[str, int, int]], gap: int, max_size: int) -> Plan:
    """Coalesce ``(uri, start, length)`` requests: ranges of one object at most ``gap`` bytes
    apart (or overlapping) become one fetch of at most ``max_size`` bytes; a single range longer
    than ``max_size`` is split into several fetches."""
    if max_size <= 0:
        raise ValueError("max_size must be positive")
    fetches: list[Fetch] = []
    parts: list = [None] * len(requests)
    by_uri: dict[str, list[int]] = {}
    for i, (uri, start, length) in enumerate(requests):
        if start < 0 or length < 0:
            raise ValueError(f"negative range ({start}, {length}) of {uri}")
        if length == 0:
            parts[i] = []
            continue
        by_uri.setdefault(uri, []).append(i)
    for uri, idx in by_uri.items():
        idx.sort(key=lambda i: requests[i][1])
        groups: list[list[int]] = []
        g_start = g_end = None
        for i in idx:
            s, n = requests[i][1], requests[i][2]
            e = s + n
            if g_end is not None and s <= g_end + gap and max(g_end, e) - g_start <= max_size:
                groups[-1].append(i)
                g_end = max(g_end, e)
            else:
                groups.append([i])
                g_start, g_end = s, e
        for group in groups:
            g_start = requests[group[0]][1]
            g_end = max(requests[i][1] + requests[i][2] for i in group)
            first = len(fetches)
            pos = g_start
            while pos < g_end:  # only a single range longer than max_size takes several
                fetches.append(Fetch(uri, pos, min(g_end, pos + max_size)))
                pos += max_size
            for i in group:
                s, n = requests[i][1], requests[i][2]
                pieces = []
                while n > 0:
                    k = first + (s - g_start) // max_size
                    off = s - fetches[k].start
                    take = min(n, fetches[k].end - s)
                    pieces.append((k, off, take))
                    s += take
                    n -= take
                parts[i] = pieces
    return Plan(fetches, parts)
