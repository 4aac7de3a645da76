"""Lance 2.1 / 2.2 files written by pylance 14.0.2, read by lancefmt value by value: one case
per structural layout (mini-block, dictionary, large chunks, full-zip, constant / all-null,
blob, packed struct) and rep/def shape, each asserting through pylance's own metadata that the
layout it covers is really in the file, and reading it whole, by range, in batches and by take.
"""
import os

import numpy as np
import pyarrow as pa
import pytest

from lancefmt.file.reader import LanceFileReader

lance_file = pytest.importorskip("lance.file")

VERSIONS = ("2.1", "2.2")
N = 3000


def _field(name, typ, nullable=True, **meta):
    md = {f"lance-encoding:{k.replace('_', '-')}": str(v) for k, v in meta.items()}
    return pa.field(name, typ, nullable=nullable, metadata=md or None)


def _write(tmp_path, table, version) -> str:
    path = os.path.join(str(tmp_path), f"t_{version}.lance")
    with lance_file.LanceFileWriter(path, table.schema, version=version) as w:
        w.write_batch(table)
    return path


def _encodings(path) -> str:
    meta = lance_file.LanceFileReader(path).metadata()
    return "\n".join(str(p.encoding) for c in meta.columns for p in c.pages)


def _rng():
    return np.random.default_rng(7)


def _strings(n, every_null=0):
    return [None if every_null and i % every_null == 0 else f"s{i}-{'x' * (i % 9)}"
            for i in range(n)]


def case_miniblock_scalars():
    rng = _rng()
    t = pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "i32": pa.array(rng.integers(0, 1000, N).astype(np.int32)),
        "neg": pa.array(rng.integers(-50, 50, N).astype(np.int16)),
        "f": pa.array(rng.normal(size=N)),
        "nf": pa.array([None if i % 3 == 0 else float(i) for i in range(N)]),
        "b": pa.array([None if i % 5 == 0 else bool(i % 2) for i in range(N)]),
        "s": pa.array(_strings(N, every_null=7)),
        "ls": pa.array(_strings(N), pa.large_string()),
        "ts": pa.array(np.arange(N) * 1000, pa.timestamp("us", tz="UTC")),
        "dec": pa.array([i * 3 for i in range(N)], pa.decimal128(12, 2)),
        "fsb": pa.array([bytes([i % 256]) * 4 for i in range(N)], pa.binary(4)),
    })
    return t, ["MiniBlockLayout"]


def case_miniblock_nested():
    lists = [None if i % 11 == 0 else list(range(i % 5)) for i in range(N)]
    nested = [None if i % 7 == 0 else ([] if i % 7 == 1 else [[i, None], [], None])
              for i in range(N)]
    st = [None if i % 9 == 0 else {"a": None if i % 4 == 0 else i,
                                   "b": {"c": None if i % 6 == 0 else f"c{i}"} if i % 5 else None}
          for i in range(N)]
    ls = [None if i % 13 == 0 else [] if i % 13 == 1 else [{"p": i % 100, "q": None}, None]
          for i in range(N)]
    t = pa.table({
        "l": pa.array(lists, pa.list_(pa.int32())),
        "ll": pa.array(nested, pa.list_(pa.list_(pa.int64()))),
        "st": pa.array(st, pa.struct([("a", pa.int64()),
                                      ("b", pa.struct([("c", pa.string())]))])),
        "lst": pa.array(ls, pa.list_(pa.struct([("p", pa.int32()), ("q", pa.string())]))),
        "lls": pa.array([[f"x{i}"] * (i % 3) for i in range(N)], pa.large_list(pa.string())),
        "fsl": pa.array([None if i % 4 == 0 else [float(i), None if i % 3 else 1.0]
                         for i in range(N)], pa.list_(pa.float32(), 2)),
    })
    return t, ["RepdefNullAndEmptyList", "FixedSizeList"]


