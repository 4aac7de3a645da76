"""Transactions <-> the Transaction protobuf pylance writes (checked on pylance's own files)."""
import glob
import os

import pyarrow as pa
import pytest

from lancefmt._proto import table_pb2
from lancefmt.table.fragment import FragmentMetadata
from lancefmt.table.transaction import (
    Append, Delete, Overwrite, Restore, Transaction, UpdateBases, UpdateConfig, UpdateMap,
)

lance = pytest.importorskip("lance")


def _txn_files(uri):
    return sorted(glob.glob(os.path.join(uri, "_transactions", "*.txn")),
                  key=lambda p: int(os.path.basename(p).split("-")[0]))


def test_pylance_transactions_round_trip_byte_for_byte(tmp_path):
    uri = str(tmp_path / "ds")
    t = pa.table({"a": list(range(20)), "s": [str(i) for i in range(20)]})
    ds = lance.write_dataset(t, uri, max_rows_per_file=8)
    ds = lance.write_dataset(t, uri, mode="append")
    ds.delete("a < 3")
    ds = lance.dataset(uri)
    lance.write_dataset(t, uri, mode="overwrite")
    kinds = []
    for path in _txn_files(uri):
        data = open(path, "rb").read()
        txn = Transaction.from_bytes(data)
        kinds.append(txn.kind)
        assert txn.to_bytes() == data
        assert os.path.basename(path).startswith(f"{txn.read_version}-{txn.uuid}")
    assert kinds == ["overwrite", "append", "delete", "overwrite"]


def test_operations_round_trip_through_protobuf():
    frag = FragmentMetadata.new([table_pb2.DataFile(path="x.lance", fields=[0], column_indices=[0],
                                                    file_major_version=2)], physical_rows=5)
    bases = [table_pb2.BasePath(id=1, name="cold", path="s3://cold/ds", is_dataset_root=True)]
    ops = [
        Append([frag]),
        Delete([frag], [3, 4], "a < 3"),
        Overwrite([], [frag], bases, {"c": "1"}, {"k": b"v"}),
        Restore(7),
        UpdateConfig(UpdateMap({"a": "1", "b": None}), None, UpdateMap({"m": "x"}, replace=True),
                     {0: UpdateMap({"f": "y"})}),
        UpdateBases(bases),
    ]
    for op in ops:
        txn = Transaction(5, op, tag="t", transaction_properties={"p": "q"})
        back = Transaction.from_bytes(txn.to_bytes())
        assert back == txn


def test_fragment_metadata_json_matches_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(pa.table({"a": list(range(10))}), uri, max_rows_per_file=4,
                             enable_stable_row_ids=True)
    ds.delete("a = 1")
    ds = lance.dataset(uri)
    for frag in ds.get_fragments():
        theirs = frag.metadata.to_json()
        ours = FragmentMetadata.from_json(theirs)
        assert ours.to_json() == theirs
        assert ours.id == frag.fragment_id
        assert ours.physical_rows == frag.physical_rows
        # and pylance accepts ours back
        assert lance.fragment.FragmentMetadata.from_json(__import__("json").dumps(ours.to_json())) == frag.metadata


def test_fragment_metadata_pickles_small():
    import pickle

    frag = FragmentMetadata.new([table_pb2.DataFile(path="a" * 56, fields=[0, 1], column_indices=[0, 1],
                                                    file_major_version=2, file_size_bytes=1234)], 1000)
    data = pickle.dumps(frag)
    assert len(data) < 200
    assert pickle.loads(data) == frag


@pytest.mark.parametrize("data", [b"\xff\xff\xff", b"\x0a\x05ab", b"\x08" + b"\xff" * 11])
def test_undecodable_transaction_bytes_are_corrupt(data):
    from lancefmt.errors import CorruptFileError
    from lancefmt.table.transaction import Transaction

    with pytest.raises(CorruptFileError) as info:
        Transaction.from_bytes(data, "x.txn")
    assert info.value.path == "x.txn"
