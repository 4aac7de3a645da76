"""INVERTED index in lancefmt alone: build, statistics, queries through the scanner, bad input
(corrupt files name themselves), and the query objects."""
from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.errors import CorruptFileError, InvalidArgumentError, UnsupportedColumnTypeError
from lancefmt.index.core.catalog import LOADED
from lancefmt.query import (BooleanQuery, BoostQuery, FullTextOperator, FullTextQueryType,
                            MatchQuery, MultiMatchQuery, Occur, PhraseQuery)

TEXTS = ["the quick brown fox", "quick the fox", "fox quick", "quick fox jumps", "brown dog",
         "lazy quick brown dog fox", "dog", "cat cat fox", None, ""]


@pytest.fixture
def ds(tmp_path):
    t = pa.table({"id": list(range(10)), "text": TEXTS, "n": list(range(10))})
    d = lancefmt.write_dataset(t, str(tmp_path / "ds"), max_rows_per_file=4)
    d.create_scalar_index("text", "INVERTED", with_position=True)
    return lancefmt.dataset(str(tmp_path / "ds"))


def ids(table):
    return table["id"].to_pylist()


def test_build_describes_and_counts(ds):
    (desc,) = ds.describe_indices()
    assert desc.name == "text_idx" and desc.type_url == "/lance.table.InvertedIndexDetails"
    stats = ds.stats.index_stats("text_idx")
    assert stats["index_type"] == "Inverted"
    assert stats["indices"][0]["num_docs"] == 8 and stats["indices"][0]["num_tokens"] == 7
    assert stats["indices"][0]["params"]["with_position"] is True


def test_queries_rank_best_first(ds):
    t = ds.to_table(full_text_query="fox", columns=["id"])
    assert sorted(ids(t)) == [0, 1, 2, 3, 5, 7]
    assert t["_score"].to_pylist() == sorted(t["_score"].to_pylist(), reverse=True)
    assert ids(ds.to_table(full_text_query=PhraseQuery("quick fox", "text"), columns=["id"])) == [3]
    both = ds.to_table(full_text_query=MatchQuery("quick dog", "text", operator=FullTextOperator.AND),
                       columns=["id"])
    assert ids(both) == [5]
    assert ds.scanner(full_text_query="dog", limit=1).count_rows() == 1
    plan = ds.scanner(full_text_query="dog").explain_plan()
    assert "MatchQuery: column=text, query=[dog]" in plan


def test_query_objects_mirror_pylance():
    m = MatchQuery("a b", "text", boost=2, fuzziness=1)
    assert m.query_type() == FullTextQueryType.MATCH and m.inner is m
    b = m & PhraseQuery("a b", "text")
    assert b.query_type() == FullTextQueryType.BOOLEAN
    assert [o for o, _ in b.clauses] == [Occur.MUST, Occur.MUST]
    assert [o for o, _ in (m | m).clauses] == [Occur.SHOULD, Occur.SHOULD]
    mm = MultiMatchQuery("x", ["a", "b"], boosts=[1, 2])
    assert [q.boost for q in mm.match_queries] == [1.0, 2.0]
    with pytest.raises(InvalidArgumentError):
        MultiMatchQuery("x", ["a"], boosts=[1, 2])
    with pytest.raises(InvalidArgumentError):
        MultiMatchQuery("x", [])
    assert BoostQuery(m, m).negative_boost == 0.5
    assert BooleanQuery([("MUST", m)]).clauses[0][0] == Occur.MUST


def test_deleted_rows_and_prefilter(ds):
    ds.delete("id = 5")
    got = ds.to_table(full_text_query="dog", columns=["id"])
    assert sorted(ids(got)) == [4, 6]
    pre = ds.to_table(full_text_query="fox", columns=["id"], filter="n > 2", prefilter=True, limit=2)
    assert len(ids(pre)) == 2 and all(i > 2 for i in ids(pre))


