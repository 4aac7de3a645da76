"""Helpers shared by the index interop tests: a dataset both libraries index, and the check
that every filter's indexed answer equals a full scan, in both libraries."""
import numpy as np
import pyarrow as pa

import lancefmt


def index_table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "v": pa.array([None if i % 53 == 0 else int(i % 97) for i in ids], pa.int64()),
        "s": pa.array([None if i % 41 == 0 else f"s{i % 13:02d}" for i in ids]),
        "x": (ids * 0.37) % 11.0,
        "tags": pa.array([[f"t{i % 3}", f"u{i % 5}"] if i % 29 else None for i in ids],
                         pa.list_(pa.string())),
    })


def full_scan(lance, uri, text):
    return lance.dataset(uri).to_table(filter=text, use_scalar_index=False)


def sort(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def assert_answers_equal_full_scan(lance, uri, filters, *, uses=None):
    """Both libraries answer every filter as a full scan does; ``uses``: index names that
    pylance's and lancefmt's plans must show for the first filter."""
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    for text in filters:
        want = sort(full_scan(lance, uri, text))
        assert sort(theirs.to_table(filter=text)).equals(want), ("pylance", text)
        assert sort(ours.to_table(filter=text)).equals(want), ("lancefmt", text)
        assert ours.count_rows(text) == want.num_rows, text
    if uses:
        for plan in (theirs.scanner(filter=filters[0]).explain_plan(),
                     ours.scanner(filter=filters[0]).explain_plan()):
            assert "ScalarIndexQuery" in plan and all(f"@{n}(" in plan for n in uses), plan
