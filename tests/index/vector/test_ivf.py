"""The IVF model, k-means, the quantizers and a segment's files, without a dataset."""
import json

import numpy as np
import pyarrow as pa
import pytest

from lancefmt.errors import CorruptFileError, InvalidArgumentError
from lancefmt.index.core.registry import RowIdMapping, TrainingData
from lancefmt.index.core.store import IndexStore
from lancefmt.index.vector import tensor
from lancefmt.index.vector.ivf import IvfModel, early_pruning, nearest_centroids, probe_counts
from lancefmt.index.vector.ivf_index import IvfIndex
from lancefmt.index.vector.kmeans import KMeansError, train_kmeans
from lancefmt.index.vector.quantizers import ProductQuantizer, ScalarQuantizer, rust_float
from lancefmt.index.vector.vector_type import VECTOR, kind_of


def blobs(rng, n=2000, dim=8, k=4):
    centers = rng.standard_normal((k, dim)).astype(np.float32) * 10
    labels = rng.integers(0, k, n)
    return (centers[labels] + rng.standard_normal((n, dim)).astype(np.float32)), centers


def test_tensor_round_trip_and_checks():
    a = np.arange(12, dtype=np.float16).reshape(3, 4)
    back = tensor.parse_tensor(tensor.tensor_bytes(a), ndim=2)
    assert back.dtype == np.float16 and np.array_equal(back, a)
    msg = tensor.to_tensor(a)
    msg.shape[0] = 4   # shape says more than the data holds
    with pytest.raises(CorruptFileError, match="holds 24 bytes"):
        tensor.from_tensor(msg, "x.idx")
    with pytest.raises(CorruptFileError):
        tensor.parse_tensor(b"\xff\xff\xff", "x.idx")
    for shape in ([0, 1 << 31], [(1 << 32) - 1, 0, (1 << 32) - 1, (1 << 32) - 1]):  # empty, absurd
        del msg.shape[:]
        msg.shape.extend(shape)
        msg.data = b""
        with pytest.raises(CorruptFileError, match="tensor of shape"):
            tensor.from_tensor(msg, "x.idx")


def test_kmeans_finds_separated_clusters():
    rng = np.random.default_rng(0)
    X, centers = blobs(rng)
    cents, loss = train_kmeans(X, 4, seed=1)
    # every true center has a trained centroid next to it
    d = ((centers[:, None, :] - cents[None, :, :]) ** 2).sum(-1).min(1)
    assert (d < 1.0).all() and loss > 0
    with pytest.raises(KMeansError):
        train_kmeans(X[:3], 4)


def test_nearest_centroids_short_and_long_vectors_agree_with_numpy():
    rng = np.random.default_rng(1)
    for dim in (4, 64):
        X = rng.standard_normal((3000, dim)).astype(np.float32)
        C = rng.standard_normal((37, dim)).astype(np.float32)
        labels, dists = nearest_centroids(X, C, "l2")
        full = ((X[:, None, :] - C[None]) ** 2).sum(-1)
        assert (labels == full.argmin(1)).mean() > 0.999
        np.testing.assert_allclose(dists, full.min(1), rtol=1e-3, atol=1e-3)


def test_probe_counts_follow_lances_early_pruning():
    d = np.array([1.0, 2.0, 6.9, 7.5, 100.0], np.float32)
    assert early_pruning(d, 10) == 3          # within 7x of the nearest
    assert early_pruning(d, 1) == 0           # 0.6x: none but the minimum
    assert probe_counts(d, 10, 1, None) == (3, 5)
    assert probe_counts(d, 10, 1, 2) == (2, 2)
    assert probe_counts(d, 100, 5, None) == (5, 5)
    # a dot index: every partition up to the maximum, as pylance 14 probes them
    assert probe_counts(-d, 1, 1, None, "dot") == (5, 5)
    assert probe_counts(d, 10, 1, 3, "dot") == (3, 3)


def test_sq_scales_like_lance_and_prints_bounds_like_serde():
    sq = ScalarQuantizer(2, 8, 0.0, 2.0)
    assert sq.scale(np.array([[0.0, 1.0], [2.0, 3.0]])).tolist() == [[0, 127], [255, 255]]
    assert rust_float(3.635883331298828e-06) == "3.635883331298828e-6"
    assert json.loads(sq.storage_metadata(2))["bounds"] == {"start": 0.0, "end": 2.0}


@pytest.mark.parametrize("bits", [4, 8])
def test_pq_codes_transpose_per_partition_and_back(bits):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((600, 8)).astype(np.float32)
    pq = ProductQuantizer.train(X, 4, bits, max_iters=5, seed=0)
    packed = pq.pack(pq.codes(X))
    assert packed.shape == (600, pq.width)
    offsets, lengths = np.array([0, 100, 350]), np.array([100, 250, 250])
    stored = pq.transpose(packed, offsets, lengths)
    assert np.array_equal(stored[100 * pq.width:100 * pq.width + 250], packed[100:350, 0])
    assert np.array_equal(pq.untranspose(stored, offsets, lengths), packed)
    with pytest.raises(InvalidArgumentError):
        ProductQuantizer.check(8, 3, 8)


