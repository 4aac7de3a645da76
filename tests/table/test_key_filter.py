"""The inserted-keys filter of a merge insert's Update: hashing, comparison, protobuf form."""
import pyarrow as pa

from lancefmt._proto import transaction_pb2
from lancefmt.table.conflict import Verdict, check_conflict
from lancefmt.table.key_filter import KeyFilter, key_hashes
from lancefmt.table.transaction import Append, Transaction, Update


def test_hashes_skip_null_keys_and_agree_across_integer_widths():
    t = pa.table({"a": pa.array([1, None, 3], pa.int32()), "b": ["x", "y", None]})
    assert key_hashes(t, ["a"]).size == 2 and key_hashes(t, ["a", "b"]).size == 1
    wide = pa.table({"a": pa.array([1, 3], pa.int64())})
    assert list(key_hashes(t, ["a"])) == list(key_hashes(wide, ["a"]))
    assert key_hashes(pa.table({"s": ["1"]}), ["s"])[0] != key_hashes(wide, ["a"])[0]


def test_exact_sets_compare_exactly_bloom_filters_conservatively():
    a, b = KeyFilter((0,), frozenset({1, 2})), KeyFilter((0,), frozenset({3}))
    assert not a.intersects(b) and a.intersects(KeyFilter((0,), frozenset({2})))
    assert a.intersects(KeyFilter((1,), frozenset({3})))        # other key columns
    bloom = transaction_pb2.Transaction.BloomFilter(bitmap=b"\0" * 32, num_bits=256)
    assert a.intersects(KeyFilter((0,), None, bloom.SerializeToString()))


def test_protobuf_round_trip_keeps_exact_and_bloom_filters():
    for f in (KeyFilter((0, 2), frozenset({5, 7})),
              KeyFilter((0,), None, transaction_pb2.Transaction.BloomFilter(
                  bitmap=b"\1\2", num_bits=16, number_of_items=8192).SerializeToString())):
        txn = Transaction(1, Update(inserted_rows=f))
        back = Transaction.from_pb(transaction_pb2.Transaction.FromString(
            txn.to_pb().SerializeToString()))
        assert back.operation.inserted_rows == f


def test_conflict_rules_follow_lance():
    mine = Transaction(1, Update(inserted_rows=KeyFilter((0,), frozenset({1}))))
    plain = Transaction(1, Update())
    assert check_conflict(mine, Transaction(1, Append([]))).verdict is Verdict.RETRYABLE
    assert check_conflict(mine, plain).verdict is Verdict.RETRYABLE
    other = Transaction(1, Update(inserted_rows=KeyFilter((0,), frozenset({2}))))
    assert check_conflict(mine, other).ok
    assert check_conflict(plain, mine).ok and check_conflict(Transaction(1, Append([])), mine).ok


def test_primary_key_fields_by_flag_or_position():
    from lancefmt._proto import file_pb2
    from lancefmt.table.key_filter import primary_key_ids

    a = file_pb2.Field(name="a", id=0, parent_id=-1, unenforced_primary_key=True)
    b = file_pb2.Field(name="b", id=1, parent_id=-1)
    b.metadata["lance-schema:unenforced-primary-key:position"] = b"1"
    c = file_pb2.Field(name="c", id=2, parent_id=-1)
    assert primary_key_ids([a, b, c], ["b", "a"]) == (0, 1)
    assert primary_key_ids([a, b, c], ["a"]) is None and primary_key_ids([c], ["c"]) is None
