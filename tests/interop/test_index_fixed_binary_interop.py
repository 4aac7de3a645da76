"""BTREE and BITMAP on ``uuid`` (an extension over fixed_size_binary(16)) and fixed-size binary
columns, both ways with pylance 14: the index holds the storage values, ``arrow_cast(0x..,
'FixedSizeBinary(16)')`` and ``X'..'`` literals answer from it, plans and statistics print
binary as pylance does (hex, 10 bytes then ``...``)."""
import os

import pyarrow as pa
import pytest

import lancefmt

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader  # noqa: E402

U = [bytes([48 + (i % 10)]) * 4 + i.to_bytes(12, "big") for i in range(40)]
FILTERS = ["uuid = arrow_cast(0x{}, 'FixedSizeBinary(16)')".format(U[7].hex()),
           "uuid = X'{}'".format(U[12].hex()), "uuid > X'{}'".format(U[30].hex()),
           "uuid IS NULL", "uuid IN (X'{}', X'{}')".format(U[3].hex(), U[4].hex()),
           "uuid <= X'{}' AND i > 3".format(U[10].hex())]


def table(kind: str) -> pa.Table:
    vals = [None if i % 9 == 0 else U[i] for i in range(40)]
    arr = pa.array(vals, pa.uuid()) if kind == "uuid" else pa.array(vals, pa.binary(16))
    return pa.table({"uuid": arr, "i": list(range(40))})


def ids(ds, text, **kw):
    return sorted(ds.to_table(filter=text, columns=["i"], **kw)["i"].to_pylist())


@pytest.mark.parametrize("index", ["BTREE", "BITMAP"])
@pytest.mark.parametrize("kind", ["uuid", "fixed"])
@pytest.mark.parametrize("builder", ["pylance", "lancefmt"])
def test_each_library_answers_from_the_others_index(tmp_path, builder, kind, index, storage_version):
    uri = str(tmp_path / "ds")
    lance.write_dataset(table(kind), uri, max_rows_per_file=15, data_storage_version=storage_version)
    (lance if builder == "pylance" else lancefmt).dataset(uri).create_scalar_index("uuid", index)
    theirs, ours = lance.dataset(uri), lancefmt.dataset(uri)
    for text in FILTERS:
        want = ids(theirs, text, use_scalar_index=False)
        assert ids(ours, text) == want and ids(theirs, text) == want, text
    for text in FILTERS[:3]:
        def line(ds):
            return [ln.strip() for ln in ds.scanner(filter=text).explain_plan().splitlines()
                    if "ScalarIndexQuery" in ln]
        assert line(ours) == line(theirs) and line(ours), text
    assert ours.stats.index_stats("uuid_idx") == theirs.stats.index_stats("uuid_idx")


@pytest.mark.parametrize("index", ["BTREE", "BITMAP"])
def test_index_files_hold_fixed_size_binary_as_pylances(tmp_path, index):
    got = {}
    for name, lib in (("pylance", lance), ("lancefmt", lancefmt)):
        uri = str(tmp_path / name)
        lance.write_dataset(table("uuid"), uri)
        lib.dataset(uri).create_scalar_index("uuid", index)
        seg = lance.dataset(uri).describe_indices()[0].segments[0]
        d = f"{uri}/_indices/{seg.uuid}"
        got[name] = {f: LanceFileReader(f"{d}/{f}").read_all().to_table() for f in sorted(os.listdir(d))}
    assert got["lancefmt"].keys() == got["pylance"].keys()
    for f, t in got["pylance"].items():
        mine = got["lancefmt"][f]
        assert mine.schema.field(0).type == pa.binary(16) == t.schema.field(0).type
        assert mine.equals(t), f