@pytest.mark.parametrize("m,bits", [(4, 8), (8, 4), (2, 8)])
def test_pq_codes_are_each_sub_vectors_nearest_centroid(m, bits):
    """The fused encoder (every sub-vector in one Cython call) against numpy's argmin."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5000, 16)).astype(np.float32)
    pq = ProductQuantizer.train(X[:2000], m, bits, max_iters=3, seed=0)
    codes = pq.codes(X)
    sub = 16 // m
    book = pq.codebook.reshape(m, pq.ncent, sub)
    for j in range(m):
        full = ((X[:, None, j * sub:(j + 1) * sub] - book[j][None]) ** 2).sum(-1)
        assert (codes[:, j] == full.argmin(1)).mean() > 0.999


def test_vector_batches_drop_rows_with_nan_only():
    from lancefmt.index.vector.ivf_build import blocks, vector_batches
    X = np.arange(40, dtype=np.float32).reshape(10, 4)
    X[2, 1] = np.nan
    X[5, 0], X[5, 3] = np.inf, -np.inf    # sums to NaN: kept (no NaN in the row)
    X[7, 2] = np.inf
    b = pa.record_batch({"value": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), 4),
                         "_rowid": pa.array(np.arange(10, dtype=np.uint64))})
    (mat, ids), = vector_batches([b])
    assert ids.tolist() == [0, 1, 3, 4, 5, 6, 7, 8, 9]
    parts = [(X[:3], np.arange(3)), (X[3:5], np.arange(3, 5)), (X[5:], np.arange(5, 10))]
    joined = [(m.shape[0], r.tolist()) for m, r in blocks(parts, 4)]
    assert joined == [(5, [0, 1, 2, 3, 4]), (5, [5, 6, 7, 8, 9])]


def _training(rng, n=1500, dim=8):
    X, _ = blobs(rng, n, dim)
    ids = np.arange(n, dtype=np.uint64)
    t = pa.table({"value": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), dim),
                  "_rowid": ids, "_rowaddr": ids})
    return TrainingData.from_table(pa.field("vec", t["value"].type), t), X


@pytest.mark.parametrize("kind,params", [("IVF_FLAT", {}), ("IVF_SQ", {}),
                                         ("IVF_PQ", {"num_sub_vectors": 4})])
def test_segment_written_then_loaded_and_searched(tmp_path, kind, params):
    rng = np.random.default_rng(3)
    data, X = _training(rng)
    store = IndexStore(str(tmp_path / "seg"))
    details = VECTOR.train(data, store, {"index_type": kind, "num_partitions": 4, **params})
    assert kind_of(details) == kind and sorted(n for n, _ in store.written) == ["auxiliary.idx", "index.idx"]
    idx = IvfIndex.load(IndexStore(str(tmp_path / "seg")), details)
    assert idx.num_rows == 1500 and idx.ivf.lengths.sum() == 1500
    hits = idx.search_vectors(X[42], 5, minimum_nprobes=4, maximum_nprobes=4)
    assert hits.ids[0] == 42 and hits.probed == 4 and (np.diff(hits.dists) >= 0).all()
    mask = np.ones(1500, np.uint8)
    mask[np.flatnonzero(idx.row_ids == 42)] = 0
    assert 42 not in idx.search_vectors(X[42], 5, mask=mask).ids
    # compaction: ids move, dropped rows go
    dest = IndexStore(str(tmp_path / "moved"))
    mapping = RowIdMapping(np.arange(1500, dtype=np.uint64), np.arange(1500, dtype=np.uint64) + 5000,
                           np.array([42], np.uint64))
    idx.remap(mapping, dest)
    moved = IvfIndex.load(IndexStore(str(tmp_path / "moved")), details)
    assert moved.num_rows == 1499 and set(moved.row_ids.tolist()) == set(range(5000, 6500)) - {5042}


def test_inconsistent_files_are_corrupt_and_named(tmp_path):
    rng = np.random.default_rng(4)
    data, _ = _training(rng, 400)
    store = IndexStore(str(tmp_path / "seg"))
    VECTOR.train(data, store, {"index_type": "IVF_FLAT", "num_partitions": 2})
    # rewrite auxiliary.idx with partition lengths that do not cover its rows
    aux = store.read_table("auxiliary.idx")
    meta = store.schema_metadata("auxiliary.idx")
    bad = IvfModel(np.zeros((2, 8), np.float32), [0, 10], [10, 10]).to_proto(centroids=False)
    store.write_table("auxiliary.idx", aux, meta, [bad])
    with pytest.raises(CorruptFileError, match="auxiliary.idx") as e:
        IvfIndex.load(IndexStore(str(tmp_path / "seg")))
    assert "do not cover" in str(e.value)


def test_dot_kmeans_centroids_are_unit_vectors():
    """pylance 14 trains dot IVF centroids of unit length (spherical k-means); so does lancefmt."""
    from lancefmt.index.vector.kmeans import train_kmeans
    X = np.random.default_rng(3).standard_normal((600, 8)).astype(np.float32) * 5
    cents, _ = train_kmeans(X, 4, metric="dot", seed=1, max_iters=5)
    np.testing.assert_allclose(np.linalg.norm(cents, axis=1), 1.0, rtol=1e-5)
    l2, _ = train_kmeans(X, 4, metric="l2", seed=1, max_iters=5)
    assert not np.allclose(np.linalg.norm(l2, axis=1), 1.0)


def test_dot_kmeans_stops_at_tolerance_with_a_negative_loss(monkeypatch):
    """A dot loss (sum of 1 - x.c) is negative for long vectors; k-means still stops once it
    improves by less than the tolerance, rather than running every iteration."""
    from lancefmt.index.vector import kmeans
    X = np.random.default_rng(4).standard_normal((2000, 8)).astype(np.float32) * 10 + 5
    calls = []
    real = kmeans.nearest_centroids
    monkeypatch.setattr(kmeans, "nearest_centroids", lambda *a: calls.append(1) or real(*a))
    kmeans.train_kmeans(X, 4, metric="dot", seed=1, max_iters=50)
    assert len(calls) < 50
