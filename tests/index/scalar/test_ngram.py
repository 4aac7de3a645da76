"""NGRAM index: tokens, posting lists (64-bit roaring treemaps), search, update, remap, stats and
corrupt files. pylance's side is in tests/interop/test_index_ngram_interop.py."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyroaring import BitMap64

from lancefmt.errors import CorruptFileError, InvalidArgumentError
from lancefmt.index.core.planner import plan
from lancefmt.index.core.catalog import NamedIndex, Segment
from lancefmt.index.core.metadata import new_metadata, new_uuid
from lancefmt.index.core.registry import RowIdMapping, TrainingData, by_name
from lancefmt.index.core.store import IndexStore
from lancefmt.index.scalar import ngram_postings
from lancefmt.index.scalar._ngram import decode_list, encode_lists, intersect_sorted, union_lists
from lancefmt.index.scalar.ngram import NGRAM, NGramIndex, like_segments
from lancefmt.index.scalar.ngram_postings import POSTINGS_FILE, Postings, text_tokens
from lancefmt.sql.sargable import OTHER, Contains, Equals, Like, Term, sargable
from pyroaring import BitMap

A = 37


def tok(s: str) -> int:
    """Token of a lower-case / digit trigram."""
    pos = [int(c) + 1 if c.isdigit() else ord(c) - ord("a") + 11 for c in s]
    return pos[0] * A * A + pos[1] * A + pos[2]


def toks(*trigrams) -> list:
    return sorted(tok(t) for t in trigrams)


# -- tokens ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("Hello World", ["hel", "ell", "llo", "wor", "orl", "rld"]),
    ("ABC-def_ghi", ["abc", "def", "ghi"]),
    ("x1y2z3", ["x1y", "1y2", "y2z", "2z3"]),
    ("café naïve", ["caf", "afe", "nai", "aiv", "ive"]),
    ("Straße", ["str", "tra", "ras", "ass", "sse"]),
    ("ﬁle", ["fil", "ile"]),
    ("ＡＢＣ", ["abc"]),
    ("Ünïcödé ÆØÅ", ["uni", "nic", "ico", "cod", "ode", "aeo", "eoa"]),
    ("İstanbul", ["sta", "tan", "anb", "nbu", "bul"]),  # İ -> i + combining dot: a break
    ("aaaa", ["aaa"]),
    ("ab", []), ("", []), ("a b c", []), ("日本語テキスト", []), ("ΣΊΣΥΦΟΣ", []), ("ᴀbc", []),
])
def test_tokens_as_lance(text, want):
    assert text_tokens(text).tolist() == toks(*want)


def test_upper_case_from_folding_wraps_like_lance():
    # ℌ has no lower case and folds to H; Lance's u8 arithmetic gives H the position 242
    assert text_tokens("ℌello").tolist() == sorted([242 * A * A + 15 * A + 22, tok("ell"), tok("llo")])
    # outlined V (Unicode 16) folds to V, position 0: three of them make token 0, the null token
    assert text_tokens("\U0001CCEB" * 3).tolist() == [0]


def test_invalid_utf8_only_breaks_trigrams():
    from lancefmt.index.scalar._ngram import query_tokens
    ft = ngram_postings.fold_table()
    assert query_tokens(b"abc\xffdef\xc3", ft).tolist() == toks("abc", "def")
    assert query_tokens(b"ab\xe2\x82cd", ft).tolist() == []


def test_string_arrays_and_nulls():
    values = pa.array(["Hello", None, "hello there", "", "xyz"], pa.large_string())
    p = Postings.of_strings(values, np.array([10, 11, 12, 13, 14], np.uint64))
    got = {int(t): p.list_of(k).tolist() for k, t in enumerate(p.tokens)}
    assert got[0] == [11]  # nulls under token 0
    assert got[tok("hel")] == [10, 12] and got[tok("the")] == [12] and got[tok("xyz")] == [14]
    sliced = pa.chunked_array([pa.array(["zz", "Hello", None, "hello"]).slice(1), pa.array(["abc"])])
    q = Postings.of_strings(sliced, np.arange(4, dtype=np.uint64))
    got = {int(t): q.list_of(k).tolist() for k, t in enumerate(q.tokens)}
    assert got == {0: [1], tok("hel"): [0, 2], tok("ell"): [0, 2], tok("llo"): [0, 2], tok("abc"): [3]}


def test_unsorted_row_ids_give_sorted_lists():
    p = Postings.of_strings(pa.array(["abc", "abcd", "bcd"]), np.array([30, 5, 17], np.uint64))
    got = {int(t): p.list_of(k).tolist() for k, t in enumerate(p.tokens)}
    assert got == {tok("abc"): [5, 30], tok("bcd"): [5, 17]}
    with pytest.raises(ValueError):
        Postings.of_strings(pa.array(["abc", "abc"]), np.array([3, 3], np.uint64))


# -- treemaps -------------------------------------------------------------------------------------
def random_ids(rng, n_frags=3, dense=False):
    parts = []
    for f in rng.choice(1000, n_frags, replace=False):
        if dense:  # a bitset container (> 4096 values under one key) and a sparse one
            low = np.concatenate([rng.choice(65536, 5000, replace=False), 70000 + np.arange(3)])
        else:
            low = rng.choice(1 << 20, int(rng.integers(1, 300)), replace=False)
        parts.append((np.uint64(f) << np.uint64(32)) | low.astype(np.uint64))
    return np.unique(np.concatenate(parts))


@pytest.mark.parametrize("dense", [False, True])
def test_treemap_bytes_are_roaring_treemaps(dense):
    rng = np.random.default_rng(1)
    lists = [random_ids(rng, int(rng.integers(1, 4)), dense) for _ in range(5)] + [np.empty(0, np.uint64)]
    offsets = np.concatenate(([0], np.cumsum([x.size for x in lists])))
    bin_off, data = encode_lists(offsets, np.concatenate(lists))
    for k, ids in enumerate(lists):
        raw = data[bin_off[k]:bin_off[k + 1]].tobytes()
        assert raw == BitMap64(ids.tolist()).serialize() or not ids.size
        assert np.array_equal(decode_list(raw), ids)
        assert list(BitMap64.deserialize(raw)) == ids.tolist()


def test_treemap_run_containers_are_read():
    ids = list(range(100, 70000)) + [(7 << 32) + 5, (7 << 32) + 6]
    bm = BitMap64(ids)
    bm.run_optimize()
    raw = bm.serialize()
    assert np.array_equal(decode_list(raw), np.array(ids, np.uint64))


def test_empty_treemap():
    assert decode_list(b"\0" * 8).size == 0
    bin_off, data = encode_lists(np.array([0, 0]), np.empty(0, np.uint64))
    assert data.tobytes() == b"\0" * 8


def test_bad_treemaps_are_refused_never_crash():
    rng = np.random.default_rng(7)
    good = BitMap64(random_ids(rng, 2, dense=True).tolist()).serialize()
    for cut in range(0, len(good) - 1, 97):
        with pytest.raises(ValueError):
            decode_list(good[:cut])
    with pytest.raises(ValueError):
        decode_list(good + b"\0")
    refused = 0
    for i in range(300):
        buf = bytearray(good)
        pos = int(rng.integers(0, 60)) if i % 2 else int(rng.integers(0, len(buf)))
        buf[pos] ^= 1 << int(rng.integers(0, 8))
        try:
            out = decode_list(bytes(buf))
        except ValueError:
            refused += 1
            continue
        assert out.size == 0 or bool(np.all(out[1:] > out[:-1]))  # whatever it reads is a set
    assert refused > 50


def test_set_kernels():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = np.unique(rng.integers(0, 5000, int(rng.integers(0, 400))).astype(np.uint64))
        b = np.unique(rng.integers(0, 5000, int(rng.integers(0, 4000))).astype(np.uint64))
        assert np.array_equal(intersect_sorted(a, b), np.intersect1d(a, b))
    ta, tb = np.array([1, 5, 9], np.uint32), np.array([5, 7], np.uint32)
    oa, ob = np.array([0, 2, 4, 5]), np.array([0, 3, 4])
    ia, ib = np.array([1, 2, 3, 9, 4], np.uint64), np.array([2, 5, 9, 1], np.uint64)
    t, o, i = union_lists(ta, oa, ia, tb, ob, ib)
    assert t.tolist() == [1, 5, 7, 9] and o.tolist() == [0, 2, 6, 7, 8]
    assert i.tolist() == [1, 2, 2, 3, 5, 9, 1, 4]


def test_posting_table_round_trip_and_chunks(monkeypatch):
    values = pa.array([f"word{i} other{i % 7}" for i in range(300)])
    p = Postings.of_strings(values, np.arange(300, dtype=np.uint64) + (np.uint64(3) << np.uint64(32)))
    t = p.to_table()
    assert t.schema == ngram_postings.SCHEMA and t.column(0).to_numpy().tolist() == p.tokens.tolist()
    back = Postings.from_columns(t.column(0).to_numpy(), t.column(1))
    assert np.array_equal(back.offsets, p.offsets) and np.array_equal(back.ids, p.ids)
    monkeypatch.setattr(ngram_postings, "MAX_CHUNK_BYTES", 200)
    t2 = p.to_table()
    assert t2.column(1).num_chunks > 3 and t2.column(1).combine_chunks().equals(t.column(1).combine_chunks())


def test_keep_and_mapped_keep_every_token():
    p = Postings(np.array([4, 8], np.uint32), np.array([0, 2, 5]), np.array([1, 9, 2, 3, 9], np.uint64))
    k = p.keep_ids(p.ids != 9)
    assert k.tokens.tolist() == [4, 8] and k.offsets.tolist() == [0, 1, 3] and k.ids.tolist() == [1, 2, 3]
    m = p.mapped(np.array([50, 9, 40, 3, 9], np.uint64), np.array([True, False, True, True, False]))
    assert m.offsets.tolist() == [0, 1, 3] and m.ids.tolist() == [50, 3, 40]
    gone = p.mapped(p.ids, np.zeros(5, bool))
    assert gone.tokens.tolist() == [4, 8] and gone.offsets.tolist() == [0, 0, 0]


# -- the index ------------------------------------------------------------------------------------
VALUES = ["Hello World", "hello there", "Straße", "café", None, "", "the quick fox", "xyz", "a b",
          "HELLO", "shell lore"]


def training(values, ids=None, frag=0) -> TrainingData:
    n = len(values)
    ids = np.arange(n, dtype=np.uint64) if ids is None else np.asarray(ids, np.uint64)
    addr = (np.uint64(frag) << np.uint64(32)) + np.arange(n, dtype=np.uint64)
    t = pa.table({"value": pa.array(values, pa.string()), "_rowid": ids, "_rowaddr": addr})
    return TrainingData.from_table(pa.field("s", pa.string()), t)


@pytest.fixture
def index(tmp_path) -> NGramIndex:
    store = IndexStore(str(tmp_path / "idx"))
    details = NGRAM.train(training(VALUES), store, {})
    assert details.SerializeToString() == b""
    assert store.written[0][0] == POSTINGS_FILE
    return NGRAM.load(IndexStore(str(tmp_path / "idx")), details)


def contains(values, text):
    return [i for i, v in enumerate(values) if v is not None and text in v]


@pytest.mark.parametrize("text", ["hello", "HELLO", "ello", "Straße", "strasse", "quick fox", "café",
                                  "cafe", "ell lo"])
def test_search_finds_every_match(index, text):
    res = index.search(Contains(text))
    assert not res.exact and not res.negated
    assert set(contains(VALUES, text)) <= set(res.rows.tolist())
    wanted = set(text_tokens(text).tolist())
    holds = [i for i, v in enumerate(VALUES) if v is not None and wanted <= set(text_tokens(v).tolist())]
    assert res.rows.tolist() == holds  # exactly the values holding every trigram


def test_search_without_trigrams_is_every_row(index):
    for text in ["a b", "!!!", "   ", "é a", "ab", ""]:
        res = index.search(Contains(text))
        assert res.negated and not res.exact and res.rows.size == 0


def test_missing_trigram_is_exactly_nothing(index):
    res = index.search(Contains("hello zzz"))
    assert res.exact and not res.negated and res.rows.size == 0


def test_serves_patterns_of_three_characters():
    assert NGRAM.serves(Contains("abc")) and NGRAM.serves(Contains("a b"))
    assert not NGRAM.serves(Contains("ab")) and not NGRAM.serves(Contains("é"))
    assert not NGRAM.serves(Equals("abc", pa.string()))
    assert by_name("ngram") is NGRAM and NGRAM.type_name == "NGram"
    assert NGRAM.details_type_url == "/lance.table.NGramIndexDetails" and NGRAM.index_version == 0


def test_check_field():
    NGRAM.check_field(pa.field("s", pa.large_string()))
    for t in (pa.int64(), pa.binary()):
        with pytest.raises(TypeError, match="NGRAM index column n must be a string"):
            NGRAM.check_field(pa.field("n", t))


def test_statistics_and_prewarm(index):
    assert index.statistics() == {"num_ngrams": int(index.tokens.size)}
    before = index.search(Contains("hello")).rows
    index.prewarm()
    index._cache.clear()
    assert np.array_equal(index.search(Contains("hello")).rows, before)


def test_update_merges_and_keeps(index, tmp_path):
    dest = IndexStore(str(tmp_path / "upd"))
    new = training(["brand new hello", "zzz top"], ids=[(1 << 32) + 0, (1 << 32) + 1], frag=1)
    details = index.update(new, dest, keep=lambda ids: ids != 1)
    assert details.SerializeToString() == b""
    up = NGRAM.load(IndexStore(str(tmp_path / "upd")), details)
    assert up.search(Contains("hello")).rows.tolist() == [0, 9, 1 << 32]
    assert up.search(Contains("zzz")).rows.tolist() == [(1 << 32) + 1]
    assert up.search(Contains("there")).rows.tolist() == []  # row 1 dropped, its tokens kept
    assert up.statistics()["num_ngrams"] >= index.statistics()["num_ngrams"]


def test_remap_moves_and_drops(index, tmp_path):
    dest = IndexStore(str(tmp_path / "rm"))
    old = np.array([0, 9], np.uint64)
    new = np.array([(5 << 32) + 1, (5 << 32) + 0], np.uint64)
    mapping = RowIdMapping(old, new, np.array([1], np.uint64))
    index.remap(mapping, dest)
    rm = NGRAM.load(IndexStore(str(tmp_path / "rm")), None)
    assert rm.search(Contains("hello")).rows.tolist() == [(5 << 32) + 0, (5 << 32) + 1]
    assert rm.search(Contains("shell")).rows.tolist() == [10]
    assert rm.statistics() == index.statistics()


def test_planner_combines_segments_with_every_row(tmp_path):
    """One segment can say "every row" (no trigram) while another lists rows: the union is
    every row, to be re-checked."""
    segs = []
    for k, vals in enumerate([["abc def"], ["xyz"]]):
        st = IndexStore(str(tmp_path / f"s{k}"))
        details = NGRAM.train(training(vals, ids=[k << 32], frag=k), st, {})
        meta = new_metadata(index_uuid=new_uuid(), name="s_idx", field_ids=[0], dataset_version=1,
                            fragments=[k], details=NGRAM.pack_details(details), index_version=0)
        segs.append(Segment(meta, NGRAM, BitMap([k]), st))
    named = NamedIndex("s_idx", "s", NGRAM, segs)
    p = plan(Term("s", Contains("a b")), {"s": [named]})
    assert p.result.negated and not p.exact
    p = plan(Term("s", Contains("def")), {"s": [named]})
    assert p.result.rows.tolist() == [0] and not p.exact
    assert plan(Term("s", Contains("de")), {"s": [named]}) is None


# -- corrupt files ----------------------------------------------------------------------------------
def test_truncated_file_names_the_file(tmp_path):
    store = IndexStore(str(tmp_path / "idx"))
    NGRAM.train(training(VALUES), store, {})
    path = tmp_path / "idx" / POSTINGS_FILE
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError) as e:
        NGRAM.load(IndexStore(str(tmp_path / "idx")), None)
    assert POSTINGS_FILE in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(CorruptFileError):
        NGRAM.load(IndexStore(str(tmp_path / "nothing")), None)


def test_flipped_posting_bytes(tmp_path):
    store = IndexStore(str(tmp_path / "idx"))
    NGRAM.train(training(["hello"] * 3), store, {})
    path = tmp_path / "idx" / POSTINGS_FILE
    data = bytearray(path.read_bytes())
    good = BitMap64([0, 1, 2]).serialize()
    at = bytes(data).find(good)
    assert at > 0
    data[at + 8 + 4] ^= 0xFF  # the roaring cookie of the list under "hel"
    path.write_bytes(bytes(data))
    idx = NGRAM.load(IndexStore(str(tmp_path / "idx")), None)
    with pytest.raises(CorruptFileError) as e:
        idx.search(Contains("hello"))
    assert POSTINGS_FILE in str(e.value)
    with pytest.raises(CorruptFileError):
        idx.postings()


def test_wrong_schema_is_corrupt(tmp_path):
    store = IndexStore(str(tmp_path / "idx"))
    store.write_table(POSTINGS_FILE, pa.table({"tokens": pa.array([1], pa.int64()),
                                               "posting_list": pa.array([b"x"])}))
    with pytest.raises(CorruptFileError):
        NGRAM.load(IndexStore(str(tmp_path / "idx")), None)


def test_unsorted_tokens_are_read_as_lance_does(tmp_path):
    """A writer other than Lance may list tokens in any order; the last row of a token wins."""
    store = IndexStore(str(tmp_path / "idx"))
    lists = [BitMap64([1]).serialize(), BitMap64([2]).serialize(), BitMap64([3]).serialize()]
    store.write_table(POSTINGS_FILE, pa.table([pa.array([tok("abc"), tok("aaa"), tok("abc")], pa.uint32()),
                                               pa.array(lists)], schema=ngram_postings.SCHEMA))
    idx = NGRAM.load(IndexStore(str(tmp_path / "idx")), None)
    assert idx.search(Contains("abc")).rows.tolist() == [3]
    p = idx.postings()
    assert p.tokens.tolist() == [tok("aaa"), tok("abc")] and p.ids.tolist() == [2, 3]
    assert idx.statistics() == {"num_ngrams": 2}


def test_unknown_query_is_refused(index):
    with pytest.raises(InvalidArgumentError):
        index.search(Equals("x", pa.string()))


def test_full_scan_reference_agrees_on_random_text():
    rng = np.random.default_rng(5)
    alphabet = list("abcdeé ÄÖ-1x")
    values = ["".join(rng.choice(alphabet, int(rng.integers(0, 12)))) for _ in range(500)]
    p = Postings.of_strings(pa.array(values), np.arange(500, dtype=np.uint64))
    for _ in range(50):
        v = values[int(rng.integers(0, 500))]
        if len(v) < 3:
            continue
        s = int(rng.integers(0, len(v) - 2))
        q = v[s:s + 3 + int(rng.integers(0, 3))]
        truth = set(np.flatnonzero(pc.fill_null(pc.match_substring(pa.array(values), q), False)
                                   .to_numpy(zero_copy_only=False)).tolist())
        wanted = text_tokens(q)
        cand = None
        for t in wanted.tolist():
            k = int(np.searchsorted(p.tokens, t))
            got = set(p.list_of(k).tolist()) if k < len(p) and p.tokens[k] == t else set()
            cand = got if cand is None else cand & got
        assert cand is None or truth <= cand


# -- LIKE ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern, runs", [
    ("%xyz%", ["xyz"]), ("hel%wor_d", ["hel", "wor", "d"]), ("%a\\_bcd%", ["a", "bcd"]),
    ("%back\\\\slash%", ["back", "slash"]), ("%xy\\az%", ["xy", "z"]), ("\\", []), ("%%", []),
])
def test_like_segments_are_substrings_of_every_match(pattern, runs):
    assert like_segments(pattern) == runs


@pytest.mark.parametrize("pattern, served", [
    ("%xyz%", True), ("xyz%", True), ("%hél%", True), ("%ab%", False), ("%a b%", False),
    ("%ca_é%", False), ("%日本語%", False), ("%x9z%1%", True),
])
def test_serves_like_with_a_trigram(pattern, served):
    assert NGRAM.serves(Like(pattern)) is served


def test_like_search(index):
    res = index.search(Like("%hel%wor%"))
    assert res.rows.tolist() == [0] and not res.exact
    assert index.search(Like("%zzz%")).exact  # an absent trigram: nothing
    assert index.search(Like("%a%b%")).negated  # no trigram: every row


def test_like_in_filters():
    schema = pa.schema([("s", pa.string()), ("n", pa.int64())])
    assert sargable("s LIKE '%xyz%'", schema) == Term("s", Like("%xyz%"))
    assert sargable("s LIKE 'xyz'", schema) == Term("s", Equals("xyz", pa.string()))
    assert sargable("regexp_like(s, 'xyz')", schema) == Term("s", Like("%xyz%"))
    for other in ["s NOT LIKE '%x%'", "s ILIKE '%xyz%'", "regexp_like(s, 'x.z')", "n LIKE '%1%'",
                  "s LIKE '%xyz%' ESCAPE '!'", "regexp_like(s, 'xyz', 'i')"]:
        assert sargable(other, schema) is OTHER, other
    assert Like("%back\\\\sla_%").describe("s") == 'regexp_like(s, Utf8(".*back\\\\\\\\sla..*"))'


def test_training_in_groups_equals_one_build(tmp_path, monkeypatch):
    from lancefmt.index.scalar import ngram
    values = [f"value {i} {'abc' if i % 3 else 'xyz'} naïve" if i % 17 else None for i in range(3000)]
    rows = []
    for frag in range(3):  # three fragments, row ids ascending across them
        part = values[frag * 1000:(frag + 1) * 1000]
        rows.append(pa.table({"value": pa.array(part, pa.string()),
                              "_rowid": (np.uint64(frag) << np.uint64(32)) + np.arange(1000, dtype=np.uint64),
                              "_rowaddr": (np.uint64(frag) << np.uint64(32)) + np.arange(1000, dtype=np.uint64)}))
    data = TrainingData.from_table(pa.field("s", pa.string()), pa.concat_tables(rows))
    whole = ngram.postings_of(data)
    monkeypatch.setattr(ngram, "GROUP_BYTES", 1000)
    grouped = ngram.postings_of(data)
    assert np.array_equal(whole.tokens, grouped.tokens) and np.array_equal(whole.offsets, grouped.offsets)
    assert np.array_equal(whole.ids, grouped.ids)
    assert whole.to_table().equals(grouped.to_table())


def test_stored_fold_table_is_what_its_derivation_gives():
    """The stored table is derive_table()'s output (this Python's Unicode database plus the
    Unicode 16 characters pylance 14 knows); the interop test checks it against pylance."""
    from lancefmt.index.scalar import ngram_fold
    assert ngram_fold.derive_table() == ngram_fold.TABLE
    assert ngram_fold.parse_table(ngram_fold.format_table(ngram_fold.TABLE)) == ngram_fold.TABLE
