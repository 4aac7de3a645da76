"""Helpers of the FTS interop tests: a generated corpus both libraries index, and the index
files of a segment read back with pylance's file reader."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
from lance.file import LanceFileReader

from lancefmt.index.core.metadata import uuid_text
from lancefmt.table.versions import load_manifest

WORDS = ("the quick brown fox jumps over lazy dog running runs ran runner Café naïve résumé "
         "straße ΣΑΣ İstanbul hello world Hello WORLD dogs cats were was is not no data lance "
         "search index vector café ﬁle Ｆｕｌｌ x9 42 2024 e-mail can't it's").split()
FILES = ("metadata.lance", "part_0_docs.lance", "part_0_invert.lance", "part_0_tokens.lance")


def corpus(n: int, seed: int = 7, words=WORDS) -> list:
    """``n`` documents of 0..40 words (some null, some empty, a few long tokens)."""
    rng = np.random.default_rng(seed)
    # a skewed vocabulary, so some tokens fill several 128-document blocks
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    out = []
    for i in range(n):
        if i % 37 == 5:
            out.append(None)
        elif i % 53 == 7:
            out.append("")
        else:
            k = int(rng.integers(1, 41))
            text = " ".join(rng.choice(words, k, p=weights))
            if i % 97 == 11:
                text += " " + "z" * 45
            out.append(text)
    return out


def table(n: int, seed: int = 7) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    texts = corpus(n, seed)
    tags = [None if i % 31 == 3 else [t for t in (texts[i] or "").split()[:3]] + ([None] if i % 7 == 1 else [])
            for i in range(n)]
    return pa.table({"id": ids, "text": pa.array(texts, pa.string()),
                     "tags": pa.array(tags, pa.list_(pa.string()))})


def write(uri: str, t: pa.Table, version: str = "2.2", stable: bool = False) -> None:
    """Three fragments and a delete, so row ids and addresses have gaps."""
    lance.write_dataset(t, uri, data_storage_version=version, max_rows_per_file=max(1, t.num_rows // 3),
                        enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 13 = 4")


def segment_dir(uri: str, name: str) -> str:
    entries = [e for e in load_manifest(uri, None).indices if e.name == name]
    assert len(entries) == 1, [e.name for e in load_manifest(uri, None).indices]
    return f"{uri}/_indices/{uuid_text(entries[0])}"


def index_files(uri: str, name: str) -> dict:
    """Each file of the segment as pylance's reader sees it (table, schema metadata)."""
    d = segment_dir(uri, name)
    out = {}
    for f in FILES:
        t = LanceFileReader(f"{d}/{f}").read_all().to_table()
        out[f] = t
    return out


def assert_same_files(uri: str, a: str, b: str) -> None:
    """The segments ``a`` and ``b`` hold the same columns, schemas, metadata and values."""
    fa, fb = index_files(uri, a), index_files(uri, b)
    for f in FILES:
        ta, tb = fa[f], fb[f]
        assert ta.schema.equals(tb.schema), (f, ta.schema, tb.schema)
        assert dict(ta.schema.metadata or {}) == dict(tb.schema.metadata or {}), f
        for c in ta.column_names:
            assert ta.column(c).equals(tb.column(c)), (f, c)
