"""Vector indices kept up to date by lancefmt: deltas and merges by ``optimize_indices`` (the
model kept, or retrained), compaction remaps, deletes and updates. After each step pylance
validates the dataset, still searches through the index, and lancefmt's answers equal its."""
import numpy as np
import pytest

import lance
import lancefmt

from test_vector_index_interop import D, clustered, ids_of


def same_answers(uri, q, step):
    pl, lf = lance.dataset(uri), lancefmt.dataset(uri)
    pl.validate()
    nearest = {"column": "vec", "q": q, "k": 10}
    a = pl.to_table(nearest=nearest, columns=["id", "_distance"], with_row_id=True)
    b = lf.to_table(nearest=nearest, columns=["id", "_distance"], with_row_id=True)
    assert a.drop_columns(["_distance"]).equals(b.drop_columns(["_distance"])), step
    np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5)
    assert "ANNIvfPartition" in pl.scanner(nearest=nearest).explain_plan(), step
    return a


@pytest.mark.parametrize("kind,kw", [("IVF_PQ", {"num_sub_vectors": 4}), ("IVF_SQ", {})])
@pytest.mark.parametrize("stable", [False, True])
def test_maintenance_keeps_indices_valid_and_answers_equal(tmp_path, kind, kw, stable):
    rng = np.random.default_rng(11)
    uri = str(tmp_path / "ds")
    table, centers = clustered(rng, 1200)
    lancefmt.write_dataset(table, uri, max_rows_per_file=300, enable_stable_row_ids=stable)
    ds = lancefmt.dataset(uri)
    ds.create_index("vec", kind, num_partitions=4, **kw)
    q = rng.standard_normal(D).astype(np.float32)
    model = ds.stats.index_stats("vec_idx")["indices"][0]["centroids"]

    ds.insert(clustered(rng, 300, 1200, centers)[0])
    assert lance.dataset(uri).stats.index_stats("vec_idx")["num_unindexed_rows"] == 300
    same_answers(uri, q, "appended")
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    stats = lance.dataset(uri).stats.index_stats("vec_idx")
    assert stats["num_unindexed_rows"] == 0 and len(stats["indices"]) == 2
    assert stats["indices"][1]["centroids"] == model          # the delta keeps the model
    same_answers(uri, q, "delta")

    ds.delete("id % 3 = 0")
    got = same_answers(uri, q, "deleted")
    assert all(i % 3 for i in ids_of(got))
    ds.optimize.compact_files(target_rows_per_fragment=2000)   # remaps both segments
    assert lance.dataset(uri).stats.index_stats("vec_idx")["num_unindexed_rows"] == 0
    same_answers(uri, q, "compacted")
    ds.update({"vec": "[" + ",".join(["9.0"] * D) + "]"}, where="id = 7")
    far = np.full(D, 9.0, np.float32)
    assert ids_of(lancefmt.dataset(uri).to_table(nearest={"column": "vec", "q": far, "k": 1})) == [7]
    same_answers(uri, far, "updated")
    ds.optimize.optimize_indices(retrain=True)
    stats = lance.dataset(uri).stats.index_stats("vec_idx")
    assert len(stats["indices"]) == 1 and stats["indices"][0]["centroids"] != model
    same_answers(uri, q, "retrained")


def test_pylance_compaction_of_a_lancefmt_index(tmp_path):
    rng = np.random.default_rng(12)
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(clustered(rng, 900)[0], uri, max_rows_per_file=150)
    lancefmt.dataset(uri).create_index("vec", "IVF_FLAT", num_partitions=3)
    pl = lance.dataset(uri)
    pl.delete("id < 100")
    pl.optimize.compact_files(target_rows_per_fragment=1000)
    q = rng.standard_normal(D).astype(np.float32)
    got = same_answers(uri, q, "pylance compacted")
    assert min(ids_of(got)) >= 100


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("column", ["vec", "cat"])
def test_update_keeps_or_drops_coverage_as_pylance(tmp_path, stable, column):
    """An update rewrites the rows it changes into a new fragment: an index on an updated
    column stops covering it; with stable row ids, an index on other columns covers the moved
    rows still: the vector index when ``cat`` changes (pylance 14 extends no BTREE)."""
    rng = np.random.default_rng(13)
    table = clustered(rng, 600)[0]
    value = {"vec": "[" + ",".join(["9.0"] * D) + "]", "cat": "cat + 10"}[column]
    seen = {}
    for lib in (lance, lancefmt):
        uri = str(tmp_path / lib.__name__)
        lance.write_dataset(table, uri, max_rows_per_file=200, enable_stable_row_ids=stable)
        lance.dataset(uri).create_index("vec", "IVF_FLAT", num_partitions=2)
        lance.dataset(uri).create_scalar_index("cat", "BTREE")
        lib.dataset(uri).update({column: value}, where="id = 7 or id = 450")
        pl = lance.dataset(uri)
        seen[lib.__name__] = [(sorted(d.segments[0].fragment_ids), pl.stats.index_stats(d.name)["num_unindexed_rows"])
                              for d in sorted(pl.describe_indices(), key=lambda d: d.name)]
        q = np.full(D, 9.0, np.float32)
        for kw in ({"nearest": {"column": "vec", "q": q, "k": 3}}, {"filter": "cat >= 10"}):
            assert lancefmt.dataset(uri).to_table(columns=["id"], **kw).equals(
                pl.to_table(columns=["id"], **kw)), kw
    assert seen["lancefmt"] == seen["lance"]
    moved_kept = [n == 0 for _, n in seen["lance"]]
    assert moved_kept == [False, stable and column == "cat"]      # [cat_idx, vec_idx]
