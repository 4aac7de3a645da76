"""The same pylance-style calls on pylance (``lance``) and on lancefmt, compared answer by answer:
filters, scanners, projections, fragments, the file reader, stats, errors, DuckDB and Polars."""
import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancefmt

lance = pytest.importorskip("lance")

N = 40


def _table():
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        "i32": pa.array([i if i % 5 else None for i in range(N)], pa.int32()),
        "f": pa.array([i * 0.5 for i in range(N)]),
        "s": pa.array([f"row-{i}" if i % 7 else None for i in range(N)]),
        "b": pa.array([bytes([i, i + 1]) for i in range(N)]),
        "flag": pa.array([i % 2 == 0 for i in range(N)]),
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(N)]),
        "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(hours=i) for i in range(N)], pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal(i) / 4 for i in range(N)], pa.decimal128(10, 2)),
        "tags": pa.array([[f"t{i % 3}", f"t{i % 4}"] for i in range(N)]),
        "st": pa.array([{"small": i % 3, "name": f"n{i}"} for i in range(N)]),
        "Mixed Case": pa.array(range(N)),
    })


@pytest.fixture(scope="module", params=["pylance", "lancefmt"])
def pair(request, tmp_path_factory):
    """(pylance dataset, lancefmt dataset) over the same files, written by either library."""
    uri = str(tmp_path_factory.mktemp(request.param) / "ds")
    if request.param == "pylance":
        lance.write_dataset(_table(), uri, data_storage_version="2.0", max_rows_per_file=15)
    else:
        lancefmt.write_dataset(_table(), uri, max_rows_per_file=15)
    theirs = lance.dataset(uri)
    theirs.delete("id = 3")
    return lance.dataset(uri), lancefmt.dataset(uri)


FILTERS = [
    "id > 1", "i32 IS NULL", "s IS NOT NULL", "id IN (1, 2, 3)", "id NOT IN (1, 2)",
    "id BETWEEN 3 AND 5", "id NOT BETWEEN 3 AND 30", "s LIKE 'row-1%'", "s ILIKE 'ROW-1%'",
    "s NOT LIKE 'row-1%'", "id * 2 > 10", "id % 3 = 0", "CAST(id AS STRING) = '5'",
    "CAST(st.small AS BIGINT) = 1", "st.small = 1", "st.name = 'n3'",
    "ts > TIMESTAMP '2024-01-01 05:00:00'", "d > DATE '2024-01-10'", "b = X'0102'",
    "regexp_like(s, 'row-1[0-9]')", "array_has_any(tags, ['t1'])",
    "array_has_all(tags, ['t1', 't2'])", "array_contains(tags, 't0')", "array_has(tags, 't2')",
    "_rowid < 3", "_rowaddr > 4294967296", "`Mixed Case` > 15", "flag", "NOT flag", "flag = true",
    "flag IS FALSE", "id = 3 OR id = 5", "NOT (id > 3)", "f > 2", "-id < -17", "id + 1 = 5",
    "id / 2 = 3", "lower(s) = 'row-1'", "s = \"row-1\"", "1 = 1", "s IN ('row-1', 'row-2')",
    "starts_with(s, 'row-1')", "id <> 3 AND id != 4 AND id < 6", "(id < 3 OR id > 37) AND NOT flag",
    "i32 > 3 AND i32 < 9", "dec > CAST(2.5 AS DECIMAL(10,2))",
    # NULL semantics (three-valued logic)
    "i32 NOT IN (1, 2)", "i32 IN (1, 6)", "NOT (i32 > 3)", "i32 IS NOT NULL AND NOT (i32 = 6)",
    "i32 + 1 > 5", "NOT (s LIKE 'row-1%')", "i32 > 30 OR s IS NULL", "i32 BETWEEN 2 AND 12",
    "st.name LIKE 'n1%' AND flag", "ts BETWEEN TIMESTAMP '2024-01-01 03:00:00' AND TIMESTAMP '2024-01-01 09:00:00'",
]


@pytest.mark.parametrize("sql", FILTERS)
def test_filters(pair, sql):
    theirs, ours = pair
    want = theirs.to_table(columns=["id"], filter=sql)
    got = ours.to_table(columns=["id"], filter=sql)
    assert got["id"].to_pylist() == want["id"].to_pylist(), sql
    assert ours.count_rows(sql) == theirs.count_rows(sql)


@pytest.mark.parametrize("sql", ["s > 1", "id = 'x'", "nonexistent = 1", "id >", "id IS TRUE"])
def test_refused_filters(pair, sql):
    theirs, ours = pair
    with pytest.raises(ValueError):
        theirs.to_table(filter=sql)
    with pytest.raises(ValueError) as e:  # lancefmt.InvalidArgumentError is a ValueError
        ours.to_table(filter=sql)
    assert isinstance(e.value, lancefmt.LanceError)


