"""JSON documents in the FTS index (``lance_tokenizer`` "json"), as pylance 14 tokenises them.

A JSON value becomes triplet tokens ``path,type,value``: objects are walked key by key (in
the stored, sorted order) with dotted paths, arrays element by element under their own path;
a string is cut and normalised by the index's analyzer, one ``path,str,<token>`` per token;
numbers, booleans and nulls are one token each (``b,number,1``, ``c,bool,true``,
``c,null,null``; numbers printed as Lance prints them). Positions count the tokens produced, so
a removed stop word leaves no gap. A query is triplets separated by ``;`` (``a.b,str,San
Francisco;n,number,3``), each string value analysed the same way.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from ...errors import InvalidArgumentError
from ...jsonb.codec import format_float, loads

JSON_EXTENSION = "lance.json"


def is_json_field(field: pa.Field) -> bool:
    meta = field.metadata or {}
    return pa.types.is_large_binary(field.type) and \
        meta.get(b"ARROW:extension:name") == JSON_EXTENSION.encode()


def _scalar_text(value) -> tuple:
    if value is None:
        return "null", "null"
    if value is True:
        return "bool", "true"
    if value is False:
        return "bool", "false"
    if isinstance(value, int):
        return "number", str(value)
    return "number", format_float(float(value))


def flatten(value, prefix: str, out: list) -> None:
    """``(path, kind, text)`` of every leaf: kind "str" texts are still to be analysed."""
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list):
        for v in value:
            flatten(v, prefix, out)
    elif isinstance(value, str):
        out.append((prefix, "str", value))
    else:
        kind, text = _scalar_text(value)
        out.append((prefix, kind, text))


class JsonSplitter:
    """JSON documents (JSONB bytes or JSON text) to final triplet tokens, numbered by first
    appearance (the interface of the Cython splitter; the tokens need no more filtering)."""

    def __init__(self, analyzer):
        self.analyzer = analyzer            # a text Tokenizer: its words of a string
        self._ids: dict = {}
        self._tokens: list = []

    def raw_tokens(self, start: int = 0) -> list:
        return [t.encode("utf-8") for t in self._tokens[start:]]

    def _id(self, token: str) -> int:
        tid = self._ids.get(token)
        if tid is None:
            tid = self._ids[token] = len(self._tokens)
            self._tokens.append(token)
        return tid

    def document_tokens(self, value) -> list:
        leaves: list = []
        flatten(value, "", leaves)
        out = []
        for path, kind, text in leaves:
            if kind == "str":
                out.extend(f"{path},str,{w}" for w, _ in self.analyzer.tokens(text))
            else:
                out.append(f"{path},{kind},{text}")
        return out

    def split(self, values, first_doc: int = 0):
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        docs, ids, pos = [], [], []
        binary = pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)
        for i, raw in enumerate(values.to_pylist()):
            if raw is None:
                continue
            value = loads(raw) if binary else json.loads(raw)
            for p, token in enumerate(self.document_tokens(value)):
                docs.append(first_doc + i)
                ids.append(self._id(token))
                pos.append(p)
        return (np.asarray(docs, dtype=np.uint32), np.asarray(ids, dtype=np.uint32),
                np.asarray(pos, dtype=np.uint32))


def query_tokens(analyzer, text: str) -> list:
    """``(token, position)`` of a triplet query (see module docstring)."""
    out = []
    for triple in text.split(";"):
        parts = triple.split(",", 2)
        if len(parts) != 3:
            raise InvalidArgumentError(f"Invalid triple format: {triple}")
        field, kind, value = parts
        if kind in ("number", "bool", "null"):
            out.append(f"{field},{kind},{value}")
        elif kind == "str":
            out.extend(f"{field},str,{w}" for w, _ in analyzer.tokens(value))
        else:
            raise InvalidArgumentError(f"Invalid triple type: {kind}")
    return [(t, i) for i, t in enumerate(out)]
