"""Guards on what an indexed look-up costs, counted instead of timed (timings stay in asv:
``asv_bench/benchmarks/scalar_index.py``).

Issue 39: a look-up through a BTREE leaves little room for fixed costs (pylance answers one in
about a millisecond). Before these guards, ``to_table(filter="id = k")`` over a string column
read the matching row through the general take, column by column (1,300 Python calls a
look-up), and a set look-up read each BTREE page by its own take. These tests fail when such
a cost comes back: Python calls per warm look-up, the general file take not being used for
a look-up of numbers and dictionary strings, one read for all the pages a set look-up needs,
and no filter parse for a filter string already seen.
"""
import numpy as np
import pyarrow as pa
import pytest
from call_count import CallCounter

import lancefmt
from lancefmt.dataset.core.indices import index_catalog

lance = pytest.importorskip("lance")

ROWS = 60_000
PER_FILE = 15_000


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """pylance's files and indices (BTREE on ``id``, BITMAP on ``cat``), as in the benchmark:
    ``id`` a permutation, ``cat`` a 40-value string column (dictionary pages), ``x`` floats."""
    uri = str(tmp_path_factory.mktemp("lookup") / "ds")
    rng = np.random.default_rng(4)
    table = pa.table({"id": rng.permutation(ROWS).astype(np.int64),
                      "cat": pa.array([f"c{v}" for v in rng.integers(0, 40, ROWS)]),
                      "x": rng.random(ROWS)})
    lance.write_dataset(table, uri, max_rows_per_file=PER_FILE, data_storage_version="2.2")
    theirs = lance.dataset(uri)
    theirs.create_scalar_index("id", "BTREE")
    theirs.create_scalar_index("cat", "BITMAP")
    return lancefmt.dataset(uri), lance.dataset(uri)


def _warm_counted(fn):
    fn()
    with CallCounter() as calls:
        out = fn()
    return out, calls


def test_an_equality_look_up_is_a_few_hundred_python_calls(datasets):
    """Warm (index page cached, filter parsed, take planned): the index answer and one direct
    take of the three columns, strings included; the general take is not used."""
    ours, theirs = datasets
    for key in (5, 31_337, ROWS - 1):
        text = f"id = {key}"
        got, calls = _warm_counted(lambda: ours.to_table(filter=text))
        assert got.equals(theirs.to_table(filter=text))
        assert calls.total() <= 350, calls.counts.most_common(15)
        assert calls.matching("reader.py", "LanceFileReader.take") == 0
        assert calls.matching("random_access.py") == 0
        _, counted = _warm_counted(lambda: ours.count_rows(text))
        assert ours.count_rows(text) == 1
        assert counted.total() <= 250, counted.counts.most_common(15)


def test_a_filter_string_is_parsed_once(datasets):
    ours, _ = datasets
    text = "id BETWEEN 100 AND 180"
    ours.to_table(filter=text)
    with CallCounter() as calls:
        for _ in range(3):
            assert ours.to_table(filter=text).num_rows == 81
            assert ours.count_rows(text) == 81
    assert calls.matching("parser.py") == 0 and calls.matching("tokenizer_core.py") == 0


def test_a_set_look_up_reads_its_index_pages_in_one_take(datasets):
    """Cold pages: every BTREE page an IN list touches comes from one take of the page file."""
    ours, theirs = datasets
    for named in index_catalog(ours.snapshot).get("id", ()):
        for seg in named.segments:
            seg.load()._pages.clear()
    keys = list(range(0, ROWS, 997))  # a key in most of the index's pages
    text = f"id IN ({', '.join(map(str, keys))})"
    with CallCounter() as calls:
        got = ours.to_table(filter=text)
    assert got.sort_by("id").equals(theirs.to_table(filter=text).sort_by("id"))
    assert got.num_rows == len(keys)
    assert calls.matching("reader.py", "LanceFileReader.take") == 1
    assert calls.matching("pages.py", "SortedPage.__init__") >= 10


def test_a_bitmap_look_up_of_many_rows_is_one_direct_take(datasets):
    """An exact answer of a fortieth of the rows is gathered by the direct take, not scanned
    fragment by fragment."""
    ours, theirs = datasets
    got, calls = _warm_counted(lambda: ours.to_table(filter="cat = 'c7'"))
    assert got.equals(theirs.to_table(filter="cat = 'c7'"))
    assert got.num_rows > ROWS // 80
    assert calls.matching("reader.py", "LanceFileReader.take") == 0
    assert calls.matching("direct_take.py", "DirectTakePlan.take_physical") == 1
    assert calls.total() <= 350, calls.counts.most_common(15)


@pytest.mark.parametrize("kw", [{"limit": 1}, {"limit": 4, "offset": 7},
                                {"limit": 3, "offset": 2, "columns": ["cat"]}])
