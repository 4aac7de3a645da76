"""BITMAP against pylance 14: each library answers from the other's index, both equal to a full
scan (pyarrow compute over the table), and both write the same index file."""
import glob

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancefmt
from lancefmt.file.reader import LanceFileReader

ROWS = 3000
F = pc.field


def _table(start=0, rows=ROWS):
    i = np.arange(start, start + rows)
    cat = pa.array([None if k % 13 == 0 else f"c{k % 17}" for k in i.tolist()])
    num = pa.array(np.where(i % 11 == 0, 0, i % 9 - 4), pa.int32(), mask=(i % 10 == 0))
    return pa.table({"id": pa.array(i, pa.int64()), "cat": cat, "num": num})


FILTERS = [
    ("cat = 'c3'", F("cat") == "c3"),
    ("cat > 'c15'", F("cat") > "c15"),
    ("cat <= 'c10'", F("cat") <= "c10"),
    ("cat IN ('c1', 'c9', 'zz')", F("cat").isin(["c1", "c9", "zz"])),
    ("cat IS NULL", F("cat").is_null()),
    ("cat IS NOT NULL", F("cat").is_valid()),
    ("NOT (cat = 'c1')", ~(F("cat") == "c1")),
    ("num BETWEEN -1 AND 2", (F("num") >= -1) & (F("num") <= 2)),
    ("num = 0 OR cat = 'c4'", (F("num") == 0) | (F("cat") == "c4")),
    ("cat = 'c5' AND id > 1000", (F("cat") == "c5") & (F("id") > 1000)),
    ("num IS NULL AND cat IS NULL", F("num").is_null() & F("cat").is_null()),
]

PARAMS = [(v, s) for v in ("2.0", "2.1", "2.2") for s in (False, True)]


