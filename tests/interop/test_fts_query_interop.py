"""Full-text queries against pylance 14: every query type finds the same rows with the same
BM25 scores (within 1e-3), top-k and all matches, whichever library built the index; with
appended (unindexed) rows, deleted rows, filters before and after ranking, and stable row
ids."""
from __future__ import annotations

import warnings

import lance
import lance.query as LQ
import numpy as np
import pyarrow as pa
import pytest
from fts_support import table, write

import lancefmt
import lancefmt.query as FQ

CASES = [("2.0", False), ("2.2", True)]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def queries(Q) -> dict:
    """The same queries in pylance's and lancefmt's objects."""
    return {
        "match": Q.MatchQuery("quick brown dog", "text"),
        "repeat": Q.MatchQuery("fox fox lazy", "text"),
        "and": Q.MatchQuery("quick dog", "text", operator=Q.FullTextOperator.AND),
        "boosted": Q.MatchQuery("runner jumps", "text", boost=2.5),
        "accents": Q.MatchQuery("CAFE Naive resume STRASSE", "text"),
        "phrase": Q.PhraseQuery("quick brown", "text"),
        "phrase_stop": Q.PhraseQuery("fox the dog", "text"),
        "phrase_slop": Q.PhraseQuery("lazy dog", "text", slop=2),
        "fuzzy": Q.MatchQuery("quikc lazzy", "text", fuzziness=2, max_expansions=3),
        "fuzzy_prefix": Q.MatchQuery("runer", "text", fuzziness=1, prefix_length=2),
        "multi": Q.MultiMatchQuery("quick data", ["text", "tags"], boosts=[1.0, 2.0]),
        "combined": Q.CombinedFieldsQuery("quick data dog", ["text", "tags"], boosts=[1.0, 1.5]),
        "combined_and": Q.CombinedFieldsQuery("lazy dog", ["text", "tags"],
                                              operator=Q.FullTextOperator.AND),
        "boost": Q.BoostQuery(Q.MatchQuery("dog", "text"), Q.MatchQuery("lazy", "text"), negative_boost=0.4),
        "boolean": Q.BooleanQuery([(Q.Occur.MUST, Q.MatchQuery("fox", "text")),
                                   (Q.Occur.SHOULD, Q.MatchQuery("search index", "text")),
                                   (Q.Occur.MUST_NOT, Q.MatchQuery("cats", "text"))]),
        "or": Q.MatchQuery("vector", "text") | Q.MatchQuery("lance", "tags"),
        "and_op": Q.MatchQuery("hello", "text") & Q.MatchQuery("world", "text"),
        "string": "lazy runner",
    }


def results(ds, q, **kw) -> dict:
    t = ds.to_table(full_text_query=q, columns=["id"], **kw)
    return dict(zip(t["id"].to_pylist(), t["_score"].to_pylist()))


def assert_same(theirs: dict, ours: dict, top: bool = False):
    if not top:
        assert theirs.keys() == ours.keys()
    else:  # ties at the cut may differ: same scores, and same rows above the cut
        assert sorted(theirs.values()) == pytest.approx(sorted(ours.values()), abs=1e-3)
        cut = min(theirs.values()) if theirs else 0
        assert {k for k, v in theirs.items() if v > cut + 1e-3} <= ours.keys()
    for k in set(theirs) & set(ours):
        assert ours[k] == pytest.approx(theirs[k], abs=1e-3)


def build(uri, builder, version="2.2", stable=False):
    write(uri, table(700), version, stable)
    ds = builder.dataset(uri)
    ds.create_scalar_index("text", "INVERTED", with_position=True)
    builder.dataset(uri).create_scalar_index("tags", "INVERTED")


@pytest.mark.parametrize("version, stable", CASES)
@pytest.mark.parametrize("builder", ["pylance", "lancefmt"])
def test_every_query_type_matches_pylance(tmp_path, builder, version, stable):
    uri = str(tmp_path / "ds")
    build(uri, lance if builder == "pylance" else lancefmt, version, stable)
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    ql, qf = queries(LQ), queries(FQ)
    for name in ql:
        assert_same(results(theirs, ql[name]), results(ours, qf[name]))
        assert_same(results(theirs, ql[name], limit=20), results(ours, qf[name], limit=20), top=True)


def test_unindexed_rows_and_deletions(tmp_path):
    uri = str(tmp_path / "ds")
    build(uri, lancefmt)
    lance.write_dataset(table(150, seed=99).append_column("x", pa.array([0] * 150))
                        .drop_columns(["x"]), uri, mode="append")
    lance.dataset(uri).delete("id % 5 = 0")
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    ql, qf = queries(LQ), queries(FQ)
    for name in ("match", "and", "phrase", "multi", "combined", "boolean", "string"):
        want, got = results(theirs, ql[name]), results(ours, qf[name])
        assert_same(want, got)
        assert not any(k % 5 == 0 for k in got)
    assert ours.stats.index_stats("text_idx")["num_unindexed_rows"] > 0


def test_filters_before_and_after_ranking(tmp_path):
    uri = str(tmp_path / "ds")
    build(uri, lancefmt)
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    q, f = LQ.MatchQuery("quick dog", "text"), FQ.MatchQuery("quick dog", "text")
    for kw in ({"filter": "id > 300"}, {"filter": "id > 300", "limit": 10},
               {"filter": "id > 300", "limit": 10, "prefilter": True},
               {"filter": "id < 50", "limit": 5, "prefilter": False}):
        assert_same(results(theirs, q, **kw), results(ours, f, **kw), top="limit" in kw)