def test_a_small_limit_reads_its_rows_not_whole_pages(datasets, kw):
    """A limit's rows come from the first fragment's mini-block chunks holding them (pylance
    reads one batch): no page decoded whole (each is a file's 15,000 rows), no other fragment
    read. Before, ``limit=1`` decoded every column's page of every fragment read ahead."""
    ours, theirs = datasets
    with CallCounter() as calls:
        got = ours.to_table(**kw)
    assert got.equals(theirs.to_table(**kw))
    assert got.num_rows == kw["limit"]
    assert calls.matching("field_reader.py", "LeafReader.decode_page") == 0
    assert calls.matching("random_access.py", "take_rows") == len(got.columns)  # one file
    assert calls.matching("reader.py", "LanceFileReader.take") == 1


def test_a_limit_short_of_its_first_window_reads_on(datasets):
    """A filter leaving the first window's rows short of the limit: the scan goes on, through
    the other fragments too, and gives pylance's rows."""
    ours, theirs = datasets
    for kw in ({"limit": 2, "filter": "x < 0.01"}, {"limit": 5, "offset": PER_FILE - 2},
               {"limit": 40, "offset": 3, "filter": f"id >= {ROWS - 300}"}):
        assert ours.to_table(**kw).equals(theirs.to_table(**kw)), kw


@pytest.mark.parametrize("kw", [{"limit": 1}, {"limit": 2, "offset": 3995, "with_row_id": True},
                                {"limit": 5, "with_row_address": True},
                                {"limit": 3, "offset": 1, "columns": ["s"]}])
def test_a_small_limit_skips_deleted_rows(tmp_path, kw):
    """Deleted rows in the small first window (and at a fragment's start) are skipped, the
    window's shortfall read on: pylance's rows, ids and addresses."""
    uri = str(tmp_path / "ds")
    table = pa.table({"a": np.arange(10_000), "s": [f"v{i % 7}" for i in range(10_000)]})
    lance.write_dataset(table, uri, max_rows_per_file=4_000, data_storage_version="2.1")
    lance.dataset(uri).delete("a < 3 or (a >= 4000 and a < 4010)")
    got = lancefmt.dataset(uri).to_table(**kw)
    assert got.equals(lance.dataset(uri).to_table(**kw))
    assert got.num_rows == kw["limit"]


def test_a_new_key_of_a_known_filter_shape_is_neither_parsed_nor_translated(datasets):
    """Issue 39: a look-up with a new key pays no filter walk. The index terms are bound into
    its shape's terms, and the pyarrow filter is never built when the index answers every
    fragment exactly. A filter error of the same shape still raises when the scanner is made."""
    ours, theirs = datasets
    ours.to_table(filter="id = 11")
    ours.to_table(filter="id BETWEEN 11 AND 13")
    for text in ("id = 12345", "id BETWEEN 400 AND 470"):
        with CallCounter() as calls:
            got = ours.to_table(filter=text)
        assert got.equals(theirs.to_table(filter=text))
        translating = [k for k in calls.counts if k[0] == "translate.py" and
                       k[1] not in ("filter_is_parsed", "to_expression")]  # (of no filter)
        assert not translating, translating
        assert calls.matching("parser.py") == 0
        assert calls.matching("sargable.py", "sargable") == 0
    with CallCounter() as calls:  # rows to scan: the filter is translated then
        assert ours.to_table(filter=f"id = {ROWS + 5}").num_rows == 0
        assert ours.to_table(filter="id = 7", use_scalar_index=False).equals(
            theirs.to_table(filter="id = 7"))
        assert ours.count_rows("id = 29") == 1
    assert calls.matching("translate.py", "parse_filter") >= 1
    with pytest.raises(Exception) as e:
        ours.to_table(filter="idx = 12")
    assert "idx" in str(e.value)


def test_a_deferred_filter_is_translated_when_rows_must_be_scanned(tmp_path):
    """A new key of a known shape on a dataset whose newest fragment the index does not cover:
    that fragment is scanned with the filter (built then), and the plan, the count and the
    batches agree with pylance."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": np.arange(5_000), "v": np.arange(5_000) * 2.0}), uri)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    lance.write_dataset(pa.table({"id": np.arange(5_000, 6_000), "v": np.zeros(1_000)}), uri,
                        mode="append")
    ours, theirs = lancefmt.dataset(uri), lance.dataset(uri)
    ours.to_table(filter="id = 1 OR id = 5001")
    for text in ("id = 17 OR id = 5017", "id = 4999 OR id = 5999", "id = 6001 OR id = 3"):
        scan = ours.scanner(filter=text)
        assert scan.to_table().equals(theirs.to_table(filter=text)), text
        assert ours.count_rows(text) == theirs.count_rows(text)
        assert "ScalarIndexQuery" in ours.scanner(filter=text).explain_plan()
        assert pa.Table.from_batches(list(ours.scanner(filter=text, batch_size=1).to_batches())) \
            .equals(theirs.to_table(filter=text)), text