def test_type_mismatch_names_the_column(pair):
    _, ours = pair
    with pytest.raises(lancefmt.InvalidArgumentError, match="'s'"):
        ours.to_table(filter="s > 1")


@pytest.mark.parametrize("kwargs", [
    dict(columns=["st.small", "id"], limit=5),
    dict(columns=["s", "id"], offset=4, limit=6),
    dict(columns={"twice": "id * 2", "small": "st.small", "s": "s"}),
    dict(columns={"c": "CAST(id AS STRING)", "u": "upper(s)"}, filter="id > 30"),
    dict(columns=["id", "_rowid"], limit=5),
    dict(columns=["id"], with_row_id=True, with_row_address=True),
    dict(columns=["id"], filter="id % 2 = 0", offset=2, limit=3),
    dict(columns=[], limit=3),
    dict(columns=["id", "f"], filter=pc.field("id") > 30),
])
def test_projections_and_scanner(pair, kwargs):
    theirs, ours = pair
    want = theirs.to_table(**kwargs)
    got = ours.to_table(**kwargs)
    assert got.schema.names == want.schema.names
    assert got.to_pylist() == want.to_pylist()
    sc_t, sc_o = theirs.scanner(**kwargs), ours.scanner(**kwargs)
    assert sc_o.projected_schema.names == sc_t.projected_schema.names
    assert isinstance(sc_o, pa.dataset.Scanner)
    assert sc_o.to_reader().read_all().to_pylist() == want.to_pylist()
    assert pa.table(sc_o).to_pylist() == want.to_pylist()  # PyCapsule stream
    assert "LanceRead" in sc_o.explain_plan()
    if "limit" not in kwargs and "offset" not in kwargs:
        assert sc_o.count_rows() == sc_t.count_rows()


def test_head_take_sample(pair):
    theirs, ours = pair
    assert ours.head(4).equals(theirs.head(4))
    assert ours.take([0, 5, 2], columns=["id", "s"]).equals(theirs.take([0, 5, 2], columns=["id", "s"]))
    proj = {"twice": "id * 2", "name": "st.name"}
    assert ours.take([4, 1], columns=proj).to_pylist() == theirs.take([4, 1], columns=proj).to_pylist()
    got = ours.sample(5, columns=["id"])
    assert got.num_rows == 5 and len(set(got["id"].to_pylist())) == 5
    assert len(ours) == len(theirs) == N - 1


def test_fragments(pair):
    theirs, ours = pair
    assert [f.fragment_id for f in ours.get_fragments()] == [f.fragment_id for f in theirs.get_fragments()]
    for ft, fo in zip(theirs.get_fragments(), ours.get_fragments()):
        assert fo.count_rows() == ft.count_rows()
        assert fo.count_rows("id > 20") == ft.count_rows("id > 20")
        assert fo.to_table(columns=["id"], filter="id > 2", offset=1, limit=4).equals(
            ft.to_table(columns=["id"], filter="id > 2", offset=1, limit=4))
        assert fo.take([0, 2], columns=["id"]).equals(ft.take([0, 2], columns=["id"]))
        plain = ft.take([0, 1], columns=["id", "st"]).to_pylist()  # pylance's fragment take: names only
        assert fo.take([0, 1], columns={"twice": "id * 2", "name": "st.name"}).to_pylist() == \
            [{"twice": r["id"] * 2, "name": r["st"]["name"]} for r in plain]
        assert fo.scanner(columns=["id", "s"]).to_table().equals(ft.scanner(columns=["id", "s"]).to_table())
        assert [d.path for d in fo.data_files()] == [d.path for d in ft.data_files()]
        assert (fo.deletion_file() is None) == (ft.deletion_file() is None)
        assert fo.metadata.physical_rows == ft.metadata.physical_rows
    assert ours.get_fragment(1).to_table().equals(theirs.get_fragment(1).to_table())
    assert lancefmt.LanceFragment is lancefmt.Fragment


def test_stats_and_introspection(pair):
    theirs, ours = pair
    assert ours.stats.dataset_stats() == theirs.stats.dataset_stats()
    assert ours.stats.dataset_stats(10) == theirs.stats.dataset_stats(10)
    assert [(f.id, f.bytes_on_disk) for f in ours.stats.data_stats().fields] == \
        [(f.id, f.bytes_on_disk) for f in theirs.stats.data_stats().fields]
    assert ours.max_field_id == theirs.max_field_id
    assert ours.data_storage_version == theirs.data_storage_version
    assert ours.latest_version == theirs.latest_version
    assert ours.config() == theirs.config()
    assert ours.lance_schema.to_pyarrow() == theirs.lance_schema.to_pyarrow()
    assert ours.read_transaction(2).operation.name == "delete"
    assert type(theirs.read_transaction(2).operation).__name__ == "Delete"
    assert len(ours.get_transactions()) == len(theirs.get_transactions())


