"""The FTS tokenizer: pylance 14's parameters and token pipeline (pylance's own tokens are
checked in tests/interop/test_index_fts_interop.py)."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lancefmt.errors import InvalidArgumentError
from lancefmt.index.fts.tokenizer import (ENGLISH_STOP_WORDS, Tokenizer, fold, lower,
                                          normalize_params, params_json)


def toks(text, **params):
    return [t for t, _ in Tokenizer(normalize_params(params)).tokens(text)]


def test_defaults_stem_drop_stop_words_and_fold():
    assert toks("The quick brown foxes were running") == ["quick", "brown", "fox", "run"]
    assert toks("Café naïve résumé") == ["cafe", "naiv", "resume"]   # stemmed, then folded
    assert toks("dogs, cats & mice!") == ["dog", "cat", "mice"]


def test_positions_keep_removed_tokens_places():
    t = Tokenizer(normalize_params({}))
    assert t.tokens("the quick the fox") == [("quick", 1), ("fox", 3)]


def test_max_token_length_removes_tokens_of_that_many_bytes():
    assert toks("x" * 39 + " " + "y" * 40, stem=False) == ["x" * 39]
    assert toks("é" * 20, stem=False, ascii_folding=False) == []      # 40 bytes
    assert toks("y" * 400, max_token_length=None, stem=False) == ["y" * 400]


def test_lower_case_is_per_character_and_folding_is_lucene():
    assert lower("ΣΑΣ") == "σασ"              # no final sigma, as Rust's char::to_lowercase
    assert lower("İ") == "i̇"
    assert fold("straße ǆ ﬁne Ｆｕｌｌ") == "strasse dz fine Full"
    assert toks("ÀÉÎõü straße ǅ Ｆｕｌｌ ﬁne", stem=False) == ["aeiou", "strasse", "dz", "full", "fine"]


def test_simple_splits_on_rust_alphanumerics():
    # U+0345 (a combining mark Rust calls alphabetic) stays inside the token
    assert toks("a\u0345b c-d", stem=False, ascii_folding=False) == ["a\u0345b", "c", "d"]


def test_whitespace_and_raw_tokenizers():
    assert toks("Hello,  World!\u00a0x", base_tokenizer="whitespace", stem=False) == ["hello,", "world! x"]
    assert toks("Hello World", base_tokenizer="raw") == ["hello world"]


def test_ngram_tokenizer_windows_by_start_then_length_at_position_zero():
    t = Tokenizer(normalize_params({"base_tokenizer": "ngram", "min_ngram_length": 2,
                                    "max_ngram_length": 3}))
    assert t.tokens("aBcd") == [("ab", 0), ("abc", 0), ("bc", 0), ("bcd", 0), ("cd", 0)]
    p = normalize_params({"base_tokenizer": "ngram", "prefix_only": True, "min_ngram_length": 2,
                          "max_ngram_length": 4})
    assert [x for x, _ in Tokenizer(p).tokens("hello")] == ["he", "hel", "hell"]
    assert p["stem"] is False and p["remove_stop_words"] is False


def test_custom_stop_words_replace_the_built_in_list():
    assert toks("the quick fox", custom_stop_words=["quick"], stem=False) == ["the", "fox"]
    assert "were" in ENGLISH_STOP_WORDS and "not" not in ENGLISH_STOP_WORDS
    assert len(ENGLISH_STOP_WORDS) == 149


def test_languages_stem_with_snowball():
    assert toks("les chevaux couraient", language="French", remove_stop_words=False) == \
        ["le", "cheval", "cour"]
    assert toks("Ölbäume und Häuser", language="german", remove_stop_words=False) == \
        ["olbaum", "und", "haus"]
    with pytest.raises(InvalidArgumentError, match="stop words"):
        toks("les chevaux", language="French")


def test_params_json_is_pylances():
    want = ('{"lance_tokenizer":"text","base_tokenizer":"simple","language":"English",'
            '"with_position":true,"max_token_length":40,"lower_case":true,"stem":true,'
            '"remove_stop_words":true,"custom_stop_words":null,"ascii_folding":true,'
            '"min_ngram_length":3,"max_ngram_length":3,"prefix_only":false,"block_size":128,'
            '"split_identifiers":false,"split_on_numerics":false,"preserve_original":false,'
            '"index_operators":false}')
    assert params_json(normalize_params({"with_position": True})) == want
    assert json.loads(want)["language"] == "English"


@pytest.mark.parametrize("bad", [{"base_tokenizer": "icu2"}, {"language": "Klingon"},
                                 {"block_size": 64}, {"nope": 1},
                                 {"base_tokenizer": "ngram", "min_ngram_length": 4, "max_ngram_length": 2}])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(InvalidArgumentError):
        normalize_params(bad)


def test_split_interns_raw_tokens_by_first_appearance():
    t = Tokenizer(normalize_params({}))
    sp = t.splitter()
    docs, ids, pos = sp.split(pa.array(["b a b", None, "c a"], pa.string()))
    assert docs.tolist() == [0, 0, 0, 2, 2]
    assert ids.tolist() == [0, 1, 0, 2, 1]
    assert pos.tolist() == [0, 1, 2, 0, 1]
    assert sp.raw_tokens() == [b"b", b"a", b"c"]
    sliced = pa.array(["zz", "b q"], pa.large_string()).slice(1)
    docs, ids, _ = sp.split(sliced, 7)
    assert docs.tolist() == [7, 7] and sp.raw_tokens(3) == [b"q"]


def test_normalize_all_is_normalize_of_each():
    raws = [b"Running", b"the", b"x" * 45, "Caf\u00e9s".encode(), b"WERE", b"dogs"]
    for params in ({}, {"stem": False}, {"custom_stop_words": ["dog"]}, {"ascii_folding": False}):
        t = Tokenizer(normalize_params(params))
        assert t.normalize_all(raws) == [t.normalize(r) for r in raws]
