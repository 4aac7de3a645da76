"""pylance's IndicesBuilder steps, mixed between the two libraries: models saved by one load in
the other; given the same models, lancefmt's transform writes pylance's partitions and PQ
codes; shuffled files of either load as an index that both search with the same answers."""
import sys

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance.indices as pl_indices
import lancefmt
import lancefmt.indices as lf_indices
from lancefmt.file import LanceFileReader

D = 32


@pytest.fixture
def uri(tmp_path):
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((6, D)).astype(np.float32) * 3
    x = centers[rng.integers(0, 6, 1200)] + rng.standard_normal((1200, D)).astype(np.float32)
    t = pa.table({"id": np.arange(1200), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), D)})
    out = str(tmp_path / "ds")
    lance.write_dataset(t, out, max_rows_per_file=400)
    return out


def rows(path):
    t = LanceFileReader(path).read_all().to_table()
    if "partitions" in t.column_names:
        t = pa.table(t.column("partitions").combine_chunks().flatten())
    return t.sort_by("_rowid")


def test_models_saved_by_either_load_in_the_other(tmp_path, uri):
    ivf = pl_indices.IndicesBuilder(lance.dataset(uri), "vec").train_ivf(8, sample_rate=4)
    pq = pl_indices.IndicesBuilder(lance.dataset(uri), "vec").train_pq(ivf, 4, sample_rate=2)
    ivf.save(str(tmp_path / "ivf"))
    pq.save(str(tmp_path / "pq"))
    a, b = lf_indices.IvfModel.load(str(tmp_path / "ivf")), lf_indices.PqModel.load(str(tmp_path / "pq"))
    assert (a.centroids, a.distance_type) == (ivf.centroids, "l2")
    assert (b.codebook, b.num_subvectors, b.num_bits) == (pq.codebook, 4, 8)
    lf = lf_indices.IndicesBuilder(lancefmt.dataset(uri), "vec")
    mine_ivf = lf.train_ivf(8, sample_rate=4, distance_type="cosine")
    mine_pq = lf.train_pq(mine_ivf, 4, sample_rate=2)
    assert mine_pq.codebook.type == pa.list_(pa.float32(), D) and len(mine_pq.codebook) == 256
    mine_ivf.save(str(tmp_path / "ivf2"))
    mine_pq.save(str(tmp_path / "pq2"))
    c = pl_indices.IvfModel.load(str(tmp_path / "ivf2"))
    d = pl_indices.PqModel.load(str(tmp_path / "pq2"))
    assert (c.centroids, c.distance_type) == (mine_ivf.centroids, "cosine")
    assert (d.codebook, d.num_subvectors) == (mine_pq.codebook, 4)


def test_transform_shuffle_load_both_ways(tmp_path, uri):
    plb = pl_indices.IndicesBuilder(lance.dataset(uri), "vec")
    ivf = plb.train_ivf(8, sample_rate=4)
    pq = plb.train_pq(ivf, 4, sample_rate=2)
    frags = lance.dataset(uri).get_fragments()
    plb.transform_vectors(ivf, pq, str(tmp_path / "pl_tr"), fragments=frags[:2])
    lfb = lf_indices.IndicesBuilder(lancefmt.dataset(uri), "vec")
    lfb.transform_vectors(ivf, pq, str(tmp_path / "lf_tr"), fragments=lancefmt.dataset(uri).get_fragments()[:2])
    theirs, ours = rows(str(tmp_path / "pl_tr")), rows(str(tmp_path / "lf_tr"))
    assert ours.num_rows == 800 and ours.schema == theirs.schema
    assert ours.column("_rowid").equals(theirs.column("_rowid"))
    # the same partition and the same code, but for rows equidistant in float rounding
    same = np.mean(ours.column("__ivf_part_id").to_numpy() == theirs.column("__ivf_part_id").to_numpy())
    codes_same = np.mean(np.stack(ours.column("__pq_code").to_numpy(zero_copy_only=False)) ==
                         np.stack(theirs.column("__pq_code").to_numpy(zero_copy_only=False)))
    assert same >= 0.99 and codes_same >= 0.98

    # the rest of the rows by the other library; shuffled files of both into one index
    plb.transform_vectors(ivf, pq, str(tmp_path / "pl_tr3"), fragments=frags[2:])
    pl_sorted = plb.shuffle_transformed_vectors(["pl_tr3"], str(tmp_path), ivf, "plsorted")
    lf_sorted = lfb.shuffle_transformed_vectors(["lf_tr"], str(tmp_path), ivf, "lfsorted")
    assert rows(str(tmp_path / lf_sorted[0])).equals(rows(str(tmp_path / "lf_tr")))
    lfb.load_shuffled_vectors(lf_sorted + pl_sorted, str(tmp_path), ivf, pq, index_name="steps")
    pl, lf = lance.dataset(uri), lancefmt.dataset(uri)
    [desc] = pl.describe_indices()
    assert (desc.name, desc.num_rows_indexed, pl.list_indices()[0]["type"]) == ("steps", 1200, "IVF_PQ")
    q = np.random.default_rng(3).standard_normal(D).astype(np.float32)
    nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 8}
    assert "ANNIvfPartition" in pl.scanner(nearest=nearest).explain_plan()
    a = pl.to_table(nearest=nearest, columns=["id", "_distance"])
    b = lf.to_table(nearest=nearest, columns=["id", "_distance"])
    assert a["id"].equals(b["id"])
    np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5)

    # and pylance loads lancefmt's shuffled file
    uri2 = str(tmp_path / "ds2")
    lance.write_dataset(lance.dataset(uri).to_table(), uri2, max_rows_per_file=400)
    lfb2 = lf_indices.IndicesBuilder(lancefmt.dataset(uri2), "vec")
    lfb2.transform_vectors(ivf, pq, str(tmp_path / "all_tr"))
    names = lfb2.shuffle_transformed_vectors(["all_tr"], str(tmp_path), ivf, "all")
    # pylance writes the legacy single-file IVF_PQ layout here; lancefmt searches it as pylance
    pl_indices.IndicesBuilder(lance.dataset(uri2), "vec").load_shuffled_vectors(names, str(tmp_path), ivf, pq)
    lance.dataset(uri2).delete("id % 7 = 0")
    for metric_q in (q, -q):
        near = {**nearest, "q": metric_q}
        a = lance.dataset(uri2).to_table(nearest=near, columns=["id", "_distance"], filter="id > 100")
        b = lancefmt.dataset(uri2).to_table(nearest=near, columns=["id", "_distance"], filter="id > 100")
        assert a["id"].equals(b["id"]) and 0 not in np.asarray(b["id"]) % 7
        np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5)
    [seg] = lancefmt.dataset(uri2).describe_indices()[0].segments
    path = tmp_path / "ds2" / "_indices" / seg.uuid / "index.idx"
    raw = path.read_bytes()
    path.write_bytes(raw[:-40] + raw[-16:])   # the message cut short
    with pytest.raises(lancefmt.CorruptFileError, match="index.idx"):
        lancefmt.dataset(uri2).to_table(nearest=nearest)


