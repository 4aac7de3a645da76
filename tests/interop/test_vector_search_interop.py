"""Exact nearest-neighbour search (no index): lancefmt returns pylance's rows, in pylance's
order, with its distances, over file versions and with stable row ids on and off."""
import numpy as np
import pyarrow as pa
import pytest

import lance
import lancefmt

N, D = 600, 16


def vec_table(rng, n=N, start=0):
    X = rng.random((n, D), dtype=np.float32)
    ids = np.arange(start, start + n)
    fsl = lambda a, t=None: pa.FixedSizeListArray.from_arrays(pa.array(a.ravel(), t), D)  # noqa: E731
    mv = pa.array([[list(X[i]), list(X[(i + 1) % n])] if i % 17 else ([] if i % 2 else None)
                   for i in range(n)], pa.list_(pa.list_(pa.float32(), D)))
    return pa.table({
        "id": ids, "cat": pa.array(ids % 5), "s": pa.array([f"s{i % 3}" for i in ids]),
        "vec": pa.array([None if i % 41 == 0 else list(X[i]) for i in range(n)], pa.list_(pa.float32(), D)),
        "v16": fsl(X.astype(np.float16)), "v64": fsl(X.astype(np.float64)),
        "u8": fsl((X * 255).astype(np.uint8)), "mv": mv}), X


@pytest.fixture(scope="module", params=[("2.0", False), ("2.1", True), ("2.2", False)],
                ids=["v2.0", "v2.1-stable", "v2.2"])
