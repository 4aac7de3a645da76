"""Sessions (pylance's ``Session``): the caches a dataset's views share, their size in bytes,
sharing one between datasets, and a metadata budget that bounds what is kept; pylance
answers alongside."""
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.dataset.core import reader_cache

lance = pytest.importorskip("lance")


@pytest.fixture
def uri(tmp_path):
    uri = str(tmp_path / "ds")
    lancefmt.write_dataset(pa.table({"a": range(1000)}), uri, max_rows_per_file=250)
    return uri


@pytest.mark.parametrize("lib", [lance, lancefmt])
def test_a_scan_fills_the_session_and_sessions_are_shared(uri, lib):
    ds = lib.dataset(uri)
    before = ds.session().size_bytes()
    ds.to_table()
    assert ds.session().size_bytes() > before
    other = lib.dataset(uri, session=ds.session())
    assert other.session().is_same_as(ds.session())
    assert not lib.dataset(uri).session().is_same_as(ds.session())
    assert other.to_table() == ds.to_table()
    zero = lib.dataset(uri, metadata_cache_size_bytes=0)
    zero.to_table()
    assert zero.session().size_bytes() < ds.session().size_bytes()
    assert zero.to_table() == ds.to_table()


def test_the_session_holds_every_view_and_its_budget(uri, monkeypatch):
    opened = []
    real = reader_cache.LanceFileReader
    monkeypatch.setattr(reader_cache, "LanceFileReader",
                        lambda *a, **k: opened.append(a[0]) or real(*a, **k))
    ds = lancefmt.dataset(uri)
    ds.to_table()
    ds.to_table()
    assert len(opened) == 4            # each data file opened once per view
    size = ds.session().size_bytes()
    assert size == ds.session().metadata_cache_size_bytes() > 0
    session = ds.session()
    ds.delete("a < 10")                # the new version's view joins the same session
    ds.to_table()
    assert ds.session() is session and session.size_bytes() >= size
    budget = lancefmt.Session(metadata_cache_size_bytes=size // 2)
    small = lancefmt.dataset(uri, session=budget)
    opened.clear()
    small.to_table()
    small.to_table()
    assert 0 < budget.size_bytes() <= size // 2 and len(opened) > 4   # some evicted, reopened
    with pytest.raises(lancefmt.InvalidArgumentError):
        lancefmt.Session(metadata_cache_size_bytes=-1)
    with pytest.raises(lancefmt.InvalidArgumentError):
        lancefmt.dataset(uri, session="not a session")
