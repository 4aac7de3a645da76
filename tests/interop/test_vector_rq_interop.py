"""IVF_RQ (RaBitQ) indices both ways: lancefmt answers pylance's with pylance's rows and
distances (so its recall), across fragments, after deletes, with a prefilter and appended
rows; pylance searches the ones lancefmt builds (ANNIvfPartition) with the recall of its own,
through appends, optimize_indices and compaction. l2, cosine and dot (pylance 14's own dot
estimate and gate, fitted to its answers: see rabitq._dot_terms)."""
import numpy as np
import pyarrow as pa
import pytest

import lance
import lancefmt
from ranked_answers import assert_same_ranking

D = 32


def clustered(rng, n, start=0):
    centers = np.random.default_rng(99).standard_normal((8, D)).astype(np.float32) * 3
    X = centers[rng.integers(0, 8, n)] + rng.standard_normal((n, D)).astype(np.float32)
    ids = np.arange(start, start + n)
    return pa.table({"id": ids, "cat": ids % 5,
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), D)}), X


def same_answers(pl, lf, nearest, **kw):
    a = pl.to_table(nearest=nearest, columns=["id", "_distance"], **kw)
    b = lf.to_table(nearest=nearest, columns=["id", "_distance"], **kw)
    assert_same_ranking(a, b, rtol=1e-4, atol=1e-3)
    return a["id"].to_pylist()


@pytest.mark.parametrize("num_bits", [1, 2, 3, 4, None, 7, 9],
                         ids=["1bit", "2bit", "3bit", "4bit", "default", "7bit", "9bit"])
@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_lancefmt_answers_pylance_rq_as_pylance(tmp_path, num_bits, metric):
    rng = np.random.default_rng(3)
    uri = str(tmp_path / "ds")
    table, X = clustered(rng, 1000)
    lance.write_dataset(table, uri, max_rows_per_file=400)
    kw = {} if num_bits is None else {"num_bits": num_bits}
    lance.dataset(uri).create_index("vec", "IVF_RQ", num_partitions=4, metric=metric, **kw)
    pl, lf = lance.dataset(uri), lancefmt.dataset(uri)
    stats = [d.stats.index_stats("vec_idx")["indices"][0] for d in (pl, lf)]
    assert stats[0]["sub_index"] == stats[1]["sub_index"]
    hits = 0   # recall@10 of the (identical) answers against pylance's exact search
    for i in range(6):
        q = X[rng.integers(0, len(X))] + rng.standard_normal(D).astype(np.float32) * 0.5
        nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
        assert "ANNIvfPartition" in lf.scanner(nearest=nearest).explain_plan()
        got = same_answers(pl, lf, nearest)
        exact = pl.to_table(nearest={**nearest, "use_index": False, "metric": metric},
                            columns=["id"])["id"]
        hits += len(set(got) & set(exact.to_pylist()))
        same_answers(pl, lf, {**nearest, "k": 25, "maximum_nprobes": 4})
        same_answers(pl, lf, {"column": "vec", "q": q, "k": 10})   # default probing
        same_answers(pl, lf, nearest, filter="cat = 2", prefilter=True)
    assert hits >= (6 if num_bits is not None and num_bits < 4 else 30)


def test_rq_after_deletes_and_appends(tmp_path):
    rng = np.random.default_rng(4)
    uri = str(tmp_path / "ds")
    table, X = clustered(rng, 900)
    lance.write_dataset(table, uri, max_rows_per_file=300)
    lance.dataset(uri).create_index("vec", "IVF_RQ", num_partitions=4)
    lance.dataset(uri).delete("id % 7 = 0")
    lance.write_dataset(clustered(rng, 120, start=900)[0], uri, mode="append")
    pl, lf = lance.dataset(uri), lancefmt.dataset(uri)
    for i in range(4):
        q = X[rng.integers(0, len(X))]
        got = same_answers(pl, lf, {"column": "vec", "q": q, "k": 10, "nprobes": 2})
        assert not any(g % 7 == 0 and g < 900 for g in got)