def test_errors_are_pylance_builtins(tmp_path):
    for lib in (lance, lancefmt):
        with pytest.raises(ValueError):
            lib.dataset(str(tmp_path / "missing"))
    with pytest.raises(lancefmt.LanceError):
        lancefmt.dataset(str(tmp_path / "missing"))


def _corrupt_first(pattern):
    import glob

    path = sorted(glob.glob(pattern))[0]
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])


@pytest.mark.parametrize("case,builtin", [
    ("exists", OSError), ("bad_mode", ValueError), ("bad_version", OSError), ("bad_tag", OSError),
    ("bad_column", ValueError), ("truncated_data", ValueError), ("corrupt_manifest", ValueError),
    ("take_out_of_range", OSError), ("delete_bad_predicate", OSError),
    ("delete_unknown_column", OSError), ("append_other_schema", OSError),
    ("scan_bad_filter", ValueError), ("missing_dataset", ValueError),
])
def test_error_builtins_match_pylance(tmp_path, case, builtin):
    """Where pylance 14 raises a builtin, lancefmt's LanceError subclass derives from it too."""
    for lib in (lance, lancefmt):
        uri = str(tmp_path / lib.__name__)
        t = pa.table({"a": [1, 2, 3]})
        kw = {"data_storage_version": "2.0"} if lib is lance else {}
        ds = lib.write_dataset(t, uri, **kw)
        action = {
            "exists": lambda: lib.write_dataset(t, uri, **kw),
            "bad_mode": lambda: lib.write_dataset(t, uri, mode="bogus"),
            "bad_version": lambda: ds.checkout_version(99),
            "bad_tag": lambda: ds.checkout_version("nope"),
            "bad_column": lambda: ds.to_table(columns=["zz"]),
            "take_out_of_range": lambda: ds.take([100]),
            "delete_bad_predicate": lambda: ds.delete("a > "),
            "delete_unknown_column": lambda: ds.delete("zz > 1"),
            "append_other_schema": lambda: lib.write_dataset(pa.table({"b": ["x"]}), uri, mode="append"),
            "scan_bad_filter": lambda: ds.to_table(filter="a >"),
            "missing_dataset": lambda: lib.dataset(uri + "/nope"),
            "truncated_data": lambda: (_corrupt_first(uri + "/data/*.lance"), lib.dataset(uri).to_table()),
            "corrupt_manifest": lambda: (_corrupt_first(uri + "/_versions/*.manifest"), lib.dataset(uri)),
        }[case]
        with pytest.raises(builtin) as e:
            action()
        if lib is lancefmt:
            assert isinstance(e.value, lancefmt.LanceError)


def test_fragment_create_and_commit(tmp_path):
    for lib in (lance, lancefmt):
        uri = str(tmp_path / lib.__name__)
        frag = lib.LanceFragment.create(uri, pa.table({"a": [1, 2, 3]}), data_storage_version="2.0")
        op = lib.LanceOperation.Overwrite(pa.schema([("a", pa.int64())]), [frag])
        ds = lib.LanceDataset.commit(uri, op)
        frag2 = lib.LanceFragment.create(uri, pa.table({"a": [4]}), data_storage_version="2.0")
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Append([frag2]), read_version=ds.version)
        assert lib.dataset(uri).to_table()["a"].to_pylist() == [1, 2, 3, 4]
        # the other library reads it
        other = lancefmt if lib is lance else lance
        assert other.dataset(uri).to_table()["a"].to_pylist() == [1, 2, 3, 4]


def test_file_reader_and_writer(tmp_path):
    import lance.file as theirs_file

    import lancefmt.file as ours_file

    path = str(tmp_path / "f.lance")
    with ours_file.LanceFileWriter(path) as w:
        w.write_batch(pa.table({"a": list(range(10)), "b": [str(i) for i in range(10)]}))
        w.add_schema_metadata("k", "v")
    for cols in (None, ["a"]):
        o, t = ours_file.LanceFileReader(path, columns=cols), theirs_file.LanceFileReader(path, columns=cols)
        assert o.read_all().to_table().equals(t.read_all().to_table())
        assert o.read_range(2, 5).to_table().equals(t.read_range(2, 5).to_table())
        assert o.take_rows([1, 4, 9]).to_table().equals(t.take_rows([1, 4, 9]).to_table())
        assert isinstance(o.read_all().to_batches(), pa.RecordBatchReader)
        assert o.num_rows() == t.num_rows()
        mo, mt = o.metadata(), t.metadata()
        assert (mo.num_rows, mo.major_version, mo.minor_version) == (mt.num_rows, mt.major_version, mt.minor_version)
        assert mo.schema == mt.schema and mo.schema.metadata == {b"k": b"v"}
        assert [(c.num_pages, c.size_bytes) for c in o.file_statistics().columns] == \
            [(c.num_pages, c.size_bytes) for c in t.file_statistics().columns]


