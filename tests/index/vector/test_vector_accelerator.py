"""``accelerator=`` as pylance takes it: IVF_PQ trained and assigned with torch on the device,
the files laid out as the CPU build's and searched by pylance with the CPU build's recall;
without torch a MissingDependencyError naming the extra; a bad device string refused; other
types built on the CPU. Tests that run torch are skipped only where torch is not installed
(the device is ``torch.device("cpu")``: the machines have no GPU)."""
import logging
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.file.reader import LanceFileReader
from lancefmt.indices import IndicesBuilder
from lancefmt.errors import InvalidArgumentError, LanceError, MissingDependencyError
from lancefmt.index.vector import accelerator as accel
from lancefmt.index.vector import ivf_build

D, N = 16, 3000


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((12, D)).astype(np.float32) * 4
    x = (centers[rng.integers(0, 12, N)] + rng.standard_normal((N, D))).astype(np.float32)
    return pa.table({"id": np.arange(N), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), D)}), x


def _ds(tmp_path, table, name="ds"):
    return lancefmt.write_dataset(table, str(tmp_path / name))


PQ = dict(num_partitions=6, num_sub_vectors=4, max_iters=10)


def test_without_torch_a_missing_dependency_error_names_the_extra(tmp_path, data, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)   # ``import torch`` fails as if absent
    ds = _ds(tmp_path, data[0])
    with pytest.raises(MissingDependencyError, match=r"lancefmt\[torch\]") as e:
        ds.create_index("vec", "IVF_PQ", accelerator="cuda", **PQ)
    assert isinstance(e.value, ImportError) and isinstance(e.value, LanceError)
    assert lancefmt.dataset(ds.uri).version == ds.version and not ds.describe_indices()
    builder = IndicesBuilder(ds, "vec")
    with pytest.raises(MissingDependencyError, match="torch"):
        builder.train_ivf(4, sample_rate=16, accelerator="cuda")


@pytest.mark.parametrize("bad", ["gpu", "cuda0", "tpu", "CPU"])
def test_a_device_string_pylance_refuses_is_refused(tmp_path, data, bad):
    ds = _ds(tmp_path, data[0])
    with pytest.raises(InvalidArgumentError, match="only support 'cuda' or 'mps' as accelerator") as e:
        ds.create_index("vec", "IVF_PQ", accelerator=bad, **PQ)
    assert isinstance(e.value, ValueError) and not ds.describe_indices()


@pytest.mark.parametrize("kind", ["IVF_FLAT", "IVF_SQ", "IVF_HNSW_SQ"])
def test_other_types_fall_back_to_the_cpu_build_with_pylances_warning(tmp_path, data, monkeypatch,
                                                                      caplog, kind):
    monkeypatch.setitem(sys.modules, "torch", None)   # not needed: nothing runs on the device
    q = data[1][7]
    nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
    got = []
    for acc in (None, "cuda"):
        ds = _ds(tmp_path, data[0], f"ds_{acc}")
        with caplog.at_level(logging.WARNING):
            ds.create_index("vec", kind, num_partitions=4, accelerator=acc)
        got.append(lance.dataset(ds.uri).to_table(nearest=nearest)["id"].to_pylist())
    assert f"Index type {kind} does not support GPU acceleration; falling back to CPU" in caplog.text
    assert got[0] == got[1] and len(got[0]) == 10


def test_cuda_without_a_cuda_device_is_refused_before_any_work(tmp_path, data):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    ds = _ds(tmp_path, data[0])
    with pytest.raises(InvalidArgumentError, match="no CUDA device"):
        ds.create_index("vec", "IVF_PQ", accelerator="cuda:0", **PQ)
    assert not ds.describe_indices()


