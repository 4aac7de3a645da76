"""The tables the kill and race campaigns write, the indices they build on them, and each
index's filters with the answer a full scan gives (pyarrow compute over the whole table)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

WORDS = ["amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor"]
TAGS = ["t0", "t1", "t2", "t3", "t4", "t5"]


def rows(start: int, n: int) -> pa.Table:
    """Rows ``start .. start+n`` (``id`` unique; every other column a function of it)."""
    ids = np.arange(start, start + n, dtype=np.int64)
    cat = pa.array([f"c{v}" for v in (ids * 7) % 8], pa.string())
    cat = pc.if_else(pa.array(ids % 13 == 0), pa.scalar(None, pa.string()), cat)
    bits = (ids * 2654435761) % 64  # which of TAGS a row holds (unique within the row)
    tags = [None if i % 17 == 0 else [t for k, t in enumerate(TAGS) if b >> k & 1]
            for i, b in zip(ids.tolist(), bits.tolist())]
    title = [f"{WORDS[i % 8]} {WORDS[(i // 8) % 8]} no{i}" for i in ids.tolist()]
    return pa.table({
        "id": pa.array(ids),
        "ts": pa.array(ids * 3),
        "cat": cat,
        "tags": pa.array(tags, pa.list_(pa.string())),
        "key": pa.array((ids * 40503) % 1_000_003),
        "title": pa.array(title, pa.string()),
    })


# name -> (column, type): every scalar type lancefmt builds, one column each
INDICES = {
    "id_idx": ("id", "BTREE"),
    "cat_idx": ("cat", "BITMAP"),
    "tags_idx": ("tags", "LABEL_LIST"),
    "ts_zm": ("ts", "ZONEMAP"),
    "key_bf": ("key", "BLOOMFILTER"),
    "title_ng": ("title", "NGRAM"),
}
# full-text indices, built and checked by the kill campaign (a query, not a filter, uses them)
FTS = {"title_fts": ("title", "INVERTED")}


@dataclass(frozen=True)
class Probe:
    """A filter and the mask a full scan computes for it."""

    sql: str
    mask: Callable[[pa.Table], np.ndarray]


def _np(x) -> np.ndarray:
    return np.asarray(x.to_numpy(zero_copy_only=False), dtype=bool)


def _eq(col, value):
    return lambda t: _np(pc.fill_null(pc.equal(t[col], value), False))


def _isin(col, values):
    return lambda t: _np(pc.is_in(t[col], pa.array(values)))


def _between(col, lo, hi):
    return lambda t: _np(pc.fill_null(pc.and_(pc.greater_equal(t[col], lo), pc.less_equal(t[col], hi)), False))


def _labels(col, values, every: bool):
    def mask(t):
        lists = t[col].combine_chunks() if isinstance(t[col], pa.ChunkedArray) else t[col]
        flat = pc.list_flatten(lists)
        parent = pc.list_parent_indices(lists).to_numpy()
        hit = _np(pc.is_in(flat, pa.array(values)))
        counts = np.bincount(parent[hit], minlength=len(t)) if len(t) else np.zeros(0, np.int64)
        return counts >= len(values) if every else counts > 0
    return mask


def probes(name: str, rng: np.random.Generator, top: int) -> list[Probe]:
    """Filters index ``name`` answers (with some values absent), ids drawn below ``top``."""
    column = INDICES[name][0]
    x = int(rng.integers(0, max(top, 1)))
    if column == "id":
        return [Probe(f"id = {x}", _eq("id", x)),
                Probe(f"id BETWEEN {x} AND {x + 500}", _between("id", x, x + 500)),
                Probe(f"id IN ({x}, {x + 7}, {top + 5})", _isin("id", [x, x + 7, top + 5]))]
    if column == "ts":
        return [Probe(f"ts >= {3 * x} AND ts <= {3 * x + 900}", _between("ts", 3 * x, 3 * x + 900))]
    if column == "cat":
        c = f"c{x % 8}"
        return [Probe(f"cat = '{c}'", _eq("cat", c)),
                Probe("cat IN ('c1', 'u2')", _isin("cat", ["c1", "u2"])),
                Probe("cat IS NULL", lambda t: _np(pc.is_null(t["cat"])))]
    if column == "tags":
        a, b = TAGS[x % 6], TAGS[(x + 2) % 6]
        return [Probe(f"array_has_any(tags, ['{a}', '{b}'])", _labels("tags", [a, b], False)),
                Probe(f"array_has_all(tags, ['{a}', '{b}'])", _labels("tags", [a, b], True))]
    if column == "key":
        k = (x * 40503) % 1_000_003
        return [Probe(f"key = {k}", _eq("key", k)),
                Probe(f"key IN ({k}, 17)", _isin("key", [k, 17]))]
    if column == "title":
        needle = f"o{x % 1000}"
        return [Probe(f"contains(title, '{needle}')",
                      lambda t: _np(pc.fill_null(pc.match_substring(t["title"], needle), False)))]
    raise KeyError(name)


def fts_probes(rng: np.random.Generator, top: int) -> list[Probe]:
    """Full-text queries (``Probe.sql`` is the query) with the rows holding the token: a word
    of ``title`` (about a quarter of the rows) and a row's own ``no{id}``."""
    word = WORDS[int(rng.integers(0, len(WORDS)))]
    x = int(rng.integers(0, max(top, 1)))

    def holding(token):
        return lambda t: np.array([v is not None and token in v.split() for v in
                                   t["title"].to_pylist()], dtype=bool)
    return [Probe(word, holding(word)), Probe(f"no{x}", holding(f"no{x}"))]
