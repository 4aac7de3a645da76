"""pylance's write API and data evolution, lancefmt vs pylance (the oracle).

Every scenario runs the same operations on a lancefmt dataset and on a pylance dataset; pylance
then opens the lancefmt one, validate()s it and must read exactly what its own run produced
(also with stable row ids, where ``_rowid`` must match too). The reverse direction: lancefmt
reads pylance datasets after pylance evolved their schema.
"""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancefmt

lance = pytest.importorskip("lance")


def rows(n=60, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "x": (ids * 0.5).astype(np.float64),
        "s": pa.array([None if i % 7 == 0 else f"s{i}" for i in ids]),
    })


def _delete(ds):
    return ds.delete("id % 6 = 1")


def _update(ds):
    return ds.update({"x": "x * 10", "s": "'upd'"}, "id > 40")


def _insert(ds):
    return ds.insert(rows(5, 100))


def _merge_insert(ds):
    src = rows(10, 55)  # 5 matched (55..59), 5 new
    src = src.set_column(1, "x", pc.multiply(src["x"], -1.0))
    return ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)


def _merge_insert_by_source(ds):
    return (ds.merge_insert("id").when_matched_update_all("target.x < source.x")
            .when_not_matched_by_source_delete("id < 10").execute(rows(3, 20).set_column(
                1, "x", pa.array([100.0, -1.0, 100.0]))))


def _stage_merge(ds):
    """``execute_uncommitted``: files are written, the dataset does not move."""
    src = rows(10, 55).set_column(1, "x", pa.array(np.full(10, -2.0)))
    before = ds.version
    txn, stats = (ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
                  .execute_uncommitted(src))
    assert ds.version == before and ds.count_rows() == ds.checkout_version(before).count_rows()
    return txn, [stats, txn.read_version, type(txn.operation).__name__]


def _commit_staged(ds, txn):
    new = type(ds).commit(ds.uri, txn)
    return [new.version, new.count_rows(), ds.version]


def _merge_insert_uncommitted(ds):
    txn, out = _stage_merge(ds)
    return out + _commit_staged(ds, txn)  # ``ds`` stays where it was (as pylance's)


def _merge_insert_uncommitted_rebased(ds):
    """An append lands between staging and committing: the staged Update rebases on it."""
    txn, out = _stage_merge(ds)
    out.append(ds.insert(rows(5, 100)) is None)
    return out + _commit_staged(ds, txn)


def _add_sql(ds):
    return ds.add_columns({"y": "id * 2", "z": "x + 1"})


def _add_null(ds):
    ds.add_columns(pa.field("n", pa.string()))
    ds.add_columns(pa.schema([pa.field("m", pa.int32()), pa.field("k", pa.float64())]))


def _add_udf(ds, udf):
    @udf(output_schema=pa.schema([pa.field("neg", pa.int64())]))
    def neg(batch):
        return pa.record_batch([pc.negate(batch["id"])], names=["neg"])

    ds.add_columns(neg, read_columns=["id"])


def _add_aligned(ds):
    ds.add_columns(pa.table({"aligned": pa.array(np.arange(ds.count_rows()) * 3)}))


def _drop(ds):
    return ds.drop_columns(["x"])


def _insert_partial(ds):
    """Columns missing from appended data are nullable: the new fragment has no data file
    for them and reads them as nulls (pylance allows it)."""
    return ds.insert(rows(4, 200).select(["id", "s"]))


def _alter(ds):
    ds.alter_columns({"path": "s", "name": "label"}, {"path": "id", "nullable": False})
    ds.alter_columns({"path": "x", "data_type": pa.float32()})


def _merge(ds):
    return ds.merge(pa.table({"id": pa.array([3, 5, 50], pa.int64()), "w": ["a", "b", "c"]}), "id")


def _metadata(ds):
    return [ds.update_schema_metadata({"k": "v", "k2": "v2"}),
            ds.update_field_metadata({"x": {"unit": "m"}}),
            ds.update_config({"c1": "1", "c2": "2"}),
            ds.delete_config_keys(["c1"]),
            ds.update_schema_metadata({"k3": "v3"}, replace=True)]


def _compact(ds):
    m = ds.optimize.compact_files(target_rows_per_fragment=25)
    return (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)


def _compact_materialize(ds):
    ds.delete("id % 3 = 0")
    m = ds.optimize.compact_files(target_rows_per_fragment=5)
    return (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)


def _restore(ds):
    ds.delete("id < 30")
    old = ds.checkout_version(1)
    out = [old.restore(), old.version, ds.version]
    return out + [ds.checkout_version(ds.version).version]