def test_bad_queries_are_pylances_errors(ds):
    with pytest.raises(ValueError, match="does not exist in the dataset schema"):
        ds.to_table(full_text_query=MatchQuery("x", "nope"))
    with pytest.raises(ValueError, match="must resolve to Utf8"):
        ds.to_table(full_text_query=MatchQuery("1", "n"))
    with pytest.raises(ValueError, match="at least one should/must"):
        ds.to_table(full_text_query=BooleanQuery([(Occur.MUST_NOT, MatchQuery("x", "text"))]))
    with pytest.raises(UnsupportedColumnTypeError):
        ds.create_scalar_index("n", "INVERTED")
    with pytest.raises(InvalidArgumentError):
        ds.create_scalar_index("text", "INVERTED", base_tokenizer="nope", name="x")
    with pytest.raises(InvalidArgumentError):
        ds.create_scalar_index("text", "INVERTED", format_version=3, name="x")


def test_phrase_needs_positions(tmp_path):
    d = lancefmt.write_dataset(pa.table({"text": ["a b c"]}), str(tmp_path / "p"))
    d.create_scalar_index("text", "INVERTED")
    with pytest.raises(InvalidArgumentError, match="position"):
        d.to_table(full_text_query=PhraseQuery("b c", "text"))


def corrupt(path, how):
    data = bytearray(open(path, "rb").read())
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "zero_middle":
        mid = len(data) // 3
        data[mid:mid + 64] = bytes(64)
    open(path, "wb").write(bytes(data))


@pytest.mark.parametrize("name", ["metadata.lance", "part_0_docs.lance", "part_0_invert.lance",
                                  "part_0_tokens.lance"])
@pytest.mark.parametrize("how", ["truncate", "zero_middle"])
def test_corrupt_files_name_themselves(ds, name, how):
    (path,) = glob.glob(os.path.join(ds.uri, "_indices", "*", name))
    corrupt(path, how)
    LOADED.clear()
    fresh = lancefmt.dataset(ds.uri)
    try:
        fresh.to_table(full_text_query=PhraseQuery("quick fox", "text"))
        fresh.to_table(full_text_query="quick brown dog cat")
    except CorruptFileError as e:
        assert name in str(e)
    else:  # zeroed bytes that no read touches are allowed
        assert how == "zero_middle"


def test_bad_posting_bytes_are_corrupt_file_errors(ds):
    from lancefmt.index.fts import format as fmt
    from lancefmt.index.fts.inverted import InvertedIndex
    from lancefmt.index.core.store import IndexStore

    (d,) = glob.glob(os.path.join(ds.uri, "_indices", "*"))
    store = IndexStore(d)
    t = store.read_table(fmt.invert_file(0))
    lengths = t.column(fmt.LENGTH).to_numpy().copy()
    lengths[0] += 500          # more documents than the blocks hold
    t = t.set_column(t.schema.get_field_index(fmt.LENGTH), t.schema.field(fmt.LENGTH),
                     pa.array(lengths, pa.uint32()))
    store.write_table(fmt.invert_file(0), t, fmt.invert_metadata(True))
    idx = InvertedIndex(IndexStore(d))
    token = idx.partitions[0].all_tokens()[0]
    with pytest.raises(CorruptFileError, match="part_0_invert.lance"):
        idx.postings(token)


def test_remap_and_update_keep_every_token(ds, tmp_path):
    from lancefmt.index.core.registry import RowIdMapping, TrainingData
    from lancefmt.index.core.store import IndexStore
    from lancefmt.index.fts.inverted import InvertedIndex

    (d,) = glob.glob(os.path.join(ds.uri, "_indices", "*"))
    idx = InvertedIndex(IndexStore(d))
    rows = idx.partitions[0].docs()[0]
    mapping = RowIdMapping(rows, rows + np.uint64(100), np.array([rows[0]], np.uint64))
    dest = IndexStore(str(tmp_path / "remapped"))
    idx.remap(mapping, dest)
    moved = InvertedIndex(dest)
    assert moved.num_docs == idx.num_docs - 1
    assert sorted(moved.partitions[0].docs()[0].tolist()) == sorted((rows[1:] + 100).tolist())
    assert moved.vocabulary() == idx.vocabulary()
    new = TrainingData.from_table(pa.field("text", pa.string()), pa.table({
        "value": pa.array(["zebra fox"]), "_rowid": pa.array([1 << 32], pa.uint64()),
        "_rowaddr": pa.array([1 << 32], pa.uint64())}))
    dest2 = IndexStore(str(tmp_path / "updated"))
    idx.update(new, dest2)
    grown = InvertedIndex(dest2)
    assert grown.num_docs == idx.num_docs + 1 and "zebra" in grown.vocabulary()
    assert grown.token_docs("fox") == idx.token_docs("fox") + 1


