"""BTREE indices both ways with pylance 14, for every file version and with and without stable
row ids: each library answers from the other's index exactly as a full scan does, and each
library's writes keep the other's index valid."""
import pytest

import lancefmt
from index_checks import assert_answers_equal_full_scan, index_table

lance = pytest.importorskip("lance")

FILTERS = ["id = 1234", "id < 40", "id BETWEEN 1000 AND 1300", "id IN (1, 777, 2999, 5000)",
           "v = 3", "v IS NULL", "v IS NOT NULL AND id > 2900", "s = 's07'", "s > 's11'",
           "s IS NULL", "id = 5 OR v = 4", "NOT v = 1", "id > 2990 AND x > 5.0",
           "v IN (1, 2) AND s = 's02'"]
LIBS = {"pylance": lambda: lance, "lancefmt": lambda: lancefmt}


def build(uri, builder, stable, storage_version):
    lance.write_dataset(index_table(3000), uri, max_rows_per_file=1100,
                        data_storage_version=storage_version, enable_stable_row_ids=stable)
    lib = LIBS[builder]()
    for col in ("id", "v", "s"):
        lib.dataset(uri).create_scalar_index(col, "BTREE")


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("builder", ["pylance", "lancefmt"])
def test_each_library_answers_from_the_others_btree(tmp_path, builder, stable, storage_version):
    uri = str(tmp_path / "ds")
    build(uri, builder, stable, storage_version)
    assert_answers_equal_full_scan(lance, uri, FILTERS, uses=["id_idx"])
    lance.dataset(uri).validate()
    theirs = {d.name: d for d in lance.dataset(uri).describe_indices()}
    ours = {d.name: d for d in lancefmt.dataset(uri).describe_indices()}
    assert theirs.keys() == ours.keys() == {"id_idx", "v_idx", "s_idx"}
    for name, d in ours.items():
        t = theirs[name]
        assert (d.type_url, d.index_type, d.fields, d.field_names, d.num_rows_indexed) == \
            (t.type_url, t.index_type, t.fields, t.field_names, t.num_rows_indexed)
        assert [sorted(s.fragment_ids) for s in d.segments] == [sorted(s.fragment_ids) for s in t.segments]
        assert [s.index_version for s in d.segments] == [s.index_version for s in t.segments]
    for name in ("id_idx", "v_idx", "s_idx"):
        mine, their = (lib.dataset(uri).stats.index_stats(name) for lib in (lancefmt, lance))
        assert mine == their


def _append(ds, uri, lib):
    lib.write_dataset(index_table(500, 3000), uri, mode="append", max_rows_per_file=300)


OPS = {
    "append": _append,
    "delete": lambda ds, uri, lib: ds.delete("id < 30 OR id % 17 = 0"),
    "update indexed": lambda ds, uri, lib: ds.update({"v": "v + 100"}, where="id < 60"),
    "update other": lambda ds, uri, lib: ds.update({"x": "x + 1"}, where="id >= 2000"),
    "merge_insert": lambda ds, uri, lib: ds.merge_insert("id").when_matched_update_all()
    .when_not_matched_insert_all().execute(index_table(200, 2900)),
    "add_columns": lambda ds, uri, lib: ds.add_columns({"w": "id * 2"}),
    "alter rename": lambda ds, uri, lib: ds.alter_columns({"path": "x", "name": "x2"}),
    "drop indexed": lambda ds, uri, lib: ds.drop_columns(["s"]),
    "compact": lambda ds, uri, lib: (ds.delete("id % 3 = 0"),
                                     lib.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)),
    "overwrite": lambda ds, uri, lib: lib.write_dataset(index_table(100), uri, mode="overwrite"),
    "restore": lambda ds, uri, lib: lib.dataset(uri, version=1).restore(),
}


def _coverage(uri):
    return sorted((d.name, [sorted(s.fragment_ids) for s in d.segments])
                  for d in lance.dataset(uri).describe_indices())


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("builder", ["pylance", "lancefmt"])
@pytest.mark.parametrize("op", list(OPS))
def test_lancefmt_writes_keep_indices_valid_as_pylance_does(tmp_path, op, builder, stable):
    """After each write by lancefmt, pylance validates the dataset, both libraries' indexed
    answers equal a full scan, and the indices cover what they cover after pylance's write."""
    coverage = {}
    for writer in ("pylance", "lancefmt"):
        uri = str(tmp_path / writer)
        build(uri, builder, stable, "2.2")
        lib = LIBS[writer]()
        OPS[op](lib.dataset(uri), uri, lib)
        lance.dataset(uri).validate()
        names = lance.dataset(uri).schema.names
        filters = [f for f in FILTERS if all(c in names for c in _columns(f))]
        assert_answers_equal_full_scan(lance, uri, filters)
        coverage[writer] = _coverage(uri)
    assert coverage["lancefmt"] == coverage["pylance"]


def _columns(text):
    return [c for c in ("id", "v", "s", "x") if f"{c} " in text or f"{c})" in text]