def both(request, tmp_path_factory):
    version, stable = request.param
    rng = np.random.default_rng(3)
    uri = str(tmp_path_factory.mktemp("vs") / "ds")
    lance.write_dataset(vec_table(rng)[0], uri, max_rows_per_file=200, data_storage_version=version,
                        enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 7 = 3")
    return lance.dataset(uri), lancefmt.dataset(uri), rng.random(D).astype(np.float32)


def same(a: pa.Table, b: pa.Table, exact=True):
    assert a.schema.names == b.schema.names
    assert a.drop_columns(["_distance"]).equals(b.drop_columns(["_distance"]))
    da, db = a["_distance"].to_numpy(), b["_distance"].to_numpy()
    if exact:
        assert da.tolist() == db.tolist()
    else:
        np.testing.assert_allclose(da, db, rtol=2e-5)


CASES = [
    dict(nearest={"column": "vec", "k": 7}),
    dict(nearest={"column": "vec", "k": 7, "metric": "dot"}, columns=["id"], with_row_id=True),
    dict(nearest={"column": "vec"}, columns=["id", "_distance"], with_row_address=True),
    dict(nearest={"column": "vec", "k": 9}, filter="cat = 2", columns=["id", "cat"]),
    dict(nearest={"column": "vec", "k": 9}, filter="cat = 2", prefilter=True, columns=["id"]),
    dict(nearest={"column": "vec", "k": 5}, columns=["_distance", "id"], limit=3, offset=1),
    dict(nearest={"column": "vec", "k": 5, "distance_range": (0.3, 0.6)}, columns=["id"]),
    dict(nearest={"column": "v64", "k": 6}, columns=["id"]),
    dict(nearest={"column": "vec", "k": 1000}, columns={"twice": "id * 2"}),
    # _rowid/_rowaddr named in columns keep their places; the legacy flags put them last
    dict(nearest={"column": "vec", "k": 4}, columns=["_rowid", "id"]),
    dict(nearest={"column": "vec", "k": 4}, columns=["_rowaddr", "id", "_rowid"], with_row_address=True),
    dict(nearest={"column": "vec", "k": 4}, columns=["_rowid", "id", "_distance"], with_row_id=True),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_exact_search_equals_pylances(both, case):
    pl, lf, q = both
    kw = dict(CASES[case])
    kw["nearest"] = {**kw["nearest"], "q": q}
    same(pl.to_table(**kw), lf.to_table(**kw))


def test_other_types_and_batches(both):
    pl, lf, q = both
    for nearest, exact in [({"column": "vec", "q": q, "metric": "cosine"}, False),
                           ({"column": "v16", "q": q}, False),
                           ({"column": "u8", "q": q * 255}, True),
                           ({"column": "mv", "q": [q, q[::-1]], "k": 8}, False),
                           ({"column": "mv", "q": q, "k": 8}, False),
                           ({"column": "vec", "q": np.stack([q, q[::-1], q * 2]), "k": 4}, True)]:
        kw = dict(nearest=nearest, columns=["id"], with_row_id=True)
        same(pl.to_table(**kw), lf.to_table(**kw), exact)
    kw = dict(nearest={"column": "vec", "q": [q, q[::-1]], "k": 3})
    assert lf.to_table(**kw).column_names[0] == "query_index"
    assert lf.scanner(**kw).count_rows() == pl.scanner(**kw).count_rows() == 6
    got = list(lf.to_batches(nearest={"column": "vec", "q": q, "k": 20}, columns=["id"], batch_size=8))
    assert [b.num_rows for b in got] == [8, 8, 4]


@pytest.mark.parametrize("nearest,err", [
    ({"column": "vec", "k": 0}, ValueError), ({"column": "vec", "q": [1.0, 2.0]}, ValueError),
    ({"column": "id"}, TypeError), ({"column": "nope"}, ValueError), ({"column": "VEC"}, ValueError),
    ({"column": "vec", "metric": "foo"}, ValueError), ({"column": "vec", "metric": "hamming"}, ValueError),
    ({"column": "u8", "metric": "l2"}, ValueError), ({"column": "vec", "bogus": 1}, TypeError),
    ({"column": "vec", "nprobes": 0}, ValueError), ({"column": "vec", "refine_factor": 0}, ValueError),
    ({"column": "vec", "minimum_nprobes": 3, "maximum_nprobes": 2}, ValueError),
    ({"column": "vec", "ef": 0}, ValueError), ({"column": "vec", "distance_range": (1,)}, ValueError),
])
def test_bad_queries_raise_pylances_error_types(both, nearest, err):
    pl, lf, q = both
    nearest = {"q": q, **nearest}
    for lib in (pl, lf):
        with pytest.raises(err):
            lib.to_table(nearest=nearest)
    with pytest.raises(lancefmt.LanceError):
        lf.to_table(nearest=nearest)


@pytest.mark.parametrize("index", [None, "IVF_FLAT"])
def test_fixed_shape_tensor_column(tmp_path, index):
    """A fixed_shape_tensor column is searched as its fixed-size-list storage, and a tensor
    scalar is a query vector, as in pylance."""
    rng = np.random.default_rng(5)
    tt = pa.fixed_shape_tensor(pa.float32(), [D])
    X = rng.random((300, D), dtype=np.float32)
    ext = pa.ExtensionArray.from_storage(tt, pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), D))
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": np.arange(300), "t": ext}), uri)
    if index:
        lance.dataset(uri).create_index("t", index, num_partitions=2)
    q = pa.ExtensionArray.from_storage(tt, pa.FixedSizeListArray.from_arrays(pa.array(X[7]), D))[0]
    for query in (q, X[11]):
        kw = dict(nearest={"column": "t", "q": query, "k": 5})
        want, got = lance.dataset(uri).to_table(**kw), lancefmt.dataset(uri).to_table(**kw)
        same(want, got, exact=False)
        assert got.schema == want.schema


def test_cast_list_f16_projection_as_pylance(both):
    """Lance's ``_cast_list_f16`` in a projection (next to a vector search)."""
    pl, lf, q = both
    kw = dict(nearest={"column": "vec", "q": q, "k": 5}, columns={"v": "vec", "h": "_cast_list_f16(vec)",
                                                                  "h32": "_cast_list_f16(v16)"})
    a, b = pl.to_table(**kw), lf.to_table(**kw)
    assert a.schema == b.schema and a.drop_columns(["_distance"]).equals(b.drop_columns(["_distance"]))
    for lib in (pl, lf):
        with pytest.raises(Exception, match="cast_list_f16 only supports"):
            lib.to_table(columns={"x": "_cast_list_f16(v64)"})