SCENARIOS = {
    "delete": [_delete],
    "update": [_delete, _update],
    "insert": [_insert, _delete],
    "merge_insert": [_delete, _merge_insert],
    "merge_insert_by_source": [_merge_insert_by_source],
    "merge_insert_uncommitted": [_delete, _merge_insert_uncommitted],
    "merge_insert_uncommitted_rebased": [_merge_insert_uncommitted_rebased],
    "add_sql": [_delete, _add_sql],
    "add_null": [_add_null, _insert],
    "add_null_partial_insert": [_add_null, _insert_partial],
    "add_udf": [_delete, "udf"],
    "add_aligned": [_delete, _add_aligned],
    "drop": [_drop, _insert_partial],
    "alter": [_delete, _alter],
    "merge": [_merge],
    "metadata": [_metadata],
    "compact": [_delete, _compact],
    "compact_materialize": [_compact_materialize],
    "evolve_then_compact": [_delete, _add_null, _add_sql, _drop, _compact],
    "restore": [_restore],
}


def _run(ds, steps, udf):
    """Run the steps; their return values (pylance's are the reference)."""
    out = []
    for step in steps:
        out.append(_add_udf(ds, udf) if step == "udf" else step(ds))
    return out


@pytest.mark.parametrize("stable", [False, True], ids=["addr", "stable"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_same_result_as_pylance(tmp_path, name, stable):
    ours_uri, theirs_uri = str(tmp_path / "ours"), str(tmp_path / "theirs")
    ours = lancefmt.write_dataset(rows(), ours_uri, max_rows_per_file=10,
                                  enable_stable_row_ids=stable)
    theirs = lance.write_dataset(rows(), theirs_uri, max_rows_per_file=10,
                                 data_storage_version="2.0", enable_stable_row_ids=stable)
    ours_results = _run(ours, SCENARIOS[name], lancefmt.batch_udf)
    theirs_results = _run(theirs, SCENARIOS[name], lance.batch_udf)
    assert ours_results == theirs_results
    assert ours.version == theirs.version
    seen, latest = lance.dataset(ours_uri), lance.dataset(theirs_uri)
    seen.validate()
    assert seen.schema == latest.schema
    assert seen.to_table() == latest.to_table()
    assert lancefmt.dataset(ours_uri).to_table() == latest.to_table()
    assert ours.to_table() == theirs.to_table()  # the moved objects show the same version
    if stable:
        assert seen.to_table(with_row_id=True).column("_rowid") == \
            latest.to_table(with_row_id=True).column("_rowid")
    assert [(f.fragment_id, f.count_rows()) for f in seen.get_fragments()] == \
        [(f.fragment_id, f.count_rows()) for f in latest.get_fragments()]
    assert seen.config() == latest.config()
    assert seen.schema.metadata == latest.schema.metadata


def test_pylance_evolved_datasets_read_by_lancefmt(tmp_path):
    """Columns added (fragments appended later carry the data file, older ones not for the
    all-null column), dropped, renamed, cast, merged and merge-inserted by pylance."""
    uri = str(tmp_path / "pl")
    ds = lance.write_dataset(rows(), uri, max_rows_per_file=10, data_storage_version="2.0")
    ds.add_columns(pa.field("n", pa.string()))          # no data file anywhere
    ds.insert(rows(5, 100).append_column("n", pa.array(["new"] * 5)))  # this one has it
    assert lancefmt.dataset(uri).to_table() == ds.to_table()
    ds.add_columns({"y": "id + 1"})
    ds.drop_columns(["x"])
    ds.alter_columns({"path": "s", "name": "label"}, {"path": "y", "data_type": pa.int32()})
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        lancefmt.dataset(uri).to_table(filter="id < 5"))
    ds.merge(pa.table({"id": pa.array([1, 2], pa.int64()), "w": [1.5, 2.5]}), "id")
    ours = lancefmt.dataset(uri)
    assert ours.schema == ds.schema
    assert ours.to_table() == ds.to_table()
    # and lancefmt keeps working on it; pylance reads the result
    ours.add_columns({"yy": "y * 2"})
    ours.delete("id = 3")
    ours.optimize.compact_files()
    back = lance.dataset(uri)
    back.validate()
    assert back.to_table() == ours.to_table()


def test_non_utf8_schema_metadata_refused_as_pylance(tmp_path):
    bad = rows(3).replace_schema_metadata({b"k": b"\xff\xfe"})
    with pytest.raises(ValueError):
        lance.write_dataset(bad, str(tmp_path / "pl"))
    with pytest.raises(lancefmt.InvalidArgumentError) as e:
        lancefmt.write_dataset(bad, str(tmp_path / "ours"))
    assert isinstance(e.value, ValueError) and "utf8" in str(e.value)
    ds = lancefmt.write_dataset(rows(3), str(tmp_path / "ours2"))
    with pytest.raises(TypeError):
        ds.update_schema_metadata({"k": b"\xff"})


def test_auto_cleanup_as_pylance(tmp_path):
    """auto_cleanup_options is stored as pylance stores it and every interval-th commit
    cleans up versions older than older_than (here 0s: all but the current one)."""
    opts = {"interval": 3, "older_than_seconds": 0}
    ours = lancefmt.write_dataset(rows(5), str(tmp_path / "o"), auto_cleanup_options=opts)
    theirs = lance.write_dataset(rows(5), str(tmp_path / "t"), auto_cleanup_options=opts,
                                 data_storage_version="2.0")
    for ds in (ours, theirs):
        for i in range(4):
            ds.insert(rows(1, 10 + i))
    assert lance.dataset(str(tmp_path / "o")).config() == theirs.config()
    assert [v["version"] for v in ours.versions()] == [v["version"] for v in theirs.versions()]
    assert lance.dataset(str(tmp_path / "o")).to_table() == theirs.to_table()


# -- pylance's indices survive lancefmt commits ----------------------------------------------------
D = 8


def _vec_rows(rng, lo, n):
    vec = rng.standard_normal((n, D)).astype(np.float32)
    ids = np.arange(lo, lo + n)
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array(ids % 7, pa.int64()),
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), D)})


