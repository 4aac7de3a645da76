"""Deletion files against pylance 14.0.2: we read exactly the rows pylance deleted, and pylance
drops exactly the rows our deletion files name (committed through pylance's own API)."""
import dataclasses

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
from lance.fragment import DeletionFile as PyLanceDeletionFile  # noqa: E402

from lance_manifest import read_manifest  # noqa: E402
from lancefmt.table.deletion import (  # noqa: E402
    ARROW,
    BITMAP,
    DeletionVector,
    deletion_file_bytes,
    deletion_file_uri,
    load_deletion_vector,
    write_deletion_file,
)

ROWS = 20_000


def _dataset(path, stable=False):
    table = pa.table({"a": pa.array(np.arange(3 * ROWS, dtype=np.int64))})
    return lance.write_dataset(table, str(path), max_rows_per_file=ROWS,
                               enable_stable_row_ids=stable)


def _live_offsets(ds, fragment_id):
    frag = ds.get_fragment(fragment_id)
    t = ds.scanner(columns=[], with_row_address=True, fragments=[frag]).to_table()
    return (t["_rowaddr"].to_numpy() & np.uint64(0xFFFFFFFF)).astype(np.int64)


def _deleted_by_pylance(ds, fragment_id, physical_rows):
    live = _live_offsets(ds, fragment_id)
    return np.setdiff1d(np.arange(physical_rows), live)


@pytest.mark.parametrize("stable", [False, True])
def test_read_what_pylance_deletes(tmp_path, stable):
    uri = tmp_path / "ds"
    ds = _dataset(uri, stable)
    ds.delete("a % 7 = 0 and a < 20000")                 # fragment 0: ~2858 rows -> .arrow
    ds.delete("a >= 20000 and a < 40000 and a % 3 != 0")  # fragment 1: 13333 rows -> .bin
    ds.delete("a >= 40000 and a < 43000")                # fragment 2: 3000 (set) ...
    ds.delete("a >= 43000 and a < 45001")                # ... + 2001 -> > 5000 -> .bin
    ds.delete("a >= 1 and a < 100")                      # fragment 0 grows, stays .arrow
    ds = lance.dataset(str(uri))
    manifest = read_manifest(str(uri))
    kinds = {}
    for frag in manifest.fragments:
        meta = frag.deletion_file
        dv = load_deletion_vector(str(uri), frag.id, meta, physical_rows=frag.physical_rows)
        kinds[frag.id] = dv.kind
        np.testing.assert_array_equal(dv.offsets, _deleted_by_pylance(ds, frag.id, frag.physical_rows))
        assert meta.num_deleted_rows == len(dv)
        np.testing.assert_array_equal(np.flatnonzero(dv.live_mask(frag.physical_rows)),
                                      _live_offsets(ds, frag.id))
    assert kinds == {0: ARROW, 1: BITMAP, 2: BITMAP}
    # Our kind rule predicts pylance's choice for each fragment's history.
    assert DeletionVector.from_offsets(np.arange(0, 20000, 7)).extend(np.arange(1, 100)).kind == ARROW
    assert DeletionVector.from_offsets(np.arange(3000)).extend(np.arange(3000, 5001)).kind == BITMAP
    # pylance's roaring bytes are what pyroaring writes for the same set.
    frag1 = manifest.fragments[1]
    uri1 = deletion_file_uri(str(uri), 1, frag1.deletion_file)
    with open(uri1, "rb") as f:
        pylance_bytes = f.read()
    dv1 = load_deletion_vector(str(uri), 1, frag1.deletion_file)
    assert deletion_file_bytes(dv1) == pylance_bytes


