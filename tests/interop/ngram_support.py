"""NGRAM test support: strings that exercise the tokeniser."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

#: ASCII, case, accents, ligatures, compatibility forms, scripts without folding, digits,
#: punctuation, whitespace, short and empty values
SAMPLES = [
    "Hello World", "hello world", "HELLO", "café naïve", "Ünïcödé ÆØÅ", "Straße", "ﬁle ﬂow",
    "ＡＢＣ fullwidth", "ℌello", "𝐀𝐁𝐂def", "™x", "İstanbul", "ΣΊΣΥΦΟΣ", "日本語テキスト",
    "ABC-def_ghi", "x1y2z3", "a b c", "xyz a b", "é a", "ab", "", "aaaa",
    "tab\tsep\nline", "rad/s ㎯", "⑽ (10)", "mixed Ψ greek abc", "zzz", "quick brown fox",
    "the lazy dog",
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