def test_reads_the_legacy_format(tmp_path):
    """Indices of Lance 0.27 (``tokens/docs/invert.lance``, row ids in flat postings)."""
    from lancefmt.index.core.store import IndexStore
    from lancefmt.index.fts.inverted import InvertedIndex

    store = IndexStore(str(tmp_path / "legacy"))
    store.write_table("tokens.lance", pa.table({"_token": ["puppy", "frodo", "happy"],
                                                "_token_id": pa.array([0, 1, 2], pa.uint32())}),
                      {"tokenizer": '{"base_tokenizer":"simple","language":"English",'
                                    '"max_token_length":40,"lower_case":true,"stem":false,'
                                    '"remove_stop_words":false,"ascii_folding":false}'})
    store.write_table("docs.lance", pa.table({"_rowid": pa.array([2, 0, 1], pa.uint64()),
                                              "_num_tokens": pa.array([3, 2, 2], pa.uint32())}))
    store.write_table("invert.lance", pa.table({
        "_rowid": pa.array([0, 1, 2, 0, 1, 2, 2], pa.uint64()),
        "_frequency": pa.array([1, 1, 1, 1, 1, 1, 1], pa.float32())}),
        {"offsets": "[0,3,6]", "max_scores": "[0.1,0.1,0.5]"})
    idx = InvertedIndex(store)
    assert idx.num_docs == 3 and idx.total_tokens == 7
    assert idx.index_params["stem"] is False
    (part, docs, freqs, _), = idx.postings("happy")
    assert part.docs()[0][docs].tolist() == [2] and freqs.tolist() == [1]
    assert idx.token_docs("puppy") == 3
    content = idx.partition_contents()[0]
    assert content.tokens == ["puppy", "frodo", "happy"]


def test_fast_search_and_score_projection(ds):
    import pyarrow as pa

    lancefmt.write_dataset(pa.table({"id": [10], "text": ["fox fox"], "n": [10]}), ds.uri, mode="append")
    fresh = lancefmt.dataset(ds.uri)
    assert 10 in ids(fresh.to_table(full_text_query="fox", columns=["id"]))
    assert 10 not in ids(fresh.to_table(full_text_query="fox", columns=["id"], fast_search=True))
    plain = fresh.to_table(full_text_query="fox", columns=["id"], disable_scoring_autoprojection=True)
    assert plain.column_names == ["id"]
    named = fresh.to_table(full_text_query="fox", columns=["_score", "id"],
                           disable_scoring_autoprojection=True)
    assert named.column_names == ["_score", "id"]


def test_flipped_bytes_are_lance_errors(tmp_path):
    """Bytes flipped anywhere in the index files: a search succeeds or raises a LanceError
    (a corrupt file named), never anything else."""
    import random
    import shutil

    from lancefmt.errors import LanceError

    rng = random.Random(3)
    words = "quick brown fox lazy dog the cat search index".split()
    src = str(tmp_path / "src")
    d = lancefmt.write_dataset(pa.table({"text": [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
                                                  for _ in range(300)]}), src)
    d.create_scalar_index("text", "INVERTED", with_position=True)
    names = [os.path.basename(f) for f in glob.glob(src + "/_indices/*/*")]
    for i in range(30):
        dst = str(tmp_path / f"c{i}")
        shutil.copytree(src, dst)
        (path,) = glob.glob(os.path.join(dst, "_indices", "*", rng.choice(names)))
        data = bytearray(open(path, "rb").read())
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        open(path, "wb").write(bytes(data))
        LOADED.clear()
        try:
            fresh = lancefmt.dataset(dst)
            fresh.to_table(full_text_query=PhraseQuery("quick fox", "text"))
            fresh.to_table(full_text_query=MatchQuery("lazy dgo", "text", fuzziness=1), limit=5)
        except LanceError:
            pass
