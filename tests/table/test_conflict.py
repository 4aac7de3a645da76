"""The conflict matrix (lance_facts.md §9) on representative pairs."""
import pytest
from pyroaring import BitMap

from lancefmt._proto import table_pb2
from lancefmt.table.conflict import Verdict, check_conflict
from lancefmt.table.fragment import FragmentMetadata
from lancefmt.table.transaction import (
    Append, CreateIndex, Delete, Opaque, Overwrite, Project, Restore, Rewrite, RewriteGroup,
    Transaction, Update, UpdateBases, UpdateConfig, UpdateMap,
)


def frag(i):
    return FragmentMetadata(table_pb2.DataFragment(id=i, physical_rows=10))


def txn(op):
    return Transaction(1, op)


C, R, I = Verdict.COMPATIBLE, Verdict.RETRYABLE, Verdict.INCOMPATIBLE


@pytest.mark.parametrize("mine,theirs,expected", [
    (Append([frag(0)]), Append([frag(0)]), C),
    (Append([frag(0)]), Delete([frag(1)], [], "x"), C),
    (Append([frag(0)]), Overwrite([], [frag(0)]), I),
    (Append([frag(0)]), Restore(1), I),
    (Overwrite([], [frag(0)]), Append([frag(0)]), C),
    (Overwrite([], [frag(0)]), Overwrite([], [frag(0)]), C),
    (Overwrite([], [], config_upsert_values={"k": "1"}), Overwrite([], [], config_upsert_values={"k": "2"}), I),
    (Delete([frag(1)], [], "x"), Delete([frag(1)], [], "y"), R),
    (Delete([frag(1)], [], "x"), Delete([frag(2)], [5], "y"), C),
    (Delete([], [2], "x"), Update([], [frag(2)], []), R),
    (Delete([frag(1)], [], "x"), Overwrite([], []), I),
    (Delete([frag(1)], [], "x"), Append([frag(9)]), C),
    (Delete([frag(1)], [], "x"), Rewrite([RewriteGroup([frag(1)], [frag(7)])]), R),
    (Delete([frag(1)], [], "x"), Rewrite([RewriteGroup([frag(2)], [frag(7)])]), C),
    (Rewrite([RewriteGroup([frag(1)], [frag(7)])]), Rewrite([RewriteGroup([frag(1)], [frag(8)])]), R),
    (Restore(1), Append([frag(0)]), C),
    (UpdateConfig(UpdateMap({"a": "1"})), UpdateConfig(UpdateMap({"a": "2"})), I),
    (UpdateConfig(UpdateMap({"a": "1"})), UpdateConfig(UpdateMap({"b": "2"})), C),
    (UpdateConfig(schema_metadata_updates=UpdateMap({"m": "1"})), Overwrite([], []), I),
    (UpdateConfig(UpdateMap({"a": "1"})), Overwrite([], [], config_upsert_values={"b": "1"}), C),
    (Project([]), Project([]), R),
    (UpdateBases([table_pb2.BasePath(id=3, path="s3://a")]), UpdateBases([table_pb2.BasePath(id=4, path="s3://a")]), I),
    (UpdateBases([table_pb2.BasePath(id=3, path="s3://a")]), UpdateBases([table_pb2.BasePath(id=4, path="s3://b")]), C),
    (Append([frag(0)]), Opaque(name="update_mem_wal_state"), I),
])
def test_matrix(mine, theirs, expected):
    assert check_conflict(txn(mine), txn(theirs)).verdict is expected


def test_missing_transaction_is_a_conflict():
    assert check_conflict(txn(Append([])), None).verdict is I


def test_index_vs_rewrite_uses_fragment_bitmaps():
    idx = table_pb2.IndexMetadata(name="i", fields=[0], fragment_bitmap=BitMap([1, 2]).serialize())
    rewrite_covered = Rewrite([RewriteGroup([frag(2)], [frag(9)])])
    rewrite_other = Rewrite([RewriteGroup([frag(5)], [frag(9)])])
    assert check_conflict(txn(CreateIndex([idx])), txn(rewrite_covered)).verdict is R
    assert check_conflict(txn(CreateIndex([idx])), txn(rewrite_other)).verdict is C
    assert check_conflict(txn(rewrite_covered), txn(CreateIndex([idx]))).verdict is R


def test_index_commits_on_one_name_conflict_unless_both_only_drop():
    """As pylance 14 decides (checked by committing each pair with both libraries): a
    replace, delta or drop of an index is redone when the other commit added segments of that
    name; two drops of it both succeed."""
    def seg(name, uid):
        return table_pb2.IndexMetadata(name=name, fields=[0], uuid=table_pb2.UUID(uuid=bytes([uid]) * 16),
                                       fragment_bitmap=BitMap([0]).serialize())

    old, a, b = seg("i", 1), seg("i", 2), seg("i", 3)
    replace_a, replace_b = CreateIndex([a], [old]), CreateIndex([b], [old])
    delta, drop, other = CreateIndex([b]), CreateIndex([], [old]), CreateIndex([seg("j", 4)])
    for mine, theirs, expected in [(replace_a, replace_b, R), (replace_a, delta, R),
                                   (replace_a, drop, R), (drop, replace_a, R), (drop, delta, R),
                                   (delta, drop, R), (delta, delta, R), (drop, drop, C),
                                   (replace_a, other, C), (drop, other, C), (other, drop, C)]:
        assert check_conflict(txn(mine), txn(theirs)).verdict is expected, (mine, theirs)
