"""Full-text search kernels and evaluation: ranking, pruned top-k against exhaustive scoring,
phrase checks, fuzzy expansion and the combination of hits (pylance's answers are compared in
tests/interop/test_fts_query_interop.py)."""
from __future__ import annotations

import numpy as np
import pytest

from lancefmt.index.fts._fuzzy import code_points, within_distance
from lancefmt.index.fts._score import (phrase_filter, score_lists, sorted_member,
                                       top_k_pruned)
from lancefmt.index.fts.search import Hits, _sum, member, phrase_matches, union_max


def random_lists(rng, n, count):
    out = []
    for _ in range(count):
        size = int(rng.integers(0, n // 2))
        docs = np.sort(rng.choice(n, size, replace=False)).astype(np.uint32)
        w = rng.random(size).astype(np.float32)
        out.append((docs, w, int(rng.integers(1, 3))))
    return out


def exhaustive(n, lists, live, need, boost):
    score = np.zeros(n, np.float64)
    count = np.zeros(n, np.int64)
    for d, w, m in lists:
        score[d] += w.astype(np.float64) * m
        count[d] += 1
    hit = (count >= need) & (count > 0) & live.astype(bool)
    return {int(i): score[i] * boost for i in np.flatnonzero(hit)}


@pytest.mark.parametrize("seed", range(6))
def test_pruned_top_k_is_the_exhaustive_top_k(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    lists = random_lists(rng, n, int(rng.integers(1, 5)))
    live = (rng.random(n) > 0.1).astype(np.uint8)
    for need in (1, len(lists)):
        want = exhaustive(n, lists, live, need, 1.5)
        ranked = sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))[:25]
        for fn in (score_lists, top_k_pruned):
            docs, scores = fn(n, lists, live, need, 25, 1.5)
            assert len(docs) == len(ranked)
            assert scores == pytest.approx([s for _, s in ranked], rel=1e-5)
            cut = ranked[-1][1] if ranked else 0
            assert {d for d, s in ranked if s > cut * (1 + 1e-5)} <= set(docs.tolist())
        docs, scores = score_lists(n, lists, live, need, -1, 1.5)
        assert docs.tolist() == sorted(want)
        assert scores == pytest.approx([want[d] for d in docs.tolist()], rel=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_kernels_count_the_documents_they_score(seed):
    """``counter`` gains the documents scored: every live hit exhaustively, no more than
    that (and at least k) when the top k is pruned."""
    rng = np.random.default_rng(seed)
    n = 3000
    lists = random_lists(rng, n, 3)
    live = (rng.random(n) > 0.3).astype(np.uint8)
    for need in (1, len(lists)):
        hits = len(exhaustive(n, lists, live, need, 1.0))
        every = np.zeros(1, np.int64)
        score_lists(n, lists, live, need, -1, 1.0, every)
        assert every[0] == hits
        top = np.zeros(1, np.int64)
        score_lists(n, lists, live, need, 10, 1.0, top)
        assert top[0] == hits
        pruned = np.zeros(1, np.int64)
        docs, _ = top_k_pruned(n, lists, live, need, 10, 1.0, pruned)
        assert len(docs) <= pruned[0] <= hits


def test_kernels_refuse_bad_lists():
    live = np.ones(10, np.uint8)
    with pytest.raises(ValueError):
        score_lists(10, [(np.array([3, 2], np.uint32), np.ones(2, np.float32), 1)], live, 1, 5, 1.0)
    with pytest.raises(ValueError):
        top_k_pruned(10, [(np.array([3, 12], np.uint32), np.ones(2, np.float32), 1)], live, 1, 5, 1.0)
    with pytest.raises(ValueError):
        score_lists(10, [(np.array([3], np.uint32), np.ones(2, np.float32), 1)], live, 1, 5, 1.0)
    with pytest.raises(ValueError):
        score_lists(11, [], live, 1, 5, 1.0)


def test_phrase_matches_lances_iterators():
    # quick at 1, fox at 3: "quick fox" needs slop 1 (gap of one), "quick _ fox" matches exactly
    assert not phrase_matches([([1], 0), ([3], 1)], 0)
    assert phrase_matches([([1], 0), ([3], 1)], 1)
    assert phrase_matches([([1], 0), ([3], 2)], 0)
    assert not phrase_matches([([5], 0), ([3], 1)], 3)          # order matters
    assert phrase_matches([([0, 2], 0), ([0, 2], 1)], 1)          # "cat cat" in "cat x cat"
    assert phrase_matches([([4, 9], 0)], 0)


def test_phrase_filter_agrees_with_the_python_check():
    rng = np.random.default_rng(1)
    n = 60
    tokens, py = [], []
    for _ in range(3):
        docs = np.arange(n, dtype=np.uint32)
        pos = [np.sort(rng.choice(12, int(rng.integers(1, 4)), replace=False)).astype(np.uint32)
               for _ in range(n)]
        starts = np.concatenate(([0], np.cumsum([p.size for p in pos]))).astype(np.int64)
        tokens.append((docs, starts, np.concatenate(pos)))
        py.append(pos)
    qpos = np.array([0, 1, 3], np.int64)
    for slop in (0, 1, 2):
        got = phrase_filter(np.arange(n, dtype=np.int64), tokens, qpos, slop, -1)
        want = [phrase_matches([(py[t][d], qpos[t]) for t in range(3)], slop) for d in range(n)]
        assert got.tolist() == want
    first = phrase_filter(np.arange(n, dtype=np.int64), tokens, qpos, 2, 1)
    assert first.sum() == 1


def levenshtein(a, b):
    prev = list(range(len(a) + 1))
    for j, cb in enumerate(b, 1):
        cur = [j]
        for i, ca in enumerate(a, 1):
            cur.append(min(prev[i] + 1, cur[i - 1] + 1, prev[i - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def test_fuzzy_expansion_is_levenshtein_in_key_order():
    vocab = sorted({"quick", "quack", "quik", "fox", "box", "fax", "cafe", "café", "q", "", "quicker"})
    codes, offsets = code_points(vocab)
    for query in ("quik", "fox", "cafe", "x"):
        for k in (0, 1, 2):
            want = [i for i, t in enumerate(vocab) if levenshtein(query, t) <= k]
            assert within_distance(query, codes, offsets, k, "", 100) == want
    assert [vocab[i] for i in within_distance("fux", codes, offsets, 1, "fo", 10)] == ["fox"]
    assert len(within_distance("fox", codes, offsets, 2, "", 2)) == 2


def test_hits_rank_by_score_then_row():
    h = Hits.of([5, 1, 3, 9], [1.0, 2.0, 2.0, 0.5])
    assert h.ids.tolist() == [1, 3, 5, 9]
    top = h.top(2)
    assert top.ids.tolist() == [1, 3]
    assert h.top(2, offset=1).ids.tolist() == [3, 5]
    assert h.top(None).ids.tolist() == [1, 3, 5, 9]


def test_combining_hits():
    a = Hits.of([1, 2, 4], [1.0, 1.0, 1.0])
    b = Hits.of([2, 3], [0.5, 0.25])
    assert _sum(a, b, keep_a_only=True).scores.tolist() == [1.0, 1.5, 1.0]
    both = _sum(a, b, keep_a_only=False)
    assert both.ids.tolist() == [1, 2, 3, 4] and both.scores.tolist() == [1.0, 1.5, 0.25, 1.0]
    best = union_max([a, Hits.of([2], [3.0])])
    assert dict(zip(best.ids.tolist(), best.scores.tolist())) == {1: 1.0, 2: 3.0, 4: 1.0}
    big = np.arange(0, 10_000, 3, dtype=np.uint64)
    probe = np.arange(0, 10_000, 7, dtype=np.uint64)
    mask, pos = sorted_member(probe, big)
    assert mask.tolist() == (probe % 3 == 0).tolist()
    assert (big[pos[mask]] == probe[mask]).all()
    assert member(probe[:3], big)[0].tolist() == [True, False, False]


@pytest.mark.parametrize("na,nb", [(0, 5), (5, 0), (3, 100_000), (2_000, 50_000), (40_000, 30_000),
                                   (1, 1), (500, 500)])
def test_sorted_member_gallops_to_numpy_s_answer(na, nb):
    """The galloping merge equals numpy's membership for short and long probes alike."""
    rng = np.random.default_rng(na * 7 + nb)
    b = np.unique(rng.integers(0, 4 * max(nb, 1), nb, dtype=np.uint64))
    a = np.unique(np.concatenate([rng.choice(b, min(na // 2, b.size), replace=False) if b.size else
                                  np.array([], np.uint64),
                                  rng.integers(0, 4 * max(nb, 1) + 10, na - na // 2, dtype=np.uint64)]
                                 ).astype(np.uint64))
    mask, pos = sorted_member(a, b)
    assert mask.tolist() == np.isin(a, b).tolist()
    assert (b[pos[mask]] == a[mask]).all()