def _check_indexed_queries(uri, q, step):
    ds = lance.dataset(uri)
    ds.validate()
    assert {i["name"] for i in ds.list_indices()} == {"cat_idx", "vec_idx"}, step
    full = ds.to_table()
    got = ds.to_table(filter="cat = 3", columns=["id"]).column("id").to_pylist()
    want = full.filter(pc.equal(full["cat"], 3)).column("id").to_pylist()
    assert sorted(got) == sorted(want), step
    nn = ds.to_table(nearest={"column": "vec", "q": q, "k": 10, "nprobes": 4},
                     columns=["id"]).column("id").to_pylist()
    vec = np.stack(full.column("vec").to_numpy(zero_copy_only=False))
    brute = full.column("id").to_numpy()[np.argsort(((vec - q) ** 2).sum(1))[:10]]
    assert sorted(nn) == sorted(brute.tolist()), step


def test_pylance_indices_survive_lancefmt_commits(tmp_path):
    rng = np.random.default_rng(7)
    uri = str(tmp_path / "idx")
    pl = lance.write_dataset(_vec_rows(rng, 0, 2000), uri, max_rows_per_file=500,
                             data_storage_version="2.0")
    pl.create_scalar_index("cat", "BTREE")
    pl.create_index("vec", "IVF_FLAT", num_partitions=4)
    q = rng.standard_normal(D).astype(np.float32)
    _check_indexed_queries(uri, q, "start")
    ds = lancefmt.dataset(uri)
    ds.insert(_vec_rows(rng, 2000, 300))
    _check_indexed_queries(uri, q, "append")
    ds.delete("id % 11 = 0")
    bitmaps = {i.name: i.fragment_bitmap for i in ds.manifest_file.indices}
    _check_indexed_queries(uri, q, "delete")
    ds.update({"cat": "3"}, where="id < 40")
    _check_indexed_queries(uri, q, "update")
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        _vec_rows(rng, 1900, 200))
    _check_indexed_queries(uri, q, "merge_insert")
    # delete, update and merge_insert keep the bitmaps (as pylance's do)
    assert {i.name: i.fragment_bitmap for i in ds.manifest_file.indices} == bitmaps
    ds.optimize.compact_files(target_rows_per_fragment=800)
    _check_indexed_queries(uri, q, "compact")
    from pyroaring import BitMap

    live = {f.id for f in ds.get_fragments()}
    for idx in ds.manifest_file.indices:  # compaction narrowed them to surviving fragments
        assert set(BitMap.deserialize(idx.fragment_bitmap)) <= live
    ds.add_columns({"twice": "id * 2"})
    _check_indexed_queries(uri, q, "add_columns")
    lancefmt.write_dataset(_vec_rows(rng, 0, 10), uri, mode="overwrite")
    assert lancefmt.dataset(uri).manifest_file.indices == []


