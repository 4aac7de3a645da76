"""INVERTED (full-text search) against pylance 14: both libraries write the same index files
(tokens, FST token set, documents, posting blocks, impacts, positions) for the same column and
parameters, and every code point is tokenised alike."""
from __future__ import annotations

import warnings

import lance
import numpy as np
import pyarrow as pa
import pytest
from fts_support import assert_same_files, segment_dir, table, write
from lance.file import LanceFileReader
from lance.query import DocumentGranularity

import lancefmt
from lancefmt.index.fts.tokenizer import Tokenizer, normalize_params

CASES = [("2.0", False), ("2.1", True), ("2.2", False), ("2.2", True)]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("version, stable", CASES)
def test_same_files_as_pylance(tmp_path, version, stable):
    uri = str(tmp_path / "ds")
    write(uri, table(900), version, stable)
    lance.dataset(uri).create_scalar_index("text", "INVERTED", name="theirs", with_position=True)
    lancefmt.dataset(uri).create_scalar_index("text", "INVERTED", name="ours", with_position=True)
    assert_same_files(uri, "theirs", "ours")


@pytest.mark.parametrize("params", [
    {},
    {"base_tokenizer": "whitespace", "stem": False, "lower_case": False},
    {"base_tokenizer": "raw", "ascii_folding": False},
    {"base_tokenizer": "ngram", "with_position": True},
    {"base_tokenizer": "ngram", "min_ngram_length": 2, "max_ngram_length": 4, "prefix_only": True},
    {"remove_stop_words": True, "custom_stop_words": ["quick", "dog"], "max_token_length": 6},
    {"max_token_length": None, "language": "English", "with_position": True},
])
def test_same_files_for_each_tokenizer(tmp_path, params):
    uri = str(tmp_path / "ds")
    write(uri, table(600))
    lance.dataset(uri).create_scalar_index("text", "INVERTED", name="theirs", **params)
    lancefmt.dataset(uri).create_scalar_index("text", "INVERTED", name="ours", **params)
    assert_same_files(uri, "theirs", "ours")


@pytest.mark.parametrize("granularity", [DocumentGranularity.ROW, DocumentGranularity.LIST_ELEMENT])
def test_same_files_for_list_columns(tmp_path, granularity):
    uri = str(tmp_path / "ds")
    write(uri, table(500))
    lance.dataset(uri).create_scalar_index("tags", "INVERTED", name="theirs", with_position=True,
                                           document_granularity=granularity)
    lancefmt.dataset(uri).create_scalar_index("tags", "INVERTED", name="ours", with_position=True,
                                              document_granularity=granularity)
    assert_same_files(uri, "theirs", "ours")
    from lancefmt.table.versions import load_manifest
    entries = {e.name: e for e in load_manifest(uri, None).indices}
    assert entries["ours"].index_details == entries["theirs"].index_details
    assert entries["ours"].index_version == entries["theirs"].index_version


def test_default_names_and_versions(tmp_path):
    uri = str(tmp_path / "ds")
    write(uri, table(200))
    ds = lancefmt.dataset(uri)
    ds.create_scalar_index("text", "FTS")
    ds.create_scalar_index("tags", "INVERTED", document_granularity=DocumentGranularity.LIST_ELEMENT)
    theirs = {i.name: i for i in lance.dataset(uri).describe_indices()}
    assert set(theirs) == {"text_idx", "tags_list_element_idx"}
    from lancefmt.table.versions import load_manifest
    versions = {e.name: e.index_version for e in load_manifest(uri, None).indices}
    assert versions == {"text_idx": 2, "tags_list_element_idx": 3}


def test_every_sampled_code_point_tokenised_alike(tmp_path):
    """Random code points inside words, through the whole default pipeline and through the
    plain splitter (lower-case and folding only), against pylance's token sets."""
    rng = np.random.default_rng(11)
    cps = [c for c in rng.integers(0x80, 0x30000, 4000).tolist() if not 0xD800 <= c < 0xE000]
    docs = [f"{c:06x}{chr(c)}Ab" for c in cps] + [f"k{chr(c)}{chr(d)}z" for c, d in zip(cps, cps[1:])]
    for params in ({"stem": False, "remove_stop_words": False}, {}):
        uri = str(tmp_path / f"u{len(params)}")
        lance.write_dataset(pa.table({"t": docs}), uri).create_scalar_index("t", "INVERTED", **params)
        d = segment_dir(uri, "t_idx")
        import ducer
        fst = LanceFileReader(f"{d}/part_0_tokens.lance").read_all().to_table().column(0)[0].as_py()
        theirs = {k.decode() for k in ducer.Map(fst).keys()}
        tok = Tokenizer(normalize_params(params))
        ours = {t for doc in docs for t, _ in tok.tokens(doc)}
        assert ours == theirs


