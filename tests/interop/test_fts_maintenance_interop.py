"""INVERTED indices kept up to date, against pylance 14: optimize_indices (a merged segment, or
a delta segment), compaction (row ids remapped), updates and deletes; each side answers
full-text queries on what the other maintained exactly as pylance does."""
from __future__ import annotations

import warnings

import lance
import lance.query as LQ
import pytest
from fts_support import table, write

import lancefmt
import lancefmt.query as FQ

QUERIES = [("lazy dog", None), ("quick runner", "AND"), ("brown fox", "phrase")]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def q(Q, text, kind):
    if kind == "phrase":
        return Q.PhraseQuery(text, "text", slop=1)
    if kind == "AND":
        return Q.MatchQuery(text, "text", operator=Q.FullTextOperator.AND)
    return Q.MatchQuery(text, "text")


def results(ds, query, **kw) -> dict:
    t = ds.to_table(full_text_query=query, columns=["id"], **kw)
    return dict(zip(t["id"].to_pylist(), t["_score"].to_pylist()))


def assert_same_answers(uri):
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    for text, kind in QUERIES:
        want, got = results(theirs, q(LQ, text, kind)), results(ours, q(FQ, text, kind))
        assert want.keys() == got.keys(), (text, kind)
        for k in want:
            assert got[k] == pytest.approx(want[k], abs=1e-3)


def indexed(uri, lib, stable=False):
    write(uri, table(600), stable=stable)
    lib.dataset(uri).create_scalar_index("text", "INVERTED", with_position=True)
    lance.write_dataset(table(150, seed=5).drop_columns(["tags"]).add_column(
        2, "tags", lance.dataset(uri).to_table(columns=["tags"], limit=150)["tags"]), uri, mode="append")


@pytest.mark.parametrize("lib", [lance, lancefmt])
@pytest.mark.parametrize("merge", [1, 0])
def test_optimize_by_either_library(tmp_path, lib, merge):
    uri = str(tmp_path / "ds")
    indexed(uri, lancefmt if lib is lance else lance)   # the other library built it
    assert_same_answers(uri)                            # unindexed rows searched flat
    lib.dataset(uri).optimize.optimize_indices(num_indices_to_merge=merge)
    stats = lancefmt.dataset(uri).stats.index_stats("text_idx")
    assert stats["num_unindexed_rows"] == 0
    assert stats["num_indices"] == (2 if merge == 0 else 1)
    assert_same_answers(uri)


@pytest.mark.parametrize("lib", [lance, lancefmt])
@pytest.mark.parametrize("stable", [False, True])
def test_compaction_remaps_the_index(tmp_path, lib, stable):
    uri = str(tmp_path / "ds")
    write(uri, table(600), stable=stable)
    (lancefmt if lib is lance else lance).dataset(uri).create_scalar_index(
        "text", "INVERTED", with_position=True)
    lance.dataset(uri).delete("id % 4 = 1")
    lib.dataset(uri).optimize.compact_files(target_rows_per_fragment=10_000)
    assert len(lance.dataset(uri).get_fragments()) == 1
    assert lancefmt.dataset(uri).stats.index_stats("text_idx")["num_unindexed_rows"] == 0
    assert_same_answers(uri)


def test_updates_and_deletes_never_return_stale_rows(tmp_path):
    uri = str(tmp_path / "ds")
    write(uri, table(400))
    lancefmt.dataset(uri).create_scalar_index("text", "INVERTED", with_position=True)
    ds = lancefmt.dataset(uri)
    ds.update({"text": "'zebra crossing'"}, where="id < 40")
    ds.delete("id >= 390")
    ours = results(lancefmt.dataset(uri), FQ.MatchQuery("zebra", "text"))
    assert set(ours) == set(range(40)) - {4, 17, 30}          # rows the fixture deleted
    assert not set(results(lancefmt.dataset(uri), FQ.MatchQuery("lazy dog", "text"))) & set(range(40))
    assert_same_answers(uri)


@pytest.mark.parametrize("lib", [lance, lancefmt])
def test_distributed_build_matches_pylances(tmp_path, lib):
    """Each fragment staged with index_uuid, merge_index_metadata, a CreateIndex commit without
    details (on two copies of one dataset: pylance refuses two such indices on a column): the
    same documents and tokens as pylance's, and both libraries answer from them as pylance
    answers from its own."""
    import uuid

    from fts_support import index_files
    from lance.dataset import Index

    uris = {}
    for name, builder in (("theirs", lance), ("ours", lib)):
        uri = uris[name] = str(tmp_path / name)
        write(uri, table(500))
        ds = builder.dataset(uri)
        iid = str(uuid.uuid4())
        frags = [f.fragment_id for f in ds.get_fragments()]
        for fid in frags:
            assert ds.create_scalar_index(column="text", index_type="INVERTED", name="d",
                                          replace=False, index_uuid=iid, fragment_ids=[fid],
                                          with_position=True) is None
        ds.merge_index_metadata(iid, index_type="INVERTED")
        index = Index(uuid=iid, name="d", fields=[1], dataset_version=ds.version,
                      fragment_ids=set(frags), index_version=0)
        lance.LanceDataset.commit(uri, lance.LanceOperation.CreateIndex(new_indices=[index],
                                                                        removed_indices=[]),
                                  read_version=lance.dataset(uri).version)
    # pylance unites the parts ordered by their files' bytes, which differ between the
    # libraries' file writers: compare contents, not order
    a, b = index_files(uris["theirs"], "d"), index_files(uris["ours"], "d")
    assert sorted(a["part_0_docs.lance"]["_rowid"].to_pylist()) == \
        sorted(b["part_0_docs.lance"]["_rowid"].to_pylist())
    assert a["part_0_tokens.lance"]["_token_next_id"].equals(b["part_0_tokens.lance"]["_token_next_id"])
    assert dict(a["metadata.lance"].schema.metadata) == dict(b["metadata.lance"].schema.metadata)
    assert lancefmt.dataset(uris["ours"]).stats.index_stats("d")["index_type"] == "Inverted"
    for text, kind in QUERIES:
        want = results(lance.dataset(uris["theirs"]), q(LQ, text, kind))
        for got in (results(lance.dataset(uris["ours"]), q(LQ, text, kind)),
                    results(lancefmt.dataset(uris["ours"]), q(FQ, text, kind)),
                    results(lancefmt.dataset(uris["theirs"]), q(FQ, text, kind))):
            assert want.keys() == got.keys()
            for k in want:
                assert got[k] == pytest.approx(want[k], abs=1e-3)