def _dataset(path, version, stable):
    uri = str(path)
    lance.write_dataset(_table(), uri, max_rows_per_file=1000, data_storage_version=version,
                        enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 7 = 3")
    return uri


def _ids(table):
    return sorted(table.column("id").to_pylist())


def _check_answers(uri, built_by):
    full = lance.dataset(uri).to_table()
    for reader in (lance.dataset(uri), lancefmt.dataset(uri)):
        for sql, expr in FILTERS:
            want = _ids(full.filter(expr))
            assert _ids(reader.to_table(filter=sql)) == want, (built_by, type(reader), sql)
            assert _ids(reader.to_table(filter=sql, columns=["id"])) == want, (built_by, type(reader), sql)
            assert reader.scanner(filter=sql).count_rows() == len(want)
            assert reader.count_rows(sql) == len(want)
    for sql in ("cat = 'c3'", "num BETWEEN -1 AND 2", "cat IS NULL"):
        for reader in (lance.dataset(uri), lancefmt.dataset(uri)):
            plan = reader.scanner(filter=sql).explain_plan(True)
            assert "ScalarIndexQuery" in plan and "(Bitmap)" in plan, plan


def _lookup(uri, name):
    ds = lance.dataset(uri)
    uuid = [i for i in ds.describe_indices() if i.name == name][0].segments[0].uuid
    (path,) = glob.glob(f"{uri}/_indices/{uuid}/bitmap_page_lookup.lance")
    r = LanceFileReader(path)
    return r.read_all(), {k: bytes(v) for k, v in r.schema_metadata.items()}


@pytest.mark.parametrize("version,stable", PARAMS)
def test_each_reads_the_others_index(tmp_path, version, stable):
    ours = _dataset(tmp_path / "ours", version, stable)
    peer = _dataset(tmp_path / "peer", version, stable)
    for col in ("cat", "num"):
        lancefmt.dataset(ours).create_scalar_index(col, "BITMAP")
        lance.dataset(peer).create_scalar_index(col, "BITMAP")
    _check_answers(ours, "lancefmt")
    _check_answers(peer, "pylance")
    for name in ("cat_idx", "num_idx"):
        assert _lookup(ours, name) == _lookup(peer, name)
        assert lancefmt.dataset(ours).stats.index_stats(name)["indices"] == \
            lance.dataset(peer).stats.index_stats(name)["indices"]
        assert lance.dataset(ours).stats.index_stats(name)["indices"] == \
            lance.dataset(peer).stats.index_stats(name)["indices"]
    desc = {d.name: d for d in lance.dataset(ours).describe_indices()}
    assert desc["cat_idx"].type_url == "/lance.table.BitmapIndexDetails"


@pytest.mark.parametrize("version,stable", [("2.1", False), ("2.2", True)])
def test_appends_deletes_and_optimize(tmp_path, version, stable):
    uri = _dataset(tmp_path / "d", version, stable)
    lancefmt.dataset(uri).create_scalar_index("cat", "BITMAP")
    lance.write_dataset(_table(ROWS, 1500), uri, mode="append", max_rows_per_file=1000)
    lance.dataset(uri).delete("id % 5 = 1")
    _check_partial(uri)
    lancefmt.dataset(uri).optimize.optimize_indices()
    _check_partial(uri)
    lance.dataset(uri).optimize.optimize_indices()  # pylance merges into our segment
    _check_partial(uri)
    assert lancefmt.dataset(uri).stats.index_stats("cat_idx")["num_unindexed_rows"] == 0


def _check_partial(uri):
    full = lance.dataset(uri).to_table()
    for reader in (lance.dataset(uri), lancefmt.dataset(uri)):
        for sql, expr in FILTERS[:7]:
            assert _ids(reader.to_table(filter=sql)) == _ids(full.filter(expr)), sql


def test_types_pylance_indexes(tmp_path):
    """Every column type pylance builds a BITMAP on: the same file, the same answers."""
    import datetime
    import decimal
    t = pa.table({
        "f64": pa.array([1.5, -0.0, None, 0.0, 2.5, 1.5] * 50),
        "b": pa.array([True, None, False] * 100),
        "dec": pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("-2")] * 100, pa.decimal128(6, 2)),
        "d": pa.array([datetime.date(2020, 1, 1), datetime.date(1960, 5, 5), None] * 100),
        "ts": pa.array([1, None, 5_000_000] * 100, pa.timestamp("us", "UTC")),
        "fsb": pa.array([b"ab", None, b"zz"] * 100, pa.binary(2)),
        "lbin": pa.array([b"", b"x", None] * 100, pa.large_binary()),
        "u8": pa.array([1, 255, None] * 100, pa.uint8()),
    })
    filters = {"f64": ("f64 = 1.5", "f64 > 0.0"), "b": ("b = true", "b IS NULL"),
               "dec": ("dec IS NULL", "dec < 0"), "d": ("d = DATE '2020-01-01'", "d < DATE '2000-01-01'"),
               "ts": ("ts > TIMESTAMP '1970-01-01 00:00:01'",), "fsb": ("fsb IS NULL",),
               "lbin": ("lbin IS NOT NULL",), "u8": ("u8 = 255", "u8 < 100")}
    ours, peer = str(tmp_path / "ours"), str(tmp_path / "peer")
    for uri in (ours, peer):
        lance.write_dataset(t, uri, max_rows_per_file=100)
    for col in t.column_names:
        lancefmt.dataset(ours).create_scalar_index(col, "BITMAP")
        lance.dataset(peer).create_scalar_index(col, "BITMAP")
    for col, sqls in filters.items():
        assert _lookup(ours, f"{col}_idx") == _lookup(peer, f"{col}_idx"), col
        for sql in sqls:
            want = lance.dataset(ours).to_table(filter=sql, use_scalar_index=False).num_rows
            for uri in (ours, peer):
                assert lancefmt.dataset(uri).to_table(filter=sql).num_rows == want, sql
                assert lance.dataset(uri).to_table(filter=sql).num_rows == want, sql


def test_unsupported_columns_refused_as_pylance(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(pa.table({"l": pa.array([[1], [2]]), "s": pa.array([{"a": 1}, {"a": 2}])}), uri)
    for col in ("l", "s"):
        with pytest.raises(TypeError):
            lance.dataset(uri).create_scalar_index(col, "BITMAP")
        with pytest.raises(TypeError):
            lancefmt.dataset(uri).create_scalar_index(col, "BITMAP")


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("compactor", ["lancefmt", "pylance"])
def test_compaction_remaps_the_index(tmp_path, stable, compactor):
    uri = _dataset(tmp_path / "c", "2.2", stable)
    lance.write_dataset(_table(ROWS, 500), uri, mode="append", max_rows_per_file=100)
    lancefmt.dataset(uri).create_scalar_index("cat", "BITMAP")
    lancefmt.dataset(uri).create_scalar_index("num", "BITMAP")
    lance.dataset(uri).delete("id % 4 = 2")
    if compactor == "lancefmt":
        lancefmt.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)
    else:
        lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)
    _check_answers(uri, f"compacted by {compactor}")
    for reader in (lance.dataset(uri), lancefmt.dataset(uri)):
        assert reader.stats.index_stats("cat_idx")["num_unindexed_rows"] == 0
