"""The ``jieba`` base tokenizer (Chinese word segmentation), as pylance 14 runs it.

Lance loads a *language model* directory ``$LANCE_LANGUAGE_MODEL_HOME/jieba/<name>``
(``jieba`` alone means ``jieba/default``; without the variable the home is
``~/.local/share/lance/language_models``): an optional ``config.json`` naming the main
dictionary (``main``, default ``dict.txt``) and user dictionaries (``users``), paths relative
to the directory. It segments each value in jieba's *search* mode with the HMM for unknown
words, every piece a token (spaces included) positioned at its first character. The
``jieba`` package implements the same dictionaries, algorithm and model as Lance's
``jieba-rs``.

:class:`JiebaSplitter` has the interface of the Cython splitter (raw tokens numbered by first
appearance), so the rest of the pipeline (filters, postings) is shared.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError, LanceError

HOME_ENV = "LANCE_LANGUAGE_MODEL_HOME"
CONFIG_FILE = "config.json"


class LanguageModelError(LanceError, OSError):
    """pylance raises an OSError for a missing or unreadable language model."""


def model_home() -> Path:
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "lance" / "language_models"


def model_dir(name: str) -> Path:
    """The language model directory ``name`` (``jieba/default``...); pylance 14 refuses a
    missing one as invalid input (a ValueError), before reading anything."""
    root = model_home() / name
    if not root.is_dir():
        raise InvalidArgumentError(f"Invalid user input: Invalid directory path: {root}")
    return root


def is_jieba(base_tokenizer: str) -> bool:
    return base_tokenizer == "jieba" or base_tokenizer.startswith("jieba/")


def load(base_tokenizer: str):
    """A ``jieba.Tokenizer`` for the model ``base_tokenizer`` names (LanguageModelError when
    its directory or a dictionary cannot be read)."""
    name = "jieba/default" if base_tokenizer == "jieba" else base_tokenizer
    root = model_dir(name)
    config = {}
    if (root / CONFIG_FILE).exists():
        try:
            config = json.loads((root / CONFIG_FILE).read_text())
        except (OSError, ValueError) as e:
            raise LanguageModelError(f"bad jieba config {root / CONFIG_FILE}: {e}") from None
    main = root / (config.get("main") or "dict.txt")
    users = [root / u for u in (config.get("users") or [])]
    for path in [main, *users]:
        if not path.is_file():
            raise LanguageModelError(f"load jieba tokenizer dictionary {path}: file not found")
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tok = jieba.Tokenizer(dictionary=str(main))
    tok.initialize()
    for path in users:
        tok.load_userdict(str(path))
    return tok


class JiebaSplitter:
    """Jieba's segmentation of string arrays, raw tokens numbered by first appearance."""

    def __init__(self, base_tokenizer: str):
        self.jieba = load(base_tokenizer)
        self._ids: dict = {}
        self._tokens: list = []

    @property
    def num_raw_tokens(self) -> int:
        return len(self._tokens)

    def raw_tokens(self, start: int = 0) -> list:
        return [t.encode("utf-8") for t in self._tokens[start:]]

    def split(self, values, first_doc: int = 0):
        """``(doc, raw_id, position)`` uint32 arrays, one entry per token (see module
        docstring)."""
        docs, ids, pos = [], [], []
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        for i, text in enumerate(values.to_pylist()):
            if text is None:
                continue
            for word, start, _end in self.jieba.tokenize(text, mode="search", HMM=True):
                tid = self._ids.get(word)
                if tid is None:
                    tid = self._ids[word] = len(self._tokens)
                    self._tokens.append(word)
                docs.append(first_doc + i)
                ids.append(tid)
                pos.append(start)
        return (np.asarray(docs, dtype=np.uint32), np.asarray(ids, dtype=np.uint32),
                np.asarray(pos, dtype=np.uint32))
