"""NGRAM test support: strings that exercise the tokeniser, and an index built by lancefmt and
committed by hand (until the dataset API builds indices)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

import lancefmt
from lancefmt.index.core.metadata import new_metadata, new_uuid
from lancefmt.index.core.registry import TrainingData, by_name
from lancefmt.index.core.store import IndexStore
from lancefmt.table.transaction import CreateIndex
from lancefmt.table.versions import load_manifest

#: ASCII, case, accents, ligatures, compatibility forms, scripts without folding, digits,
#: punctuation, whitespace, short and empty values
SAMPLES = [
    "Hello World", "hello world", "HELLO", "café naïve", "Ünïcödé ÆØÅ", "Straße", "ﬁle ﬂow",
    "ＡＢＣ fullwidth", "ℌello", "𝐀𝐁𝐂def", "™x", "İstanbul", "ΣΊΣΥΦΟΣ", "日本語テキスト",
    "ABC-def_ghi", "x1y2z3", "a b c", "xyz a b", "é a", "ab", "", "aaaa", "tab\tsep\nline",
    "rad/s ㎯", "⑽ (10)", "mixed Ψ greek abc", "zzz", "quick brown fox", "the lazy dog",
]


def sample_table(n: int = 400, seed: int = 0) -> pa.Table:
    """``n`` rows of ``s`` (strings built from SAMPLES and random words, some null) and ``id``."""
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "Über", "naïve", "fox", "dog", "x9z", "Q"]
    out = []
    for i in range(n):
        if i % 37 == 5:
            out.append(None)
        elif i < len(SAMPLES):
            out.append(SAMPLES[i])
        else:
            k = int(rng.integers(0, 5))
            out.append(" ".join(rng.choice(words, k).tolist()) + f" {i}")
    return pa.table({"id": pa.array(np.arange(n), pa.int64()), "s": pa.array(out, pa.string())})


def build_index(uri: str, column: str, kind: str = "NGRAM", name: str | None = None,
                params: dict | None = None) -> str:
    """Train ``kind`` on ``column`` of every fragment with lancefmt and commit it; returns the
    index's directory."""
    ds = lancefmt.dataset(uri)
    itype = by_name(kind)
    fields = {f.name: f.id for f in load_manifest(uri, None).manifest.fields if f.parent_id == -1}
    field = ds.schema.field(column)
    itype.check_field(field)
    t = ds.to_table(columns=[column], with_row_id=True, with_row_address=True)
    t = pa.table({"value": t.column(column), "_rowid": t.column("_rowid"),
                  "_rowaddr": t.column("_rowaddr")})
    data = TrainingData.from_table(field, t)
    index_uuid = new_uuid()
    store = IndexStore(f"{uri}/_indices/{index_uuid}")
    details = itype.train(data, store, params or {})
    entry = new_metadata(index_uuid=index_uuid, name=name or f"{column}_idx",
                         field_ids=[fields[column]], dataset_version=ds.version,
                         fragments=[f.fragment_id for f in ds.get_fragments()],
                         details=itype.pack_details(details), index_version=itype.index_version,
                         files=store.written)
    lancefmt.commit(uri, CreateIndex([entry]), read_version=ds.version)
    return store.dir_uri
