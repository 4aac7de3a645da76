"""LABEL_LIST against pylance 14: each library answers from the other's index, both equal to a
full scan (Python's set semantics over the lists), and both write the same index file."""
import glob

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.file.reader import LanceFileReader

ROWS = 2000


def _table(start=0, rows=ROWS, seed=0):
    rng = np.random.default_rng(seed)
    tags = []
    for k in range(rows):
        r = rng.random()
        if r < 0.08:
            tags.append(None)
        elif r < 0.15:
            tags.append([])
        else:
            tags.append([None if rng.random() < 0.03 else f"t{x}" for x in rng.integers(0, 9, rng.integers(1, 4))])
    nums = [None if t is None else [len(x or "") for x in t] for t in tags]
    return pa.table({"id": pa.array(np.arange(start, start + rows), pa.int64()), "tags": pa.array(tags),
                     "nums": pa.array(nums, pa.large_list(pa.int32()))})


def _any(lst, want):
    return lst is not None and any(w in lst for w in want)


def _all(lst, want):
    return lst is not None and all(w in lst for w in want)


FILTERS = [
    ("array_has_any(tags, ['t1'])", "tags", _any, ["t1"]),
    ("array_has_any(tags, ['t1', 't7', 'nope'])", "tags", _any, ["t1", "t7", "nope"]),
    ("array_has_all(tags, ['t2', 't3'])", "tags", _all, ["t2", "t3"]),
    ("array_has_all(tags, ['t2', 'nope'])", "tags", _all, ["t2", "nope"]),
    ("array_has(tags, 't4')", "tags", _any, ["t4"]),
    ("array_contains(tags, 't5')", "tags", _any, ["t5"]),
    ("array_has_any(nums, [2])", "nums", _any, [2]),
    ("array_has_all(nums, [2, 0])", "nums", _all, [2, 0]),
]
NEGATED = [("NOT array_has_any(tags, ['t1'])", "tags", lambda lst, w: lst is not None and not _any(lst, w), ["t1"])]


def _expected(table, col, fn, want):
    return sorted(i for i, lst in zip(table.column("id").to_pylist(), table.column(col).to_pylist()) if fn(lst, want))


def _ids(table):
    return sorted(table.column("id").to_pylist())