def test_bad_arguments_as_pylance(uri, monkeypatch):
    lf = lf_indices.IndicesBuilder(lancefmt.dataset(uri), "vec")
    ivf = lf.train_ivf(4, sample_rate=4)
    with pytest.raises(ValueError, match="must be divisible by num_subvectors .* without remainder"):
        lf.train_pq(ivf, 5, sample_rate=2)
    with pytest.raises(ValueError, match="not enough rows"):
        lf.train_ivf(100, sample_rate=16)
    with pytest.raises(ValueError, match="Distance type"):
        lf.train_ivf(4, distance_type="manhattan")
    with pytest.raises(KeyError):
        lf_indices.IndicesBuilder(lancefmt.dataset(uri), "nope")
    with pytest.raises(TypeError):
        lf_indices.IndicesBuilder(lancefmt.dataset(uri), "id")
    monkeypatch.setitem(sys.modules, "torch", None)   # as where torch is not installed
    with pytest.raises(ImportError, match="torch"):
        lf.train_ivf(4, sample_rate=4, accelerator="cuda")


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_legacy_ivf_pq_file_both_ways(tmp_path, uri, metric):
    """index_file_version="Legacy": the single-file IVF_PQ layout, built by either library and
    searched by both with the same rows and distances."""
    q = np.random.default_rng(5).standard_normal(D).astype(np.float32)
    nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 4}
    for builder in (lancefmt, lance):
        builder.dataset(uri).create_index("vec", "IVF_PQ", num_partitions=4, num_sub_vectors=8,
                                          metric=metric, replace=True,
                                          index_file_version=pl_indices.IndexFileVersion.LEGACY)
        pl, lf = lance.dataset(uri), lancefmt.dataset(uri)
        assert lf.stats.index_stats("vec_idx")["indices"][0]["index_file_version"] == "Legacy"
        assert pl.stats.index_stats("vec_idx")["indices"][0]["index_file_version"] == "Legacy"
        assert "ANNIvfPartition" in pl.scanner(nearest=nearest).explain_plan()
        a = pl.to_table(nearest=nearest, columns=["id", "_distance"])
        b = lf.to_table(nearest=nearest, columns=["id", "_distance"])
        assert a["id"].equals(b["id"]), builder.__name__
        np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5, atol=1e-6)


def test_lancefmt_maintains_a_legacy_index(tmp_path, uri):
    """Appends, deletes, a delta and a compaction over pylance's legacy IVF_PQ file: pylance
    validates every version and both libraries answer alike (new segments are V3)."""
    lance.dataset(uri).create_index("vec", "IVF_PQ", num_partitions=4, num_sub_vectors=8,
                                    index_file_version="Legacy")
    ds = lancefmt.dataset(uri)
    rng = np.random.default_rng(8)
    extra = rng.standard_normal((90, D)).astype(np.float32)
    ds.insert(pa.table({"id": np.arange(1200, 1290), "vec": pa.FixedSizeListArray.from_arrays(pa.array(extra.ravel()), D)}))
    ds.delete("id % 7 = 0")
    nearest = {"column": "vec", "q": extra[0], "k": 10, "nprobes": 4}
    for step in ("appended", "delta", "compacted"):
        if step == "delta":
            ds.optimize.optimize_indices(num_indices_to_merge=0)
        if step == "compacted":
            ds.optimize.compact_files(target_rows_per_fragment=5000)
        pl = lance.dataset(uri)
        pl.validate()
        a = pl.to_table(nearest=nearest, columns=["id", "_distance"])
        b = lancefmt.dataset(uri).to_table(nearest=nearest, columns=["id", "_distance"])
        assert a["id"].equals(b["id"]) and a["id"][0].as_py() == 1200, step
        np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5)
    versions = [i["index_file_version"] for i in lance.dataset(uri).stats.index_stats("vec_idx")["indices"]]
    assert versions == ["V3", "V3"]
