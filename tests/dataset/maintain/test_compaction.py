"""optimize.compact_files on lancefmt alone: planning, stable row ids, order, conflicts,
config defaults, progress and the CLI (pylance equality in tests/interop)."""
import json

import numpy as np
import pyarrow as pa
import pytest

import lancefmt
from lancefmt.cli import main
from lancefmt.dataset.maintain.compaction import CompactionOptions, plan_compaction
from lancefmt.errors import CommitConflictError, InvalidArgumentError, RetryableCommitConflictError
from lancefmt.table.fragment import FragmentMetadata


def table(n, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"s{i}" for i in ids])})


def _frag(rows, deleted=0, fid=0):
    m = FragmentMetadata.new([], rows)
    m.pb.id = fid
    if deleted:
        m.pb.deletion_file.num_deleted_rows = deleted
    return m.pb


def test_plan_bins_and_split():
    o = CompactionOptions(target_rows_per_fragment=100)
    big, small = 100, 10
    frags = [_frag(small, fid=0), _frag(small, fid=1), _frag(big, fid=2), _frag(small, fid=3),
             _frag(big, 20, fid=4), _frag(big, fid=5), _frag(small, fid=6)]
    plan = [[f.id for f in b] for b in plan_compaction(frags, o)]
    # 0+1 merge; 3 alone is next to a deletion-heavy big fragment, so 3+4 merge; 6 alone stays
    assert plan == [[0, 1], [3, 4]]
    no_mat = CompactionOptions(target_rows_per_fragment=100, materialize_deletions=False)
    assert [[f.id for f in b] for b in plan_compaction(frags, no_mat)] == [[0, 1]]
    many = [_frag(40, fid=i) for i in range(7)]
    assert [[f.id for f in b] for b in plan_compaction(many, o)] == [[0, 1, 2], [3, 4, 5, 6]]
    with pytest.raises(InvalidArgumentError):
        CompactionOptions.resolve({}, target_rows_per_fragment=0)
    assert CompactionOptions.resolve({"lance.compaction.target_rows_per_fragment": "7"}) \
        .target_rows_per_fragment == 7


def test_stable_row_ids_and_order_survive(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(table(50), uri, max_rows_per_file=5, enable_stable_row_ids=True)
    ds.delete("id % 3 = 0")
    ds.update({"s": "'u'"}, "id = 10")
    before = ds.to_table(with_row_id=True)
    m = ds.optimize.compact_files(target_rows_per_fragment=20)
    assert (m.fragments_removed, m.fragments_added) == (11, 1)  # as pylance plans it
    assert ds.version == 5  # ReserveFragments, then Rewrite
    after = ds.to_table(with_row_id=True)
    assert after == before  # same rows, same order, same row ids
    assert ds.take_row_ids([before["_rowid"][3].as_py()])["id"].to_pylist() == \
        [before["id"][3].as_py()]
    assert all(not f.metadata.pb.HasField("deletion_file") for f in ds.get_fragments())
    assert ds.optimize.compact_files(target_rows_per_fragment=20).fragments_removed == 0
    assert ds.version == 5


def test_conflicts_with_concurrent_delete(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(table(40), uri, max_rows_per_file=10)
    other = lancefmt.dataset(uri)
    from lancefmt.dataset.maintain.compaction import compact_files

    op, written, _ = compact_files(ds.snapshot, CompactionOptions(target_rows_per_fragment=100))
    other.delete("id = 3")
    with pytest.raises(RetryableCommitConflictError):
        lancefmt.commit(uri, op, read_version=1)
    other2 = lancefmt.dataset(uri)
    other2.insert(table(5, 100))  # an append does not conflict with a rewrite
    op, written, _ = compact_files(other.snapshot, CompactionOptions(target_rows_per_fragment=100))
    lancefmt.commit(uri, op, read_version=other.version)
    assert lancefmt.dataset(uri).count_rows() == 44
    assert isinstance(RetryableCommitConflictError("x"), CommitConflictError)


def test_progress_and_cli(tmp_path, capsys):
    uri = str(tmp_path / "d")
    ds = lancefmt.write_dataset(table(30), uri, max_rows_per_file=3)
    ds.optimize.compact_files(target_rows_per_fragment=15, progress=True)
    assert "compacting" in capsys.readouterr().err
    lancefmt.write_dataset(table(6, 30), uri, mode="append", max_rows_per_file=2)
    assert main(["compact", uri, "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fragments_removed"] == 5 and out["fragments_added"] == 1
    assert main(["compact", uri]) == 0
    assert "nothing to compact" in capsys.readouterr().out
    assert lancefmt.dataset(uri).to_table() == table(36)