def _dataset(path, version, stable):
    uri = str(path)
    lance.write_dataset(_table(), uri, max_rows_per_file=700, data_storage_version=version,
                        enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 9 = 4")
    return uri


def _check(uri, with_plans=True):
    full = lance.dataset(uri).to_table()
    for reader in (lance.dataset(uri), lancefmt.dataset(uri)):
        for sql, col, fn, want in FILTERS + NEGATED:
            assert _ids(reader.to_table(filter=sql)) == _expected(full, col, fn, want), (type(reader), sql)
        if with_plans:
            for sql, *_ in FILTERS[:6]:  # (pylance casts list<int32> to int64 and scans)
                plan = reader.scanner(filter=sql).explain_plan(True)
                assert "ScalarIndexQuery" in plan and "(LabelList)" in plan, plan
    for sql, *_ in FILTERS[6:]:
        plan = lancefmt.dataset(uri).scanner(filter=sql).explain_plan(True)
        assert not with_plans or "@nums_idx(LabelList)" in plan, plan


def _lookup(uri, name):
    ds = lance.dataset(uri)
    uuid = [i for i in ds.describe_indices() if i.name == name][0].segments[0].uuid
    (path,) = glob.glob(f"{uri}/_indices/{uuid}/bitmap_page_lookup.lance")
    r = LanceFileReader(path)
    return (r.read_all(), {k: bytes(v) for k, v in r.schema_metadata.items()},
            [r.read_global_buffer(i) for i in range(1, len(r.metadata.global_buffers))])


@pytest.mark.parametrize("version,stable", [(v, s) for v in ("2.0", "2.1", "2.2") for s in (False, True)])
def test_each_reads_the_others_index(tmp_path, version, stable):
    ours = _dataset(tmp_path / "ours", version, stable)
    peer = _dataset(tmp_path / "peer", version, stable)
    for col in ("tags", "nums"):
        lancefmt.dataset(ours).create_scalar_index(col, "LABEL_LIST")
        lance.dataset(peer).create_scalar_index(col, "LABEL_LIST")
    _check(ours)
    _check(peer)
    for name in ("tags_idx", "nums_idx"):
        assert _lookup(ours, name) == _lookup(peer, name)
        assert lancefmt.dataset(ours).stats.index_stats(name)["indices"] == \
            lance.dataset(peer).stats.index_stats(name)["indices"]
    from lancefmt.table.versions import load_manifest
    for uri in (ours, peer):
        (entry, _) = [e for e in load_manifest(uri, None).indices]
        assert entry.index_version == 1
        assert entry.index_details.type_url == "/lance.table.LabelListIndexDetails"


def test_appends_deletes_and_optimize(tmp_path):
    uri = _dataset(tmp_path / "d", "2.2", False)
    lancefmt.dataset(uri).create_scalar_index("tags", "LABEL_LIST")
    lance.write_dataset(_table(ROWS, 800, seed=1), uri, mode="append")
    lance.dataset(uri).delete("id % 6 = 1")
    _check(uri, with_plans=False)
    lancefmt.dataset(uri).optimize.optimize_indices()
    _check(uri, with_plans=False)
    lance.dataset(uri).optimize.optimize_indices()
    _check(uri, with_plans=False)


def test_non_list_columns_refused_as_pylance(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(pa.table({"s": pa.array(["a"]), "f": pa.array([[1, 2]], pa.list_(pa.int32(), 2)),
                                  "ls": pa.array([[{"a": 1}]])}), uri)
    for col in ("s", "f"):
        with pytest.raises(TypeError):
            lance.dataset(uri).create_scalar_index(col, "LABEL_LIST")
        with pytest.raises(TypeError):
            lancefmt.dataset(uri).create_scalar_index(col, "LABEL_LIST")
    with pytest.raises(ValueError):
        lance.dataset(uri).create_scalar_index("ls", "LABEL_LIST")
    with pytest.raises(ValueError):
        lancefmt.dataset(uri).create_scalar_index("ls", "LABEL_LIST")


@pytest.mark.parametrize("stable", [False, True])
def test_compaction_remaps_the_index(tmp_path, stable):
    uri = _dataset(tmp_path / "c", "2.2", stable)
    lance.write_dataset(_table(ROWS, 300, seed=2), uri, mode="append", max_rows_per_file=100)
    lancefmt.dataset(uri).create_scalar_index("tags", "LABEL_LIST")
    lancefmt.dataset(uri).create_scalar_index("nums", "LABEL_LIST")
    lance.dataset(uri).delete("id % 4 = 2")
    lancefmt.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000)
    _check(uri)
    assert lance.dataset(uri).stats.index_stats("tags_idx")["num_unindexed_rows"] == 0


@pytest.mark.parametrize("kind,column", [("LABEL_LIST", "tags"), ("BITMAP", "id")])
def test_distributed_segments_merge(tmp_path, monkeypatch, kind, column):
    """Segments built per fragment group by lancefmt, merged from their files, read by pylance."""
    from lancefmt.index.core.registry import by_name
    itype = by_name(kind)
    merged_files = []
    real = type(itype).merge
    monkeypatch.setattr(type(itype), "merge", lambda self, segs, dest: merged_files.append(len(segs)) or
                        real(self, segs, dest))
    uri = _dataset(tmp_path / "d", "2.2", False)
    ds = lancefmt.dataset(uri)
    frags = [f.fragment_id for f in ds.get_fragments()]
    segs = [ds.create_index_uncommitted(column, kind, name="x_idx", fragment_ids=frags[:1]),
            ds.create_index_uncommitted(column, kind, name="x_idx", fragment_ids=frags[1:])]
    merged = ds.merge_existing_index_segments(segs)
    ds.commit_existing_index_segments("x_idx", column, [merged])
    assert merged_files == [2]  # merged from the segments' files, not rebuilt from the data
    peer = str(tmp_path / "peer")
    lance.write_dataset(_table(), peer, max_rows_per_file=700, data_storage_version="2.2")
    lance.dataset(peer).delete("id % 9 = 4")
    lance.dataset(peer).create_scalar_index(column, kind, name="x_idx")
    assert _lookup(uri, "x_idx") == _lookup(peer, "x_idx")
    sql = "array_has_any(tags, ['t3'])" if kind == "LABEL_LIST" else "id = 17"
    for reader in (lance.dataset(uri), lancefmt.dataset(uri)):
        assert "ScalarIndexQuery" in reader.scanner(filter=sql).explain_plan(True)
        assert _ids(reader.to_table(filter=sql)) == _ids(lance.dataset(peer).to_table(filter=sql))