def recall_at_10(ds, X, queries, metric):
    total = 0
    for q in queries:
        got = ds.to_table(nearest={"column": "vec", "q": q, "k": 10, "nprobes": 2}, columns=["id"])
        if metric == "l2":
            want = ((X - q) ** 2).sum(1)
        elif metric == "dot":
            want = -(X @ q)
        else:
            want = 1 - (X @ q) / np.linalg.norm(X, axis=1) / np.linalg.norm(q)
        total += len(set(got["id"].to_pylist()) & set(np.argsort(want)[:10].tolist()))
    return total / (10 * len(queries))


@pytest.mark.parametrize("num_bits", [1, None, 6], ids=["1bit", "default", "6bit"])
@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_pylance_searches_lancefmt_rq(tmp_path, num_bits, metric):
    rng = np.random.default_rng(8)
    table, X = clustered(rng, 1200)
    kw = {"num_partitions": 4, "metric": metric, **({} if num_bits is None else {"num_bits": num_bits})}
    for who, lib in (("mine", lancefmt), ("theirs", lance)):
        lance.write_dataset(table, str(tmp_path / who), max_rows_per_file=400)
        lib.dataset(str(tmp_path / who)).create_index("vec", "IVF_RQ", **kw)
    pl, lf = lance.dataset(str(tmp_path / "mine")), lancefmt.dataset(str(tmp_path / "mine"))
    assert [i["type"] for i in pl.list_indices()] == ["IVF_RQ"]
    pl.validate()
    stats = [d.stats.index_stats("vec_idx")["indices"][0] for d in (pl, lf)]
    assert stats[0]["sub_index"] == stats[1]["sub_index"]
    queries = [X[i] + rng.standard_normal(D).astype(np.float32) * 0.5 for i in rng.integers(0, 1200, 12)]
    nearest = {"column": "vec", "q": queries[0], "k": 10, "nprobes": 2}
    assert "ANNIvfPartition" in pl.scanner(nearest=nearest).explain_plan()
    for q in queries[:4]:
        same_answers(pl, lf, {**nearest, "q": q})
        same_answers(pl, lf, {"column": "vec", "q": q, "k": 10})   # pylance's default probing
    own = recall_at_10(lance.dataset(str(tmp_path / "theirs")), X, queries, metric)
    on_mine = recall_at_10(pl, X, queries, metric)
    assert on_mine >= own - 0.1, (on_mine, own)


def test_rq_maintenance_both_ways(tmp_path):
    """Appends searched exactly, optimize_indices, compaction and deletes on a lancefmt IVF_RQ
    index: pylance and lancefmt keep giving the same answers."""
    rng = np.random.default_rng(9)
    uri = str(tmp_path / "ds")
    table, X = clustered(rng, 900)
    lance.write_dataset(table, uri, max_rows_per_file=300)
    lancefmt.dataset(uri).create_index("vec", "IVF_RQ", num_partitions=4)
    more, Y = clustered(rng, 150, start=900)
    lance.write_dataset(more, uri, mode="append")
    X = np.concatenate([X, Y])
    q = X[905]
    nearest = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
    assert same_answers(lance.dataset(uri), lancefmt.dataset(uri), nearest)[0] == 905
    lancefmt.dataset(uri).optimize.optimize_indices()
    assert same_answers(lance.dataset(uri), lancefmt.dataset(uri), nearest)[0] == 905
    lancefmt.dataset(uri).delete("id = 905")
    lancefmt.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)
    pl, lf = lance.dataset(uri), lancefmt.dataset(uri)
    assert [i["type"] for i in pl.list_indices()] == ["IVF_RQ"]
    got = same_answers(pl, lf, nearest)
    assert 905 not in got and len(got) == 10


def test_rq_build_needs_dimension_multiple_of_8(tmp_path):
    uri = str(tmp_path / "ds")
    X = np.random.default_rng(6).standard_normal((300, 12)).astype(np.float32)
    lance.write_dataset(pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), 12)}), uri)
    with pytest.raises(ValueError, match="divisible by 8"):
        lancefmt.dataset(uri).create_index("vec", "IVF_RQ", num_partitions=2)