@pytest.mark.parametrize("deleted", [False, True], ids=["whole", "deleted"])
@pytest.mark.parametrize("mode", ["reencode", "try_binary_copy", "force_binary_copy"])
def test_compaction_modes_as_pylance(tmp_path, mode, deleted):
    """pylance's ``compaction_mode``: the same rows and metrics, and ``force_binary_copy`` of
    fragments with deleted rows refused by both (an OSError); an unknown mode is a ValueError."""
    results = []
    for mod, kw in ((lancefmt, {}), (lance, {"data_storage_version": "2.0"})):
        ds = mod.write_dataset(rows(), str(tmp_path / mod.__name__), max_rows_per_file=10, **kw)
        if deleted:
            ds.delete("id % 3 = 0")
        with pytest.raises(ValueError):
            ds.optimize.compact_files(compaction_mode="bogus")
        try:
            m = ds.optimize.compact_files(compaction_mode=mode)
            out = (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)
        except OSError:
            out = "refused"
        results.append((out, ds.version, ds.to_table()))
    assert results[0] == results[1]
    assert (results[0][0] == "refused") == (mode == "force_binary_copy" and deleted)
    lance.dataset(str(tmp_path / "lancefmt")).validate()


@pytest.mark.parametrize("rows_, per_file, target", [
    (4000, 500, 1000),     # a remainder joins the group before it: 2,143 rows -> 1,072 + 1,071
    (4000, 500, 1200),     # ... and stays one fragment when under twice the target
    (4000, 4000, 1000),    # one fragment with deletions to materialize: 3 x 1,143
    (10000, 10000, 1000),  # 8,571 rows: 1,072 x 3 and 1,071 x 5
])
def test_compaction_splits_groups_as_pylance(tmp_path, rows_, per_file, target):
    ids = np.arange(rows_, dtype=np.int64)
    table = pa.table({"id": ids, "x": ids * 0.5})
    uri, copy = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for u in (uri, copy):
        lance.write_dataset(table, u, max_rows_per_file=per_file)
        lance.dataset(u).delete("id % 7 = 3")
    ours = lancefmt.dataset(uri).optimize.compact_files(target_rows_per_fragment=target)
    theirs = lance.dataset(copy).optimize.compact_files(target_rows_per_fragment=target)
    assert (ours.fragments_removed, ours.fragments_added) == \
        (theirs.fragments_removed, theirs.fragments_added)
    sizes = [[f.count_rows() for f in lance.dataset(u).get_fragments()] for u in (uri, copy)]
    assert sizes[0] == sizes[1]
    assert lance.dataset(uri).to_table() == lance.dataset(copy).to_table()


ALTER_TABLE = pa.table({
    "a": pa.array([1, 2, 1024]), "f": pa.array([1.0, 2.5, 3.0], pa.float32()),
    "b": pa.array(["a", "b", "c"]), "l": pa.array([[1, 2], None, [3]], pa.list_(pa.int32())),
    "t": pa.array([1500, 2, 3003], pa.timestamp("us")), "bo": [True, False, True]})

ALTERATIONS = [
    {"path": "a", "data_type": pa.string()}, {"path": "a", "data_type": pa.float64()},
    {"path": "a", "data_type": pa.int32()}, {"path": "a", "data_type": pa.int8()},
    {"path": "f", "data_type": pa.float64()}, {"path": "f", "data_type": pa.int32()},
    {"path": "b", "data_type": pa.large_string()}, {"path": "b", "data_type": pa.binary()},
    {"path": "l", "data_type": pa.large_list(pa.int64())}, {"path": "l", "data_type": pa.list_(pa.string())},
    {"path": "t", "data_type": pa.timestamp("ms")}, {"path": "t", "data_type": pa.date32()},
    {"path": "t", "data_type": pa.int64()}, {"path": "bo", "data_type": pa.int8()},
    {"path": "q", "name": "z"}, {"path": "a", "type": "string"}, {"path": "a"},
]


@pytest.mark.parametrize("alt", range(len(ALTERATIONS)))
def test_alter_columns_casts_as_pylance(tmp_path, alt):
    """Which casts Lance allows (within a kind: integers, floats, temporal types, strings...,
    lists of them), its messages for the rest, a list column cast with its children, and a
    finer time unit truncated: pylance reads lancefmt's result as its own."""
    alt = ALTERATIONS[alt]
    results = []
    for lib in (lance, lancefmt):
        uri = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(ALTER_TABLE, uri, max_rows_per_file=2)
        try:
            ds.alter_columns(alt)
            results.append(lance.dataset(uri).to_table())
        except Exception as e:  # noqa: BLE001 -- both libraries must refuse, with one message
            results.append(str(e).split(", /home")[0].removeprefix("Invalid user input: ")
                           .removeprefix("LanceError(Arrow): Cast error: "))
    theirs, ours = results
    if isinstance(theirs, pa.Table):
        assert isinstance(ours, pa.Table) and ours.equals(theirs)
    else:
        assert isinstance(ours, str) and ours.startswith(theirs), (theirs, ours)