JIEBA_DICT = "我们 98740 r\n都 202780 d\n有 423765 v\n光明 1219 n\n的 318825 uj\n前途 1263 n\n前 62779 f\n途 857 n\n"


@pytest.mark.parametrize("model", ["default", "user_dict"])
def test_same_files_for_jieba(tmp_path, monkeypatch, model):
    """A jieba language model (main and user dictionaries) tokenises as in pylance, spaces
    and unknown words included."""
    import json

    home = tmp_path / "models"
    (home / "jieba" / "default").mkdir(parents=True)
    (home / "jieba" / "default" / "dict.txt").write_text(JIEBA_DICT)
    (home / "jieba" / "user_dict").mkdir()
    (home / "jieba" / "user_dict" / "config.json").write_text(
        json.dumps({"main": "../default/dict.txt", "users": ["user.txt"]}))
    (home / "jieba" / "user_dict" / "user.txt").write_text("光明的前途 318825 n\n")
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(home))
    uri = str(tmp_path / "ds")
    texts = ["我们都有光明的前途", "光明的前途", "Hello World 我们", None, "他们拿着苹果手机 前途"]
    lance.write_dataset(pa.table({"text": texts * 3}), uri)
    params = {"base_tokenizer": f"jieba/{model}", "with_position": True}
    lance.dataset(uri).create_scalar_index("text", "INVERTED", name="theirs", **params)
    lancefmt.dataset(uri).create_scalar_index("text", "INVERTED", name="ours", **params)
    assert_same_files(uri, "theirs", "ours")
    for lib in (lance, lancefmt):   # a missing model directory is invalid input in pylance 14
        with pytest.raises(ValueError, match="Invalid directory path"):
            lib.dataset(uri).create_scalar_index("text", "INVERTED", name="x", base_tokenizer="jieba/nope")


@pytest.mark.parametrize("lib", [lance, lancefmt])
def test_lindera_models_fail_to_load_as_in_pylance(tmp_path, monkeypatch, lib):
    """lancefmt has no Lindera segmenter: a missing model directory is a ValueError, a model
    an OSError naming its config, the errors pylance 14 gives for the models of Lance's own
    tests (none of which it can load); nothing is committed."""
    home = tmp_path / "models"
    (home / "lindera" / "m").mkdir(parents=True)
    (home / "lindera" / "m" / "config.yml").write_text(
        'segmenter:\n  mode: "normal"\n  dictionary:\n    path: "./nowhere/ipadic"\n')
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(home))
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"text": ["成田国際空港", "羽田空港"]}), uri)
    with pytest.raises(ValueError, match="Invalid directory path"):
        lib.dataset(uri).create_scalar_index("text", "INVERTED", base_tokenizer="lindera/nope")
    with pytest.raises(OSError, match="Failed to load tokenizer config at .*config.yml"):
        lib.dataset(uri).create_scalar_index("text", "INVERTED", base_tokenizer="lindera/m")
    assert lib.dataset(uri).version == 1 and not lib.dataset(uri).describe_indices()


def test_json_documents(tmp_path):
    """A JSON column is indexed as path,type,value triplets (strings analysed, numbers printed
    as Lance prints them): the same files and details as pylance, and the same answers to
    triplet queries."""
    import json

    import lance.query as LQ

    import lancefmt.query as FQ
    from lancefmt.table.versions import load_manifest

    docs = [{"b": 1, "a": "Hello World the", "c": [True, None, 2.5, "X y"],
             "d": {"z": "deep", "e": 1e20, "f": 1e-7}},
            {"a": "hello", "Title": "HarryPotter Chapter"}, None, {"Title": "The Hobbit", "b": 2}]
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": range(12), "j": pa.array(
        [None if d is None else json.dumps(d) for d in docs] * 3, pa.json_())}), uri)
    lance.dataset(uri).create_scalar_index("j", "INVERTED", name="theirs", with_position=True)
    lancefmt.dataset(uri).create_scalar_index("j", "INVERTED", name="ours", with_position=True)
    assert_same_files(uri, "theirs", "ours")
    entries = {e.name: e for e in load_manifest(uri, None).indices}
    assert entries["ours"].index_details == entries["theirs"].index_details
    lancefmt.dataset(uri).drop_index("theirs")
    for text in ("a,str,hello", "b,number,1;c,bool,true", "Title,str,hobbit", "d.e,number,1e+20"):
        want = lance.dataset(uri).to_table(full_text_query=LQ.MatchQuery(text, "j"), columns=["id"])
        got = lancefmt.dataset(uri).to_table(full_text_query=FQ.MatchQuery(text, "j"), columns=["id"])
        assert sorted(got["id"].to_pylist()) == sorted(want["id"].to_pylist()) != []
    with pytest.raises(ValueError, match="Invalid triple"):
        lancefmt.dataset(uri).to_table(full_text_query=FQ.MatchQuery("nonsense", "j"))
