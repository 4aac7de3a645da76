"""IVF_HNSW_FLAT, IVF_HNSW_SQ and IVF_HNSW_PQ both ways: pylance searches the graphs lancefmt
builds and lancefmt searches pylance's, with comparable recall; a graph survives deletes,
compaction and deltas."""
import numpy as np
import pytest

import lance
import lancefmt

from ranked_answers import assert_same_ranking
from test_vector_index_interop import D, clustered, ids_of, recall

KINDS = [("IVF_HNSW_FLAT", {}), ("IVF_HNSW_SQ", {}), ("IVF_HNSW_PQ", {"num_sub_vectors": 4})]


def recalls(uri, queries, metric="l2", ef=None):
    pl, lf = lance.dataset(uri), lancefmt.dataset(uri)
    got = []
    for q in queries:
        nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 2, "ef": ef}
        exact = ids_of(pl.to_table(nearest={**nearest, "use_index": False, "metric": metric}))
        got.append((recall(ids_of(pl.to_table(nearest=nearest)), exact),
                    recall(ids_of(lf.to_table(nearest=nearest)), exact)))
    return np.mean(got, axis=0)


@pytest.mark.parametrize("kind,kw", KINDS, ids=[k for k, _ in KINDS])
def test_hnsw_graphs_both_ways(tmp_path, kind, kw):
    rng = np.random.default_rng(21)
    table, _ = clustered(rng, 1500)
    queries = rng.standard_normal((8, D)).astype(np.float32)
    out = {}
    for builder in (lance, lancefmt):
        uri = str(tmp_path / builder.__name__)
        lance.write_dataset(table, uri, max_rows_per_file=500)
        builder.dataset(uri).create_index("vec", kind, num_partitions=2, m=8, ef_construction=60, **kw)
        pl = lance.dataset(uri)
        assert pl.describe_indices()[0].index_type == kind
        assert "ANNIvfPartition" in pl.scanner(nearest={"column": "vec", "q": queries[0]}).explain_plan()
        assert pl.stats.index_stats("vec_idx")["indices"][0]["sub_index"]["index_type"] == "HNSW"
        out[builder.__name__] = recalls(uri, queries, ef=40)
    floor = {"IVF_HNSW_FLAT": 0.85, "IVF_HNSW_SQ": 0.75, "IVF_HNSW_PQ": 0.3}[kind]
    theirs_pl, theirs_lf = out["lance"]       # pylance's graph: searched by each library
    ours_pl, ours_lf = out["lancefmt"]        # lancefmt's graph
    assert min(theirs_lf, ours_pl, ours_lf) >= floor, out
    assert abs(theirs_pl - theirs_lf) <= 0.1 and abs(ours_pl - ours_lf) <= 0.1, out


@pytest.fixture(scope="module", params=KINDS, ids=[k for k, _ in KINDS])
def pylance_graph(request, tmp_path_factory):
    """A pylance-built IVF_HNSW index large enough that a beam of 10-15 does not find the
    exact answers (so every step of the walk shows in them)."""
    kind, kw = request.param
    rng = np.random.default_rng(22)
    uri = str(tmp_path_factory.mktemp(kind) / "ds")
    lance.write_dataset(clustered(rng, 6000)[0], uri)
    lance.dataset(uri).create_index("vec", kind, num_partitions=2, m=6, ef_construction=40, **kw)
    return uri, rng.standard_normal((40, D)).astype(np.float32) * 2


@pytest.mark.parametrize("ef", [None, 10, 24])
@pytest.mark.parametrize("where", [None, "cat != 1", "id < 500"])
def test_hnsw_answers_equal_pylances_on_its_graph(pylance_graph, ef, where):
    """The same walk as pylance's (entry point, greedy descent to level 1, the beam re-reading
    its farthest result after every neighbour, the default ef k + k/2, the flat search below a
    tenth of a partition allowed by a prefilter): on pylance's graph, lancefmt's answers are
    pylance's for every query. Filters: none, most rows (the beam with a mask), a few rows
    (the flat search)."""
    uri, queries = pylance_graph
    pl, lf = lance.dataset(uri), lancefmt.dataset(uri)
    exact_hits = 0
    for q in queries:
        nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 2, "ef": ef}
        kw = {"filter": where, "prefilter": True} if where else {}
        a = pl.to_table(nearest=nearest, columns=["id", "_distance"], **kw)
        b = lf.to_table(nearest=nearest, columns=["id", "_distance"], **kw)
        assert_same_ranking(a, b)
        exact = pl.to_table(nearest={**nearest, "use_index": False}, columns=["id"], **kw)
        exact_hits += ids_of(a) == ids_of(exact)
    if where is None and ef != 24:
        assert exact_hits < len(queries)   # the beam is narrow enough to miss some answers


@pytest.mark.parametrize("ef,refine", [(9, None), (10, None), (15, 2), (20, 2)])
def test_hnsw_beam_narrower_than_k_is_refused_as_pylance(pylance_graph, ef, refine):
    """pylance refuses ``ef`` below k times the refine factor (a ValueError: ArrowInvalid
    there, InvalidArgumentError here) and answers otherwise."""
    uri, queries = pylance_graph
    nearest = {"column": "vec", "q": queries[0], "k": 10, "nprobes": 2, "ef": ef,
               "refine_factor": refine}
    got = []
    for lib in (lance, lancefmt):
        try:
            got.append(lib.dataset(uri).to_table(nearest=nearest, columns=["id"]).num_rows)
        except ValueError as e:
            assert "ef must be greater than or equal to k" in str(e)
            got.append("refused")
    assert got[0] == got[1] == ("refused" if ef < 10 * (refine or 1) else 10), got


def test_hnsw_maintenance(tmp_path):
    rng = np.random.default_rng(23)
    uri = str(tmp_path / "ds")
    table, centers = clustered(rng, 900)
    lancefmt.write_dataset(table, uri, max_rows_per_file=300)
    ds = lancefmt.dataset(uri)
    ds.create_index("vec", "IVF_HNSW_SQ", num_partitions=2, m=8)
    ds.insert(clustered(rng, 200, 900, centers)[0])
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    ds.delete("id % 4 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=2000)
    pl = lance.dataset(uri)
    pl.validate()
    stats = pl.stats.index_stats("vec_idx")
    assert stats["num_unindexed_rows"] == 0 and stats["indices"][0]["sub_index"]["params"]["m"] == 8
    q = rng.standard_normal(D).astype(np.float32)
    nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 2, "ef": 64}
    a, b = pl.to_table(nearest=nearest), lancefmt.dataset(uri).to_table(nearest=nearest)
    assert all(i % 4 for i in ids_of(b)) and len(set(ids_of(a)) & set(ids_of(b))) >= 8
    assert recall(ids_of(b), ids_of(pl.to_table(nearest={**nearest, "use_index": False}))) >= 0.7
