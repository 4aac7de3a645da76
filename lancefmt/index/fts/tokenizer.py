"""The FTS index's tokenizer: pylance 14's parameters and token pipeline.

Lance (``InvertedIndexParams::build``) runs a base tokenizer (``simple``, ``whitespace``,
``raw``, ``ngram``) and then, in this order: remove tokens of ``max_token_length`` bytes or
more, lower-case (per character), stem (Snowball, via PyStemmer, which gives Lance's stems),
drop stop words (after stemming, as Lance does), fold to ASCII. A removed token keeps its
position (positions count the base tokenizer's tokens), so phrase distances match pylance's.

The base tokenizer is the Cython :class:`~._tokenize.Splitter` (or, for ``jieba/<model>``,
:mod:`.jieba_tokenizer`; ``lindera/<model>`` is refused by :mod:`.lindera_tokenizer`); the filters run once per distinct raw token (:meth:`Tokenizer.normalize`), so their cost grows with the vocabulary, not
with the text.
"""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from ._tokenize import Splitter
from .jieba_tokenizer import is_jieba
from .lindera_tokenizer import is_lindera
from .unicode_tables import ALNUM_RANGES, FOLD, LOWER

#: Lance's English stop words (pylance 14 removes exactly these; read from it word by word).
ENGLISH_STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can did do does doing down during each few for from further had has have
having he he'd he'll he's her here hers herself him himself his how i i'd i'll i'm i've if in into
is it it'd it'll it's its itself just me more most my myself now of off on once only or other our
ours ourselves out over own re same she she'd she'll she's should should've so some such than that
that'll the their theirs them themselves then there these they they'd they'll they're they've this
those through to too under until up very was we we'd we'll we're we've were what when where which
while who whom why will with you you'd you'll you're you've your yours yourself yourselves
""".split())

#: Snowball stemmer names of Lance's ``Language`` values.
LANGUAGES = {
    "Arabic": "arabic", "Danish": "danish", "Dutch": "dutch", "English": "english",
    "Finnish": "finnish", "French": "french", "German": "german", "Greek": "greek",
    "Hungarian": "hungarian", "Italian": "italian", "Norwegian": "norwegian",
    "Portuguese": "portuguese", "Romanian": "romanian", "Russian": "russian",
    "Spanish": "spanish", "Swedish": "swedish", "Tamil": "tamil", "Turkish": "turkish",
}
BASE_TOKENIZERS = ("simple", "whitespace", "raw", "ngram")

#: The keys of the ``params`` JSON pylance 14 writes, in its order, with its defaults.
DEFAULTS = {
    "lance_tokenizer": "text", "base_tokenizer": "simple", "language": "English",
    "with_position": False, "max_token_length": 40, "lower_case": True, "stem": True,
    "remove_stop_words": True, "custom_stop_words": None, "ascii_folding": True,
    "min_ngram_length": 3, "max_ngram_length": 3, "prefix_only": False, "block_size": 128,
    "split_identifiers": False, "split_on_numerics": False, "preserve_original": False,
    "index_operators": False,
}
#: accepted at build time and never stored (as pylance)
BUILD_ONLY = ("memory_limit", "num_workers", "format_version", "document_granularity",
              "worker_memory_limit_mb", "skip_merge", "progress_callback")


def normalize_params(given: dict) -> dict:
    """pylance's parameters over its defaults (ngram: no stemming or stop words unless asked),
    validated; InvalidArgumentError names a bad one."""
    params = dict(DEFAULTS)
    unknown = set(given) - set(DEFAULTS) - set(BUILD_ONLY)
    if unknown:
        raise InvalidArgumentError(f"unknown INVERTED index parameters: {sorted(unknown)}")
    if given.get("base_tokenizer") == "ngram":
        params["stem"] = False
        params["remove_stop_words"] = False
    params.update({k: v for k, v in given.items() if k in DEFAULTS})
    if params["lance_tokenizer"] not in ("text", "json"):
        raise InvalidArgumentError(f"unknown lance tokenizer {params['lance_tokenizer']}")
    lang = params["language"]
    if isinstance(lang, str) and lang.lower() in {k.lower() for k in LANGUAGES}:
        params["language"] = next(k for k in LANGUAGES if k.lower() == lang.lower())
    else:
        raise InvalidArgumentError(f"unknown language {lang!r}")
    base = str(params["base_tokenizer"])
    if base not in BASE_TOKENIZERS and not is_jieba(base) and not is_lindera(base):
        raise InvalidArgumentError(f"unknown base tokenizer {params['base_tokenizer']}")
    if int(params["block_size"]) != 128:
        raise InvalidArgumentError("lancefmt writes FTS indices with block_size 128")
    if params["max_token_length"] is not None:
        params["max_token_length"] = int(params["max_token_length"])
    if params["base_tokenizer"] == "ngram" and not (
            0 < int(params["min_ngram_length"]) <= int(params["max_ngram_length"])):
        raise InvalidArgumentError("ngram lengths must satisfy 0 < min <= max")
    for k in ("with_position", "lower_case", "stem", "remove_stop_words", "ascii_folding",
              "prefix_only"):
        params[k] = bool(params[k])
    if params["custom_stop_words"] is not None:
        params["custom_stop_words"] = [str(w) for w in params["custom_stop_words"]]
    return params


def params_json(params: dict) -> str:
    """The ``params`` schema metadata value (pylance's key order, compact JSON)."""
    return json.dumps({k: params.get(k, v) for k, v in DEFAULTS.items()}, separators=(",", ":"))


@lru_cache(maxsize=1)
def alnum_bits() -> bytes:
    bits = np.zeros(0x110000, dtype=bool)
    for a, b in ALNUM_RANGES:
        bits[a:b + 1] = True
    return np.packbits(bits, bitorder="little").tobytes()


_LOWER_TABLE = LOWER
_FOLD_TABLE = FOLD


def lower(text: str) -> str:
    """Rust's ``char::to_lowercase`` of each character."""
    if text.isascii():
        return text.lower()
    return "".join(_LOWER_TABLE.get(ord(c), c) if ord(c) >= 0x80 else c.lower() for c in text)


def fold(text: str) -> str:
    """Lucene's ASCII folding of a token (tokens already ASCII are left alone)."""
    if text.isascii():
        return text
    return text.translate(_FOLD_TABLE)


class Tokenizer:
    """One index's tokenizer (see module docstring)."""

    def __init__(self, params: dict):
        self.params = params
        self.base = params["base_tokenizer"]
        self.max_len = params["max_token_length"]
        self.lower = params["lower_case"]
        self.stemmer = None
        if params["stem"]:
            import Stemmer

            self.stemmer = Stemmer.Stemmer(LANGUAGES[params["language"]])
        self.stop = None
        if params["remove_stop_words"]:
            custom = params.get("custom_stop_words")
            if custom is not None:
                self.stop = frozenset(custom)
            elif params["language"] == "English":
                self.stop = ENGLISH_STOP_WORDS
            else:
                raise InvalidArgumentError(
                    f"removing stop words for language {params['language']} is not supported by lancefmt")
        self.fold = params["ascii_folding"]
        self.json = params.get("lance_tokenizer") == "json"
        self._analyzer = Tokenizer({**params, "lance_tokenizer": "text"}) if self.json else None
        self._jieba = None
        if is_jieba(self.base):
            self.splitter()   # a missing model is an error at once, as in pylance
        if is_lindera(self.base):
            from .lindera_tokenizer import load

            load(self.base)   # refused (see lindera_tokenizer)

    def splitter(self):
        """The base tokenizer: a :class:`~._tokenize.Splitter` (or a jieba one)."""
        p = self.params
        if self.json:
            from .json_tokenizer import JsonSplitter

            return JsonSplitter(self._analyzer)
        if is_jieba(self.base):
            from .jieba_tokenizer import JiebaSplitter

            if self._jieba is None:
                self._jieba = JiebaSplitter(self.base).jieba
            sp = JiebaSplitter.__new__(JiebaSplitter)
            sp.jieba, sp._ids, sp._tokens = self._jieba, {}, []
            return sp
        return Splitter(self.base, alnum_bits(), int(p["min_ngram_length"]),
                        int(p["max_ngram_length"]), bool(p["prefix_only"]))

    def normalize(self, raw: bytes):
        """The token a raw token becomes, or None when a filter removes it."""
        if self.json:   # JSON triplets are made of tokens already normalised
            return raw.decode("utf-8")
        if self.max_len is not None and len(raw) >= self.max_len:
            return None
        text = raw.decode("utf-8", "replace")
        if self.lower:
            text = lower(text)
        if self.stemmer is not None:
            text = self.stemmer.stemWord(text)
        if self.stop is not None and text in self.stop:
            return None
        if self.fold:
            text = fold(text)
        return text

    def normalize_all(self, raws: list) -> list:
        """:meth:`normalize` of many raw tokens (the stemmer called once for all)."""
        if self.json or self.stemmer is None:
            return [self.normalize(r) for r in raws]
        texts = []
        keep = []
        for r in raws:
            if self.max_len is not None and len(r) >= self.max_len:
                keep.append(False)
                continue
            keep.append(True)
            t = r.decode("utf-8", "replace")
            texts.append(lower(t) if self.lower else t)
        stems = iter(self.stemmer.stemWords(texts))
        out = []
        for k in keep:
            if not k:
                out.append(None)
                continue
            t = next(stems)
            if self.stop is not None and t in self.stop:
                out.append(None)
            else:
                out.append(fold(t) if self.fold else t)
        return out

    def tokens(self, text: str) -> list:
        """``(token, position)`` of one text, in order (queries)."""
        if self.json:
            from .json_tokenizer import query_tokens

            return query_tokens(self._analyzer, text)
        sp = self.splitter()
        docs, ids, pos = sp.split(pa.array([text], pa.large_string()))
        raws = sp.raw_tokens()
        norm = [self.normalize(r) for r in raws]
        return [(norm[i], int(p)) for i, p in zip(ids.tolist(), pos.tolist()) if norm[i] is not None]