def case_dictionary():
    t = pa.table({"lvl": pa.array([["INFO", "DEBUG", "WARN", None][i % 4] for i in range(N)]),
                  "cat": pa.array([["a", "bb", "ccc"][i % 3] for i in range(N)]).dictionary_encode()})
    return t, ["dictionary: Some"]


def case_large_chunks():
    f = _field("s", pa.string(), minichunk_size=65536)
    t = pa.table({"s": pa.array([f"value-{i:08d}-" * 3 for i in range(N * 4)])},
                 schema=pa.schema([f]))
    return t, ["MiniBlockLayout"]


def case_fullzip():
    rng = _rng()
    long = [None if i % 5 == 0 else ("L" * 300 + str(i) if i % 3 else "") for i in range(N)]
    lol = [None if i % 6 == 0 else [] if i % 6 == 1 else ["y" * 280 + str(i), None]
           for i in range(N)]
    wide = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.random(N * 80).astype(np.float32)), 80)
    forced = _field("forced", pa.int64(), structural_encoding="fullzip")
    t = pa.table({"long": pa.array(long), "lol": pa.array(lol, pa.list_(pa.string())),
                  "wide": wide,
                  "forced": pa.array([None if i % 8 == 0 else i * 7 for i in range(N)])},
                 schema=pa.schema([pa.field("long", pa.string()),
                                   pa.field("lol", pa.list_(pa.string())),
                                   pa.field("wide", wide.type), forced]))
    return t, ["FullZipLayout", "BitsPerOffset", "BitsPerValue", "bits_rep: 1"]


def case_constant():
    t = pa.table({
        "nul": pa.nulls(N, pa.int32()),
        "nuls": pa.nulls(N, pa.string()),
        "seven": pa.array([7] * N, pa.int64()),
        "same": pa.array(["same"] * N),
        "nl": pa.array([None] * N, pa.list_(pa.int32())),
        "el": pa.array([[] if i % 2 else None for i in range(N)], pa.list_(pa.int32())),
        "cst": pa.array([{"k": 1, "v": float(i)} for i in range(N)],
                        pa.struct([("k", pa.int64()), ("v", pa.float64())])),
    })
    return t, ["ConstantLayout"]


def case_blob():
    f = _field("blob", pa.large_binary(), blob="true")
    vals = [None if i % 10 == 3 else (b"" if i % 10 == 4 else bytes([i % 251]) * (i % 700))
            for i in range(400)]
    t = pa.table({"id": pa.array(np.arange(400, dtype=np.int64)), "blob": pa.array(vals, pa.large_binary())},
                 schema=pa.schema([pa.field("id", pa.int64()), f]))
    return t, ["BlobLayout"]


def case_packed():
    st = pa.struct([("x", pa.int32()), ("y", pa.float64()), ("z", pa.int16())])
    f = pa.field("p", st, metadata={"lance-encoding:packed": "true"})
    vals = [None if i % 6 == 0 else {"x": i, "y": i / 2, "z": i % 100} for i in range(N)]
    t = pa.table({"p": pa.array(vals, st)}, schema=pa.schema([f]))
    return t, ["PackedStruct"]


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_pylance_file_reads_identically(tmp_path, case, version):
    table, markers = CASES[case]()
    path = _write(tmp_path, table, version)
    described = _encodings(path)
    for marker in markers:
        assert marker in described, f"{case} {version}: pylance did not write {marker}"
    expected = lance_file.LanceFileReader(path).read_all().to_table()
    r = LanceFileReader(path)
    assert r.version == tuple(int(x) for x in version.split("."))
    got = r.read_all()
    assert got.schema.names == expected.schema.names
    for name in expected.column_names:
        assert got.column(name).to_pylist() == expected.column(name).to_pylist(), name
    n = table.num_rows
    rng = np.random.default_rng(11)
    idx = rng.choice(n, min(n, 200), replace=False)
    taken = r.take(idx)
    want = expected.take(pa.array(idx))
    for name in expected.column_names:
        assert taken.column(name).to_pylist() == want.column(name).to_pylist(), name
    lo, hi = n // 7, n - n // 5
    assert r.read_range(lo, hi).to_pylist() == expected.slice(lo, hi - lo).to_pylist()
    batches = list(r.read_batches(1000, columns=[expected.column_names[-1]]))
    assert pa.Table.from_batches(batches).column(0).to_pylist() == \
        expected.column(expected.column_names[-1]).to_pylist()


