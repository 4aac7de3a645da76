"""lancefmt.debug prints schemas, fragments, manifests and transactions in the shape pylance
prints them (Rust's pretty Debug text), with the same values."""
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.debug import format_fragment, format_manifest, format_schema, list_transactions

lance = pytest.importorskip("lance")
import lance.debug as pylance_debug  # noqa: E402


@pytest.fixture
def both(tmp_path):
    data = pa.table({"x": pa.array(range(10), pa.int64()), "s": [str(i) for i in range(10)]})
    out = []
    for lib in (lancefmt, lance):
        uri = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(data, uri)
        ds.add_columns({"y": "x + 1"})
        ds.delete("x = 5")
        out.append(lib.dataset(uri))
    return out


def test_schema_text_matches_pylance(both):
    ours, theirs = both
    assert format_schema(ours) == pylance_debug.format_schema(theirs)


def test_fragment_text_matches_pylance_but_for_paths_and_ids(both):
    ours, theirs = both
    a = format_fragment(ours.get_fragments()[0].metadata, ours).splitlines()
    b = pylance_debug.format_fragment(theirs.get_fragments()[0].metadata, theirs).splitlines()
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if "path:" in x or x.strip().startswith("id:") and "DeletionFile" not in x:
            continue
        assert x == y or x.strip().startswith("id:")


def test_manifest_and_transactions(both):
    ours, _ = both
    text = format_manifest(ours)
    assert text.startswith("Manifest {") and "fragments: [\n        Fragment {" in text
    txns = list_transactions(ours)
    assert [t.split("operation: ")[1].split(" ")[0] for t in txns] == \
        ["Delete", "Merge", "Overwrite"]
    assert list_transactions(ours, 2) == txns[:2]
