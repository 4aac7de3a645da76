"""NGRAM against pylance 14: each side answers ``contains`` from the other's index exactly as a
full scan does, both build the same file (tokens and posting-list bytes), every code point is
tokenised alike, and update / remap write what pylance's optimize / compaction write."""
from __future__ import annotations

import shutil
import warnings

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance.file import LanceFileReader
from ngram_support import build_index, sample_table

import lancefmt
from lancefmt.index.core.metadata import new_metadata, new_uuid, uuid_text
from lancefmt.index.core.registry import RowIdMapping, TrainingData
from lancefmt.index.core.store import IndexStore
from lancefmt.index.scalar.ngram import NGRAM
from lancefmt.index.scalar.ngram_postings import POSTINGS_FILE, Postings
from lancefmt.sql.sargable import Contains
from lancefmt.table.transaction import CreateIndex
from lancefmt.table.versions import load_manifest

QUERIES = ["hello", "HELLO", "llo w", "café", "cafe", "Über", "uber", "naïve", "fox", "x9z",
           "alpha beta", "a b", "!!!", "zzz", "qqqq", "İst", "ﬁle", "ＡＢＣ", "ℌello", "ab", "é"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def truth(table: pa.Table, text: str) -> list:
    hit = pc.fill_null(pc.match_substring(table["s"], text), False)
    return sorted(table.filter(hit)["id"].to_pylist())


def write(uri: str, table: pa.Table, version: str, stable: bool) -> pa.Table:
    """Two appends and a delete, so ids and addresses have gaps; returns the live rows."""
    lance.write_dataset(table.slice(0, 250), uri, data_storage_version=version,
                        max_rows_per_file=100, enable_stable_row_ids=stable)
    lance.write_dataset(table.slice(250), uri, mode="append")
    lance.dataset(uri).delete("id % 11 = 3")
    return lance.dataset(uri).to_table()


def index_dir(uri: str, name: str = "s_idx") -> str:
    entries = [e for e in load_manifest(uri, None).indices if e.name == name]
    assert len(entries) == 1
    return f"{uri}/_indices/{uuid_text(entries[0])}"


def postings_table(uri: str) -> pa.Table:
    return LanceFileReader(f"{index_dir(uri)}/{POSTINGS_FILE}").read_all().to_table()


CASES = [("2.0", False), ("2.1", True), ("2.2", False), ("2.2", True)]

#: LIKE / regexp_like filters: (filter, LIKE pattern whose full-scan answer is the truth)
LIKES = [("s LIKE '%hello%'", "%hello%"), ("s LIKE 'hel%'", "hel%"), ("s LIKE '%café%'", "%café%"),
         ("s LIKE '%x9z%1%'", "%x9z%1%"), ("s LIKE '%alp_a%'", "%alp_a%"), ("s LIKE '%a b%'", "%a b%"),
         ("s LIKE '%zzz%'", "%zzz%"), ("s LIKE '%fé%'", "%fé%"), ("regexp_like(s, 'alpha')", "%alpha%"),
         ("s LIKE '%\\_%'", "%\\_%"), ("s LIKE 'Hello World'", "Hello World")]


def like_truth(table: pa.Table, pattern: str) -> list:
    hit = pc.fill_null(pc.match_like(table["s"], pattern), False)
    return sorted(table.filter(hit)["id"].to_pylist())


def index_query(plan: str):
    """What a plan's ScalarIndexQuery line asks (None: no index)."""
    lines = [x for x in plan.splitlines() if "ScalarIndexQuery" in x]
    return lines[0].split("query=", 1)[1].split(", metrics=")[0].strip() if lines else None


@pytest.mark.parametrize("who", ["pylance", "lancefmt"])
def test_like_through_either_index(tmp_path, who):
    """pylance 14 answers LIKE (and plain-literal regexp_like) through the NGRAM index when a
    literal run of three letters or digits yields a trigram; lancefmt does the same, with the
    same plan text, on either side's index."""
    uri = str(tmp_path / "ds")
    live = write(uri, sample_table(), "2.2", False)
    if who == "pylance":
        lance.dataset(uri).create_scalar_index("s", "NGRAM")
    else:
        build_index(uri, "s")
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    for flt, pattern in LIKES:
        want = like_truth(live, pattern)
        assert sorted(theirs.to_table(filter=flt)["id"].to_pylist()) == want, flt
        assert sorted(ours.to_table(filter=flt)["id"].to_pylist()) == want, flt
        assert index_query(ours.scanner(filter=flt).explain_plan()) == \
            index_query(theirs.scanner(filter=flt).explain_plan()), flt
    assert index_query(ours.scanner(filter="s LIKE '%hello%'").explain_plan()) == \
        '[regexp_like(s, Utf8(".*hello.*"))]@s_idx(NGram)'


@pytest.mark.parametrize("version, stable", CASES)
def test_pylance_index_answered_by_lancefmt(tmp_path, version, stable):
    uri = str(tmp_path / "ds")
    live = write(uri, sample_table(), version, stable)
    lance.dataset(uri).create_scalar_index("s", "NGRAM")
    ds = lancefmt.dataset(uri)
    for q in QUERIES:
        flt = "contains(s, '" + q.replace("'", "''") + "')"
        assert sorted(ds.to_table(filter=flt)["id"].to_pylist()) == truth(live, q), q
        assert ds.count_rows(filter=flt) == len(truth(live, q)), q
        plan = ds.scanner(filter=flt).explain_plan()
        assert ("ScalarIndexQuery" in plan) == (len(q) >= 3), q
        assert index_query(plan) == index_query(lance.dataset(uri).scanner(filter=flt).explain_plan()), q
    sel = ds.scanner(filter="contains(s, 'x9z')").index_selection()
    assert sum(len(v) for v in sel.rows.values()) < live.num_rows / 3  # the index narrowed it


@pytest.mark.parametrize("version, stable", CASES)
def test_lancefmt_index_answered_by_pylance(tmp_path, version, stable):
    uri, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    live = write(uri, sample_table(), version, stable)
    shutil.copytree(uri, ref)
    build_index(uri, "s")
    lance.dataset(ref).create_scalar_index("s", "NGRAM")
    assert postings_table(uri).equals(postings_table(ref))  # tokens and list bytes
    ds = lance.dataset(uri)
    for q in QUERIES:
        flt = "contains(s, '" + q.replace("'", "''") + "')"
        assert sorted(ds.to_table(filter=flt)["id"].to_pylist()) == truth(live, q), q
    plan = ds.scanner(filter="contains(s, 'hello')").explain_plan()
    assert 'ScalarIndexQuery: query=[contains(s, Utf8("hello"))]@s_idx(NGram)' in plan
    stats = ds.stats.index_stats("s_idx")
    assert stats["index_type"] == "NGram"
    assert stats["indices"] == lance.dataset(ref).stats.index_stats("s_idx")["indices"]
    d = ds.describe_indices()[0]
    assert d.type_url == "/lance.table.NGramIndexDetails" and d.num_rows_indexed == live.num_rows
    loaded = NGRAM.load(IndexStore(index_dir(uri)), None)
    assert [loaded.statistics()] == stats["indices"]


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


def fragment_training(uri: str, fragment_ids) -> TrainingData:
    ds = lancefmt.dataset(uri)
    t = ds.to_table(columns=["s"], with_row_id=True, with_row_address=True)
    frag = pc.shift_right(t["_rowaddr"], 32)
    t = t.filter(pc.is_in(frag, pa.array(fragment_ids, pa.uint64())))
    t = pa.table({"value": t["s"], "_rowid": t["_rowid"], "_rowaddr": t["_rowaddr"]})
    return TrainingData.from_table(ds.schema.field("s"), t)


@pytest.mark.parametrize("stable", [False, True])
def test_update_writes_what_pylance_optimize_writes(tmp_path, stable):
    uri, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    table = sample_table(300)
    lance.write_dataset(table.slice(0, 200), uri, max_rows_per_file=100, enable_stable_row_ids=stable)
    lance.dataset(uri).create_scalar_index("s", "NGRAM")
    lance.write_dataset(table.slice(200), uri, mode="append")
    shutil.copytree(uri, ref)
    lance.dataset(ref).optimize.optimize_indices()

    ds = lance.dataset(uri)
    old = [e for e in load_manifest(uri, None).indices if e.name == "s_idx"][0]
    new_frags = [f.fragment_id for f in ds.get_fragments() if f.fragment_id > 1]
    seg = NGRAM.load(IndexStore(index_dir(uri)), None)
    new_uuid_ = new_uuid()
    dest = IndexStore(f"{uri}/_indices/{new_uuid_}")
    details = seg.update(fragment_training(uri, new_frags), dest)
    entry = new_metadata(index_uuid=new_uuid_, name="s_idx", field_ids=list(old.fields),
                         dataset_version=ds.version, fragments=[f.fragment_id for f in ds.get_fragments()],
                         details=NGRAM.pack_details(details), index_version=0, files=dest.written)
    lancefmt.commit(uri, CreateIndex([entry], removed_indices=[old]), read_version=ds.version)
    assert postings_table(uri).equals(postings_table(ref))
    for q in ["hello", "alpha", "x9z 2"]:
        flt = f"contains(s, '{q}')"
        assert sorted(lance.dataset(uri).to_table(filter=flt)["id"].to_pylist()) == truth(table, q)
        assert "ScalarIndexQuery" in lance.dataset(uri).scanner(filter=flt).explain_plan()


def test_remap_writes_what_pylance_compaction_writes(tmp_path):
    uri, ref = str(tmp_path / "ds"), str(tmp_path / "ref")
    table = sample_table(300)
    lance.write_dataset(table, uri, max_rows_per_file=60)
    lance.dataset(uri).create_scalar_index("s", "NGRAM")
    lance.dataset(uri).delete("id % 7 = 2")
    shutil.copytree(uri, ref)
    before = lance.dataset(ref).to_table(columns=["id"], with_row_address=True)
    lance.dataset(ref).optimize.compact_files(target_rows_per_fragment=1000)
    after = lance.dataset(ref).to_table(columns=["id"], with_row_address=True)
    new_addr = dict(zip(after["id"].to_pylist(), after["_rowaddr"].to_pylist()))
    old = np.array(before["_rowaddr"].to_pylist(), np.uint64)
    new = np.array([new_addr[i] for i in before["id"].to_pylist()], np.uint64)
    deleted = [(i // 60 << 32) | (i % 60) for i in range(300) if i % 7 == 2]
    seg = NGRAM.load(IndexStore(index_dir(uri)), None)
    dest = IndexStore(str(tmp_path / "remapped"))
    seg.remap(RowIdMapping(old, new, np.array(deleted, np.uint64)), dest)
    mine = LanceFileReader(f"{dest.dir_uri}/{POSTINGS_FILE}").read_all().to_table()
    assert mine.equals(postings_table(ref))
    re = NGRAM.load(IndexStore(dest.dir_uri), None)
    live = lance.dataset(ref).to_table(with_row_address=True)
    for q in ["hello", "alpha be", "fox"]:
        cand = set(re.search(Contains(q)).rows.tolist())
        hits = live.filter(pc.fill_null(pc.match_substring(live["s"], q), False))
        assert set(hits["_rowaddr"].to_pylist()) <= cand