def _commit_deletions(uri, ds, fragment_id, dv, compression="zstd"):
    """Write our deletion file for one fragment and commit it with pylance's Delete op."""
    meta = write_deletion_file(str(uri), fragment_id, ds.version, dv, compression=compression)
    frag_meta = ds.get_fragment(fragment_id).metadata
    py_deletion = PyLanceDeletionFile(meta.read_version, meta.id,
                                      "array" if dv.kind == ARROW else "bitmap",
                                      meta.num_deleted_rows, None)
    updated = dataclasses.replace(frag_meta, deletion_file=py_deletion)
    op = lance.LanceOperation.Delete(updated_fragments=[updated], deleted_fragment_ids=[],
                                     predicate="lancefmt deletions")
    return lance.LanceDataset.commit(str(uri), op, read_version=ds.version)


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("case", ["arrow-zstd", "arrow-plain", "bitmap"])
def test_pylance_reads_our_files(tmp_path, stable, case):
    uri = tmp_path / "ds"
    ds = _dataset(uri, stable)
    rng = np.random.default_rng(5)
    count = 12_000 if case == "bitmap" else 700
    offsets = rng.choice(ROWS, count, replace=False)
    dv = DeletionVector.from_offsets(offsets)
    assert dv.kind == (BITMAP if case == "bitmap" else ARROW)
    ds2 = _commit_deletions(uri, ds, 1, dv, compression=None if case == "arrow-plain" else "zstd")
    ds2.validate()
    assert ds2.count_rows() == 3 * ROWS - count
    np.testing.assert_array_equal(_deleted_by_pylance(ds2, 1, ROWS), np.sort(offsets))
    got = ds2.to_table(columns=["a"])["a"].to_numpy()
    expected = np.delete(np.arange(3 * ROWS), ROWS + np.sort(offsets))
    np.testing.assert_array_equal(np.sort(got), expected)
    # pylance's own delete on top of ours keeps our rows deleted (it read our file back).
    ds2.delete("a = 0")
    ds3 = lance.dataset(str(uri))
    assert ds3.count_rows() == 3 * ROWS - count - 1
    ds3.validate()


def test_cumulative_merge_with_pylance_deletions(tmp_path):
    uri = tmp_path / "ds"
    ds = _dataset(uri)
    ds.delete("a >= 100 and a < 200")                    # pylance: 100 rows of fragment 0
    ds = lance.dataset(str(uri))
    frag = read_manifest(str(uri)).fragments[0]
    existing = load_deletion_vector(str(uri), 0, frag.deletion_file, physical_rows=ROWS)
    assert existing.kind == ARROW and len(existing) == 100
    merged = existing.extend(np.arange(5000, 10_000))    # 5100 > 5000: promoted to a bitmap
    assert merged.kind == BITMAP
    ds2 = _commit_deletions(uri, ds, 0, merged)
    ds2.validate()
    np.testing.assert_array_equal(_deleted_by_pylance(ds2, 0, ROWS), merged.offsets)
    assert ds2.count_rows() == 3 * ROWS - 5100


@pytest.mark.parametrize("stable", [False, True])
def test_scan_with_deleted_rows_as_pylance(tmp_path, stable):
    """include_deleted_rows: deleted rows of live fragments come back with null _rowid and
    _rowaddr, filters and scalar-index answers see them (with stable row ids an index
    answers through live rows only), counts agree; with_row_id is required."""
    import lancefmt

    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": range(100), "b": range(100)}), uri, max_rows_per_file=25,
                        enable_stable_row_ids=stable)
    lance.dataset(uri).create_scalar_index("b", "BTREE")
    lance.dataset(uri).delete("a < 30 or a = 60")
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    cases = [dict(with_row_address=True), dict(filter="a < 32"), dict(filter="b < 30"),
             dict(filter="b = 60"), dict(limit=3, offset=3), dict(columns=["a"])]
    for kw in cases:
        kw = dict(with_row_id=True, include_deleted_rows=True, **kw)
        want, got = theirs.scanner(**kw).to_table(), ours.scanner(**kw).to_table()
        assert got.equals(want), kw
        if "limit" not in kw:
            assert ours.scanner(**kw).count_rows() == want.num_rows
    for lib in (theirs, ours):
        with pytest.raises(ValueError, match="with_row_id is false"):
            lib.scanner(include_deleted_rows=True, filter="a < 30").to_table()
