"""NGRAM against pylance 14: each side answers ``contains`` / ``LIKE`` from the other's index
exactly as a full scan does (and shows the same index query in its plan), both write the same
file (tokens and posting-list bytes) when building, updating, merging segments and remapping
after compaction, and every code point is tokenised alike."""
from __future__ import annotations

import shutil
import warnings

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from index_checks import assert_answers_equal_full_scan
from lance.file import LanceFileReader
from ngram_support import sample_table

import lancefmt
from lancefmt.index.core.metadata import fragment_ids, uuid_text
from lancefmt.index.core.registry import TrainingData
from lancefmt.index.core.store import IndexStore
from lancefmt.index.scalar.ngram import NGRAM
from lancefmt.index.scalar.ngram_postings import POSTINGS_FILE, Postings
from lancefmt.table.versions import load_manifest

QUERIES = ["hello", "HELLO", "llo w", "café", "cafe", "Über", "uber", "naïve", "fox", "x9z",
           "alpha beta", "a b", "!!!", "zzz", "qqqq", "İst", "ﬁle", "ＡＢＣ", "ℌello", "ab", "é"]
CONTAINS = ["contains(s, '" + q + "')" for q in QUERIES]
#: LIKE / regexp_like filters, with and without a usable trigram
LIKES = ["s LIKE '%hello%'", "s LIKE 'hel%'", "s LIKE '%café%'", "s LIKE '%x9z%1%'",
         "s LIKE '%alp_a%'", "s LIKE '%a b%'", "s LIKE '%zzz%'", "s LIKE '%fé%'",
         "regexp_like(s, 'alpha')", "s LIKE '%\\_%'", "s LIKE 'Hello World'"]
CASES = [("2.0", False), ("2.1", True), ("2.2", False), ("2.2", True)]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def write(uri: str, table: pa.Table, version: str = "2.2", stable: bool = False) -> None:
    """Two appends and a delete, so row ids and addresses have gaps."""
    lance.write_dataset(table.slice(0, 250), uri, data_storage_version=version,
                        max_rows_per_file=100, enable_stable_row_ids=stable)
    lance.write_dataset(table.slice(250), uri, mode="append")
    lance.dataset(uri).delete("id % 11 = 3")


def segments(uri: str, name: str = "s_idx") -> list:
    return [e for e in load_manifest(uri, None).indices if e.name == name]


def postings_table(uri: str) -> pa.Table:
    """The one segment's ``ngram_postings.lance``, read by pylance."""
    (entry,) = segments(uri)
    return LanceFileReader(f"{uri}/_indices/{uuid_text(entry)}/{POSTINGS_FILE}").read_all().to_table()


def index_query(plan: str):
    """What a plan's ScalarIndexQuery line asks (None: no index)."""
    lines = [x for x in plan.splitlines() if "ScalarIndexQuery" in x]
    return lines[0].split("query=", 1)[1].split(", metrics=")[0].strip() if lines else None


def assert_same_plans(uri: str, filters) -> None:
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    for f in filters:
        assert index_query(ours.scanner(filter=f).explain_plan()) == \
            index_query(theirs.scanner(filter=f).explain_plan()), f


@pytest.mark.parametrize("version, stable", CASES)
def test_pylance_index_answered_by_lancefmt(tmp_path, version, stable):
    uri = str(tmp_path / "ds")
    write(uri, sample_table(), version, stable)
    lance.dataset(uri).create_scalar_index("s", "NGRAM")
    assert_answers_equal_full_scan(lance, uri, CONTAINS + LIKES, uses=["s_idx"])
    assert_same_plans(uri, CONTAINS + LIKES)
    sel = lancefmt.dataset(uri).scanner(filter="contains(s, 'x9z')").index_selection()
    assert sum(len(v) for v in sel.rows.values()) < 100  # the index narrowed it


@pytest.mark.parametrize("version, stable", CASES)
def test_lancefmt_index_answered_by_pylance(tmp_path, version, stable):
    uri, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    write(uri, sample_table(), version, stable)
    shutil.copytree(uri, ref)
    lancefmt.dataset(uri).create_scalar_index("s", "NGRAM")
    lance.dataset(ref).create_scalar_index("s", "NGRAM")
    assert postings_table(uri).equals(postings_table(ref))  # tokens and list bytes
    assert [e.index_version for e in segments(uri)] == [e.index_version for e in segments(ref)] == [0]
    assert_answers_equal_full_scan(lance, uri, CONTAINS + LIKES, uses=["s_idx"])
    assert_same_plans(uri, CONTAINS + LIKES)
    ds = lance.dataset(uri)
    assert 'ScalarIndexQuery: query=[contains(s, Utf8("hello"))]@s_idx(NGram)' in \
        ds.scanner(filter="contains(s, 'hello')").explain_plan()
    stats = ds.stats.index_stats("s_idx")
    want = lance.dataset(ref).stats.index_stats("s_idx")
    for key in ("index_type", "indices", "segments", "num_indexed_rows", "num_indexed_fragments"):
        assert stats[key] == want[key], key
    assert {k: v for k, v in lancefmt.dataset(uri).stats.index_stats("s_idx").items()
            if k != "updated_at_timestamp_ms"} == {k: v for k, v in stats.items() if k != "updated_at_timestamp_ms"}
    d = ds.describe_indices()[0]
    assert d.type_url == "/lance.table.NGramIndexDetails" and d.index_type == "NGram"