DUCK_QUERIES = [
    "SELECT id, s FROM ds WHERE id > 15 AND s LIKE 'row-1%' ORDER BY id",
    "SELECT count(*), sum(id) FROM ds WHERE i32 > 5",
    "SELECT flag, count(*) AS n FROM ds GROUP BY flag ORDER BY flag",
    "SELECT max(f) FROM ds WHERE i32 IS NOT NULL AND d >= DATE '2024-01-05'",
]


@pytest.mark.parametrize("query", DUCK_QUERIES)
def test_duckdb_pushdown(pair, query, monkeypatch):
    duckdb = pytest.importorskip("duckdb")
    theirs, ours = pair
    want = duckdb.connect().execute(query.replace("FROM ds", "FROM theirs")).fetchall()
    calls = []
    real = type(ours).scanner

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(ours), "scanner", spy)
    got = duckdb.connect().execute(query.replace("FROM ds", "FROM ours")).fetchall()
    assert got == want
    assert calls, "DuckDB did not scan through lancefmt's scanner"
    assert calls[0].get("columns") is not None  # projection pushed into our scan
    if "WHERE" in query:
        assert calls[0].get("filter") is not None  # filter pushed into our scan


def test_duckdb_nested_filter_pushdown(pair):
    """pylance refuses nested references in pushed filters; lancefmt runs them."""
    duckdb = pytest.importorskip("duckdb")
    _, ours = pair
    arrow = ours.to_table()  # noqa: F841 (queried by name)
    q = "SELECT count(*), sum(id) FROM {} WHERE st.small = 1"
    assert duckdb.connect().execute(q.format("ours")).fetchall() == \
        duckdb.connect().execute(q.format("arrow")).fetchall()


def test_polars(pair):
    pl = pytest.importorskip("polars")
    theirs, ours = pair
    want = pl.scan_pyarrow_dataset(theirs).filter(pl.col("id") > 15).select("id", "s").collect()
    calls = []
    real = type(ours).scanner

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        return real(self, *args, **kwargs)

    type(ours).scanner = spy
    try:
        got = pl.scan_pyarrow_dataset(ours).filter(pl.col("id") > 15).select("id", "s").collect()
    finally:
        type(ours).scanner = real
    assert got.equals(want)
    assert calls and calls[0].get("filter") is not None  # Polars pushed its filter into our scan
    assert calls[0].get("columns") == ["id", "s"]         # and its projection
    df = pl.DataFrame(ours.scanner(columns=["id", "s"], filter="id < 10"))  # PyCapsule stream
    assert df["id"].to_list() == [i for i in range(10) if i != 3]
    assert pl.DataFrame(ours).shape == (N - 1, len(_table().schema))


def test_memory_datasets_are_private_as_in_pylance():
    for lib in (lance, lancefmt):
        kw = {"data_storage_version": "2.0"} if lib is lance else {}
        a = lib.write_dataset(pa.table({"a": [1, 2]}), "memory://dual-private", **kw)
        b = lib.write_dataset(pa.table({"a": [5, 6, 7]}), "memory://dual-private", **kw)
        assert (a.count_rows(), b.count_rows(), a.version, b.version) == (2, 3, 1, 1)
        a2 = lib.write_dataset(pa.table({"a": [9]}), a, mode="append", **kw)
        assert a2.count_rows() == 3 and a.checkout_version(1).count_rows() == 2
        with pytest.raises(ValueError):
            lib.dataset("memory://dual-private")


def test_uris_as_pylance_takes_them(tmp_path, monkeypatch):
    import pathlib

    monkeypatch.setenv("HOME", str(tmp_path))
    for lib in (lance, lancefmt):
        kw = {"data_storage_version": "2.0"} if lib is lance else {}
        name = f"~/{lib.__name__}-ds"
        ds = lib.write_dataset(pa.table({"a": [1, 2]}), name, **kw)
        where = tmp_path / f"{lib.__name__}-ds"
        assert (where / "_versions").is_dir()
        assert lib.dataset(pathlib.Path(where)).count_rows() == 2
        frags = lib.fragment.write_fragments(pa.table({"a": [3]}), ds, **kw) if lib is lance else \
            lib.write_fragments(pa.table({"a": [3]}), ds)
        assert (where / "data" / frags[0].files[0].path).exists()  # not ./Dataset(...)/data