def test_legacy_v1_dataset_reads(tmp_path):
    """Legacy files go to the legacy reader (tests/interop/test_legacy_interop.py)."""
    import lance

    import lancefmt

    uri = str(tmp_path / "legacy")
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), uri, data_storage_version="legacy")
    assert lancefmt.dataset(uri).to_table().equals(lance.dataset(uri).to_table())


def test_maps_read_identically_2_2(tmp_path):
    """Maps (2.2 only: pylance refuses them in 2.1) -- list<entries struct> levels, viewed as
    Arrow maps; top level and inside a struct."""
    m = pa.array([None if i % 7 == 0 else [("a", i), ("b", None)] * (i % 3) for i in range(N)],
                 pa.map_(pa.string(), pa.int32()))
    sm = pa.array([{"m": [("k", i)]} if i % 4 else None for i in range(N)],
                  pa.struct([("m", pa.map_(pa.string(), pa.int64()))]))
    t = pa.table({"m": m, "sm": sm})
    path = _write(tmp_path, t, "2.2")
    assert "RepdefNullAndEmptyList" in _encodings(path)
    expected = lance_file.LanceFileReader(path).read_all().to_table()
    r = LanceFileReader(path)
    assert r.schema.field("m").type == m.type
    got = r.read_all()
    idx = np.random.default_rng(2).choice(N, 60)
    for name in ("m", "sm"):
        assert got.column(name).to_pylist() == expected.column(name).to_pylist()
        assert r.take(idx).column(name).to_pylist() == \
            expected.column(name).take(pa.array(idx)).to_pylist()


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_structs_both_ways(tmp_path, version):
    """A top-level struct<> is a column of buffer-less constant pages: pylance's files read as
    valid empty structs, lancefmt writes the column pylance expects (it read none before);
    nulls or a nested empty struct are refused, as Lance refuses them."""
    from lancefmt.errors import LanceError
    from lancefmt.file import LanceFileReader as ApiReader
    from lancefmt.file import LanceFileWriter

    schema = pa.schema([pa.field("id", pa.int32()), pa.field("e", pa.struct([])),
                        pa.field("s", pa.string())])
    table = pa.table({"id": range(N), "e": [{}] * N, "s": [f"s{i}" for i in range(N)]}, schema=schema)
    theirs = _write(tmp_path, table, version)
    ours = os.path.join(str(tmp_path), f"ours_{version}.lance")
    with LanceFileWriter(ours, version=version) as w:
        w.write_batch(table.slice(0, 1000))
        w.write_batch(table.slice(1000))
    for path in (theirs, ours):
        got = ApiReader(path)
        assert got.read_all().to_table().equals(table)
        assert got.take_rows([5, 7, 2999]).to_table().equals(table.take([5, 7, 2999]))
        assert len(lance_file.LanceFileReader(path).metadata().columns) == 3
    # pylance reads its own struct<> columns right only within one batch (1024 rows) and as
    # the last column (a column after one reads as nulls): lancefmt's file of that shape
    small = os.path.join(str(tmp_path), f"small_{version}.lance")
    head = table.select(["id", "e"]).slice(0, 3)
    with LanceFileWriter(small, version=version) as w:
        w.write_batch(head)
    assert lance_file.LanceFileReader(small).read_all().to_table().equals(head)
    for bad in (pa.table({"e": pa.array([{}, None], pa.struct([]))}),
                pa.table({"st": pa.array([{"e": {}}], pa.struct([("e", pa.struct([]))]))})):
        with pytest.raises(LanceError):
            with LanceFileWriter(os.path.join(str(tmp_path), "bad.lance"), version=version) as w:
                w.write_batch(bad)