def test_every_code_point_is_tokenised_as_pylance(tmp_path):
    """Each non-ASCII code point between letters and three times over, 2.2M values: pylance's
    file and ours hold the same tokens and the same lists."""
    cps = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000]
    values = pa.array([v for c in cps for v in ("kk" + c + "kk", c * 3)])
    uri = str(tmp_path / "all")
    lance.write_dataset(pa.table({"s": values}), uri, max_rows_per_file=len(values))
    lance.dataset(uri).create_scalar_index("s", "NGRAM")
    theirs = postings_table(uri)
    mine = Postings.of_strings(values, np.arange(len(values), dtype=np.uint64)).to_table()
    assert mine.column("tokens").equals(theirs.column("tokens"))
    assert mine.column("posting_list").combine_chunks().equals(theirs.column("posting_list").combine_chunks())


def new_rows(uri: str, fragments) -> TrainingData:
    ds = lancefmt.dataset(uri)
    t = ds.to_table(columns=["s"], with_row_id=True, with_row_address=True)
    t = t.filter(pc.is_in(pc.shift_right(t["_rowaddr"], 32), pa.array(fragments, pa.uint64())))
    t = pa.table({"value": t["s"], "_rowid": t["_rowid"], "_rowaddr": t["_rowaddr"]})
    return TrainingData.from_table(ds.schema.field("s"), t)


def test_update_writes_what_pylance_optimize_writes(tmp_path):
    """Without stable row ids pylance's optimize merges the new fragments' lists into the old
    index (deleted rows stay in it); ``update`` without ``keep`` writes that same file. (With
    stable row ids pylance 14 writes what a new build over the live rows writes, as lancefmt's
    optimize always does: test_optimize_indices_both_ways.)"""
    uri, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    table = sample_table(300)
    lance.write_dataset(table.slice(0, 200), uri, max_rows_per_file=100)
    lance.dataset(uri).create_scalar_index("s", "NGRAM")
    lance.write_dataset(table.slice(200), uri, mode="append")
    lance.dataset(uri).delete("id % 9 = 4")
    shutil.copytree(uri, ref)
    lance.dataset(ref).optimize.optimize_indices()
    (entry,) = segments(uri)
    seg = NGRAM.load(IndexStore(f"{uri}/_indices/{uuid_text(entry)}"), None)
    dest = IndexStore(str(tmp_path / "updated"))
    seg.update(new_rows(uri, [2]), dest)
    mine = LanceFileReader(f"{dest.dir_uri}/{POSTINGS_FILE}").read_all().to_table()
    assert mine.equals(postings_table(ref))


@pytest.mark.parametrize("builder", ["pylance", "lancefmt"])
@pytest.mark.parametrize("stable", [False, True])
def test_optimize_indices_both_ways(tmp_path, builder, stable):
    """One library builds, the other optimizes after an append and a delete; with stable row
    ids both optimizes write the same file."""
    uri, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    table = sample_table(300)
    lance.write_dataset(table.slice(0, 200), uri, max_rows_per_file=100, enable_stable_row_ids=stable)
    (lance if builder == "pylance" else lancefmt).dataset(uri).create_scalar_index("s", "NGRAM")
    lance.write_dataset(table.slice(200), uri, mode="append")
    lance.dataset(uri).delete("id % 9 = 4")
    shutil.copytree(uri, ref)
    (lancefmt if builder == "pylance" else lance).dataset(uri).optimize.optimize_indices()
    (lance if builder == "pylance" else lancefmt).dataset(ref).optimize.optimize_indices()
    assert [sorted(fragment_ids(e)) for e in segments(uri)] == [[0, 1, 2]]
    if stable:
        assert postings_table(uri).equals(postings_table(ref))
    assert_answers_equal_full_scan(lance, uri, CONTAINS[:12] + LIKES[:5], uses=["s_idx"])
    assert lance.dataset(uri).stats.index_stats("s_idx")["num_unindexed_rows"] == 0


@pytest.mark.parametrize("stable", [False, True])
def test_compaction_remaps_like_pylance(tmp_path, stable):
    """Without stable row ids both remap the index to the new addresses, dropping deleted
    rows, into the same file. (With them pylance keeps the segment as it is, deleted ids
    included, while lancefmt's compaction rewrites it without them: the same answers.)"""
    uri, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    lance.write_dataset(sample_table(300), uri, max_rows_per_file=60, enable_stable_row_ids=stable)
    lance.dataset(uri).create_scalar_index("s", "NGRAM")
    lance.dataset(uri).delete("id % 7 = 2")
    shutil.copytree(uri, ref)
    lancefmt.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000)
    lance.dataset(ref).optimize.compact_files(target_rows_per_fragment=1000)
    assert [sorted(fragment_ids(e)) for e in segments(uri)] == [sorted(fragment_ids(e)) for e in segments(ref)]
    if not stable:
        assert postings_table(uri).equals(postings_table(ref))
    assert postings_table(uri).column("tokens").equals(postings_table(ref).column("tokens"))
    assert_answers_equal_full_scan(lance, uri, CONTAINS[:12] + LIKES[:5], uses=["s_idx"])


def test_distributed_segments_merge_like_pylance(tmp_path):
    uri, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    lance.write_dataset(sample_table(300), uri, max_rows_per_file=100)
    shutil.copytree(uri, ref)
    ds = lancefmt.dataset(uri)
    segs = [ds.create_index_uncommitted("s", "NGRAM", name="s_idx", fragment_ids=[f]) for f in (0, 1, 2)]
    merged = ds.merge_existing_index_segments(segs)
    assert sorted(merged.fragment_ids) == [0, 1, 2]
    ds.commit_existing_index_segments("s_idx", "s", [merged])
    lance.dataset(ref).create_scalar_index("s", "NGRAM")
    assert postings_table(uri).equals(postings_table(ref))
    assert_answers_equal_full_scan(lance, uri, CONTAINS[:12], uses=["s_idx"])