def test_result_shape_and_counts(tmp_path):
    uri = str(tmp_path / "ds")
    build(uri, lancefmt)
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    a = theirs.to_table(full_text_query="dog", limit=7, with_row_id=True)
    b = ours.to_table(full_text_query="dog", limit=7, with_row_id=True)
    assert a.schema == b.schema
    assert b["_score"].to_pylist() == sorted(b["_score"].to_pylist(), reverse=True)
    assert ours.scanner(full_text_query="dog").count_rows() == theirs.scanner(full_text_query="dog").count_rows()
    got = ours.to_table(full_text_query={"query": "dog", "columns": ["text"]}, columns=["id"],
                        limit=3, offset=2)
    assert got.num_rows == 3
    batches = list(ours.to_batches(full_text_query="dog", batch_size=4))
    assert sum(b.num_rows for b in batches) == ours.scanner(full_text_query="dog").count_rows()


def test_column_without_index_is_searched_flat(tmp_path):
    uri = str(tmp_path / "ds")
    write(uri, table(300))
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    assert_same(results(theirs, LQ.MatchQuery("dog lazy", "text")),
                results(ours, FQ.MatchQuery("dog lazy", "text")))
    with pytest.raises(ValueError, match="does not exist"):
        ours.to_table(full_text_query=FQ.MatchQuery("x", "nope"))
    with pytest.raises(ValueError, match="at least one should/must"):
        ours.to_table(full_text_query=FQ.BooleanQuery([(FQ.Occur.MUST_NOT, FQ.MatchQuery("x", "text"))]))


@pytest.mark.parametrize("builder", [lance, lancefmt])
def test_list_element_documents(tmp_path, builder):
    """With document_granularity=LIST_ELEMENT each element is a document: a row comes back
    once per matching element, with its `_doc_index`, as in pylance."""
    from lance.query import DocumentGranularity

    uri = str(tmp_path / "ds")
    write(uri, table(400))
    builder.dataset(uri).create_scalar_index("tags", "INVERTED",
                                             document_granularity=DocumentGranularity.LIST_ELEMENT)

    def rows(ds, q):
        t = ds.to_table(full_text_query=q, columns=["id"])
        return sorted((i, tuple(d), round(s, 3)) for i, d, s in
                      zip(t["id"].to_pylist(), t["_doc_index"].to_pylist(), t["_score"].to_pylist()))

    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    for mk in (lambda Q: Q.MatchQuery("quick", "tags"),
               lambda Q: Q.MatchQuery("dog", "tags") | Q.MatchQuery("lazy", "tags")):
        want, got = rows(theirs, mk(LQ)), rows(ours, mk(FQ))
        assert want and got == want
    assert ours.to_table(full_text_query=FQ.MatchQuery("quick", "tags"), limit=3).schema == \
        theirs.to_table(full_text_query=LQ.MatchQuery("quick", "tags"), limit=3).schema
    with pytest.raises(ValueError, match="INVERTED index"):
        ours.to_table(full_text_query="quick")


@pytest.mark.parametrize("lib", [lance, lancefmt])
def test_no_hybrid_scan_and_no_index_errors_are_pylances(tmp_path, lib):
    """pylance 14 refuses nearest with full_text_query (filtered or not, prefilter or not), and
    a bare query string when no column has an INVERTED index; lancefmt raises the same."""
    uri = str(tmp_path / "ds")
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(40, dtype=np.float32)), 4)
    lance.write_dataset(pa.table({"id": range(10), "text": [f"w{i % 3} x" for i in range(10)],
                                  "vec": vec}), uri)
    ds = lib.dataset(uri)
    with pytest.raises(ValueError, match="unless an INVERTED index has been created"):
        ds.to_table(full_text_query="w1")
    ds.create_scalar_index("text", "INVERTED")
    ds = lib.dataset(uri)
    assert ds.to_table(full_text_query="w1", columns=["id"]).num_rows == 3
    near = {"column": "vec", "q": np.zeros(4, dtype=np.float32), "k": 3}
    for kw in ({}, {"filter": "id > 2"}, {"filter": "id > 2", "prefilter": True}, {"limit": 2}):
        with pytest.raises(ValueError, match="Cannot have both nearest and full text search"):
            ds.to_table(full_text_query="w1", nearest=near, **kw)
    with pytest.raises(ValueError, match="Cannot have both nearest and full text search"):
        ds.scanner(full_text_query="w1", nearest=near).explain_plan()  # lancefmt: at scanner()


def test_analyze_plan_counts_documents_scored_as_pylance(tmp_path):
    """analyze_plan's MatchQuery line: the rows it found and the documents it scored
    (``index_comparisons``): a scalar-indexed prefilter leaves only its rows to score. Few
    documents, so pylance's WAND prunes nothing and the counts are comparable."""
    import re

    uri = str(tmp_path / "ds")
    texts = ["lance database test", "full text search", "lance search text"] + ["other content"] * 7
    lance.write_dataset(pa.table({"id": range(1, 11), "text": texts}), uri)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    lancefmt.dataset(uri).create_scalar_index("text", "INVERTED")

    def counts(ds, **kw):
        plan = ds.scanner(full_text_query="lance search text", **kw).analyze_plan()
        line = next(x for x in plan.splitlines() if "MatchQuery" in x)
        return [int(re.search(rf"\b{k}=(\d+)", line).group(1)) for k in ("output_rows", "index_comparisons")]

    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    for kw in ({}, {"filter": "id <= 1", "prefilter": True}, {"filter": "id <= 1"}):
        assert counts(ours, **kw) == counts(theirs, **kw), kw
    assert counts(ours, filter="id <= 1", prefilter=True) == [1, 1]
    plan = ours.scanner(full_text_query="lance", filter="id <= 1", prefilter=True).explain_plan()
    assert "ScalarIndexQuery: query=[id <= 1]@id_idx(BTree)" in plan