def _recall(pl, x, queries, metric, k=10):
    got = []
    for v in queries:
        ann = pl.to_table(nearest={"column": "vec", "q": v, "k": k, "nprobes": 3}, columns=["id"])
        exact = pl.to_table(nearest={"column": "vec", "q": v, "k": k, "use_index": False}, columns=["id"])
        got.append(len(set(ann["id"].to_pylist()) & set(exact["id"].to_pylist())) / k)
    return float(np.mean(got))


def _layout(uri):
    """(file names, and per file: schema, metadata keys, number of rows) of the one index."""
    (base,) = (Path(uri) / "_indices").iterdir()
    out = [sorted(f.name for f in base.iterdir())]
    for name in ("auxiliary.idx", "index.idx"):
        r = LanceFileReader(str(base / name))
        out.append((r.schema.remove_metadata(), sorted(r.schema_metadata), r.num_rows))
    return out


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_ivf_pq_on_a_torch_device_is_read_by_pylance_with_the_cpu_builds_recall(tmp_path, data,
                                                                               monkeypatch, metric):
    torch = pytest.importorskip("torch")
    table, x = data
    # the device build trains and assigns with torch: the CPU k-means and assignment never run
    calls = {"nearest": 0}
    real = accel._Ops.nearest

    def counted(self, *a):
        calls["nearest"] += 1
        return real(self, *a)

    monkeypatch.setattr(accel._Ops, "nearest", counted)
    queries = x[np.random.default_rng(9).choice(N, 20, replace=False)] + 0.05
    recalls = {}
    for acc in (None, torch.device("cpu")):
        ds = _ds(tmp_path, table, f"ds_{acc is not None}")
        if acc is not None:
            monkeypatch.setattr(ivf_build, "train_kmeans", _never)
            monkeypatch.setattr(ivf_build, "nearest_centroids", _never)
        ds.create_index("vec", "IVF_PQ", metric=metric, accelerator=acc, **PQ)
        pl = lance.dataset(ds.uri)
        (desc,) = pl.describe_indices()
        assert desc.index_type == "IVF_PQ" and desc.num_rows_indexed == N
        assert "ANNIvfPartition" in pl.scanner(nearest={"column": "vec", "q": queries[0], "k": 5}).explain_plan()
        recalls[acc is not None] = _recall(pl, x, queries, metric)
        # lancefmt searches it too, with pylance's answer
        lf = lancefmt.dataset(ds.uri).to_table(nearest={"column": "vec", "q": queries[1], "k": 10, "nprobes": 3})
        assert lf["id"].to_pylist() == pl.to_table(
            nearest={"column": "vec", "q": queries[1], "k": 10, "nprobes": 3})["id"].to_pylist()
    assert calls["nearest"] > PQ["num_sub_vectors"]
    assert recalls[True] >= recalls[False] - 0.1, recalls
    assert recalls[True] > 0.5, recalls
    assert _layout(str(tmp_path / "ds_False")) == _layout(str(tmp_path / "ds_True"))


def _never(*a, **k):
    raise AssertionError("the CPU kernel ran in a device build")


def test_indices_builder_trains_and_assigns_on_a_torch_device(tmp_path, data):
    torch = pytest.importorskip("torch")
    table, x = data
    ds = _ds(tmp_path, table)
    builder = IndicesBuilder(ds, "vec")
    ivf = builder.train_ivf(6, sample_rate=64, max_iters=10, accelerator=torch.device("cpu"))
    cents = np.stack(ivf.centroids.to_numpy(zero_copy_only=False))
    assert cents.shape == (6, D) and np.isfinite(cents).all()
    out = builder.assign_ivf_partitions(ivf, torch.device("cpu"), output_uri=str(tmp_path / "parts"))
    parts = lance.dataset(out).to_table().sort_by("row_id")
    assert parts.schema.field("row_id").type == pa.uint64() and parts.schema.field("partition").type == pa.uint32()
    want = ((x[:, None, :] - cents[None]) ** 2).sum(-1).argmin(1)
    assert parts["row_id"].to_pylist() == list(range(N))
    assert (parts["partition"].to_numpy() == want).mean() > 0.999
