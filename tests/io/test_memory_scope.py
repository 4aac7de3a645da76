"""memory:// datasets are private to the objects that made them (pylance's behaviour)."""
import pickle

import pyarrow as pa
import pytest

import lancefmt
from lancefmt.io import open_store
from lancefmt.io.memory_scope import NAMESPACE_KEY, private_memory_options


def test_options_get_a_namespace_only_for_memory_uris():
    assert private_memory_options("/tmp/x", None) is None
    assert private_memory_options("s3://b/k", {"a": 1}) == {"a": 1}
    a = private_memory_options("memory://x", None)
    b = private_memory_options("memory://x", {"k": "v"})
    assert a[NAMESPACE_KEY] != b[NAMESPACE_KEY] and b["k"] == "v"
    assert private_memory_options("memory://x", a) is a


def test_namespaced_stores_are_separate_and_pickle():
    a = private_memory_options("memory://x", None)
    s1, s2 = open_store("memory://x", a), open_store("memory://x", None)
    s1.put("memory://x/f", b"private")
    assert s1.read("memory://x/f") == b"private"
    assert not s2.exists("memory://x/f")
    assert [f.uri for f in s1.walk("memory://x")] == ["memory://x/f"]
    assert pickle.loads(pickle.dumps(s1)).read("memory://x/f") == b"private"


def test_datasets():
    a = lancefmt.write_dataset(pa.table({"a": [1]}), "memory://scoped")
    b = lancefmt.write_dataset(pa.table({"a": [1, 2]}), "memory://scoped")
    assert (a.count_rows(), b.count_rows(), a.uri) == (1, 2, "memory://scoped")
    with pytest.raises(lancefmt.DatasetNotFoundError):
        lancefmt.dataset("memory://scoped")
    assert lancefmt.dataset(a).count_rows() == 1
    assert pickle.loads(pickle.dumps(a)).count_rows() == 1
