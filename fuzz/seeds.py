"""Seed corpora for every target, made by pylance (the oracle writer) and by lancefmt.

``python -m fuzz.seeds DIR`` writes ``DIR/<target>/<seed>`` files, and ``DIR/dataset_source``
(the dataset the ``dataset`` target replaces files of). Deterministic content, small files.
Targets with a seeding function of their own (:mod:`fuzz.seed_sets`) are seeded by it.
"""
from __future__ import annotations

import os
import shutil
import struct
import sys
import tempfile

import numpy as np
import pyarrow as pa


def _table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids),
        "f": pa.array((ids * 0.5).astype(np.float32)),
        "s": pa.array([None if i % 7 == 0 else f"s{i}-é" for i in ids.tolist()]),
        "b": pa.array([bytes([i % 256]) * (i % 5) for i in ids.tolist()], pa.binary()),
        "l": pa.array([[i, i + 1] if i % 3 else None for i in ids.tolist()], pa.list_(pa.int32())),
        "st": pa.array([{"x": i, "y": str(i)} for i in ids.tolist()]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 4).astype(np.float32)), 4),
        "d": pa.array(["low", "card", None][i % 3] for i in ids.tolist()).dictionary_encode(),
        "z": pa.array([f"zz{i % 10}" for i in ids.tolist()]),
    })


def _zstd_schema(t: pa.Table) -> pa.Table:
    fields = [f.with_metadata({"lance-encoding:compression": "zstd"}) if f.name == "z" else f
              for f in t.schema]
    return t.cast(pa.schema(fields))


def _put(out: str, target: str, name: str, data: bytes) -> None:
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def _files_under(root: str, sub: str, suffix: str) -> list[str]:
    d = os.path.join(root, sub)
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(suffix))


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _datasets(tmp: str) -> dict:
    """A few datasets with every kind of file: pylance- and lancefmt-written."""
    import lance

    import lancefmt

    out = {}
    t = _zstd_schema(_table(40))
    # pylance: deletions (arrow and bitmap), stable row ids, a tag, a branch
    p = os.path.join(tmp, "pylance")
    ds = lance.write_dataset(t, p, max_rows_per_file=16, enable_stable_row_ids=True)
    ds = lance.write_dataset(_zstd_schema(_table(20, 100)), p, mode="append")
    ds.delete("id = 3 or id = 30")
    ds = lance.dataset(p)
    ds.delete("id >= 100 and id < 119")  # many rows: may become a bitmap
    ds = lance.dataset(p)
    ds.tags.create("seed", 1)
    try:
        ds.create_branch("dev")
    except Exception:  # noqa: BLE001 - branches are optional for seeds
        pass
    out["pylance"] = p
    # lancefmt: plain + deletions + update
    p = os.path.join(tmp, "lancefmt")
    ds = lancefmt.write_dataset(_table(30), p, max_rows_per_file=10)
    ds = lancefmt.write_dataset(_table(10, 50), p, mode="append")
    ds.delete("id = 4 or id = 55")
    ds.update({"s": "'upd'"}, where="id = 7")
    lancefmt.dataset(p).tags.create("seed", 1)
    out["lancefmt"] = p
    return out


def make_seeds(out: str) -> None:
    from lance.file import LanceFileWriter as PyLanceWriter

    from lancefmt._proto import table_pb2
    from lancefmt.file.writer import LanceFileWriter
    from lancefmt.table.deletion import DeletionVector, deletion_file_bytes
    from lancefmt.table.manifest import parse_manifest_file
    from lancefmt.table.rowids import encode_row_ids, encode_versions

    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="lancefmt-seeds-")
    try:
        sets = _datasets(tmp)
        for who, root in sets.items():
            roots = [root] + [os.path.join(root, "tree", b) for b in ("dev",)
                              if os.path.isdir(os.path.join(root, "tree", b))]
            for r in roots:
                for i, m in enumerate(_files_under(r, "_versions", ".manifest")):
                    data = _read(m)
                    _put(out, "manifest", f"{who}-{os.path.basename(r)}-{i}", data)
                    for j, frag in enumerate(parse_manifest_file(data).manifest.fragments):
                        if frag.WhichOneof("row_id_sequence") == "inline_row_ids":
                            n = struct.pack("<H", frag.physical_rows & 0xFFFF)
                            _put(out, "rowids", f"{who}-{i}-{j}", n + frag.inline_row_ids)
                        if frag.HasField("inline_created_at_versions"):
                            n = struct.pack("<H", frag.physical_rows & 0xFFFF)
                            _put(out, "rowids", f"{who}-{i}-{j}-v",
                                 n + frag.inline_created_at_versions)
            for i, t in enumerate(_files_under(root, "_transactions", ".txn")):
                _put(out, "transaction", f"{who}-{i}", _read(t))
            for i, d in enumerate(_files_under(root, "_deletions", ".arrow")):
                _put(out, "deletion_arrow", f"{who}-{i}", _read(d))
            for i, d in enumerate(_files_under(root, "_deletions", ".bin")):
                _put(out, "deletion_bin", f"{who}-{i}", _read(d))
            for i, f in enumerate(_files_under(root, "data", ".lance")[:3]):
                _put(out, "file_v2_0", f"{who}-ds-{i}", _read(f))
            for i, f in enumerate(_files_under(root, os.path.join("_refs", "tags"), ".json")):
                _put(out, "refs", f"{who}-tag-{i}", b"\x00" + _read(f))
            for i, f in enumerate(_files_under(root, os.path.join("_refs", "branches"), ".json")):
                _put(out, "refs", f"{who}-branch-{i}", b"\x01" + _read(f))
            hint = os.path.join(root, "_versions", "latest_version_hint.json")
            if os.path.exists(hint):
                _put(out, "refs", f"{who}-hint", b"\x02" + _read(hint))
        # deletion files of both kinds from lancefmt's writer, compressed and not
        rng = np.random.default_rng(3)
        for kind in ("arrow", "bin"):
            for k, n in enumerate((1, 40, 900)):
                dv = DeletionVector.from_offsets(np.sort(rng.choice(60000, n, replace=False)))
                for comp in (("zstd", None) if kind == "arrow" else ("zstd",)):
                    _put(out, f"deletion_{kind}", f"lancefmt-{k}-{comp}",
                         deletion_file_bytes(dv, kind, compression=comp))
        # row-id and version sequences of each segment shape
        for k, ids in enumerate([np.arange(100), np.arange(0, 300, 3), np.array([5, 1, 9, 2]),
                                 np.delete(np.arange(200), [3, 50, 51]),
                                 np.arange(1 << 40, (1 << 40) + 10)]):
            ids = ids.astype(np.uint64)
            n = struct.pack("<H", len(ids))
            _put(out, "rowids", f"lancefmt-{k}", n + encode_row_ids(ids))
            _put(out, "rowids", f"lancefmt-{k}-v",
                 n + encode_versions(np.full(len(ids), 3, dtype=np.uint64)))
        # data files straight from the file writers, several versions
        t = _zstd_schema(_table(50))
        for version, target in (("2.0", "file_v2_0"), ("2.1", "file_v2_1"), ("2.2", "file_v2_1")):
            p = os.path.join(tmp, f"pylance-{version}.lance")
            try:
                with PyLanceWriter(p, t.schema, version=version, max_page_bytes=512) as w:
                    w.write_batch(t)
            except Exception:  # noqa: BLE001 - a version this pylance cannot write
                continue
            _put(out, target, f"pylance-{version}", _read(p))
        p = os.path.join(tmp, "lancefmt-2.0.lance")
        with LanceFileWriter(p, t.schema, max_page_bytes=512) as w:
            w.write_batch(t)
        _put(out, "file_v2_0", "lancefmt-2.0", _read(p))
        # the dataset target: the pylance dataset, each file as a seed (first byte: which)
        src = os.path.join(out, "dataset_source")
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(sets["pylance"], src, ignore=shutil.ignore_patterns("tree", "_refs"))
        files = sorted(os.path.relpath(os.path.join(d, n), src)
                       for d, _, names in os.walk(src) for n in names)
        for i, f in enumerate(files):
            _put(out, "dataset", f"file-{i}", bytes([i]) + _read(os.path.join(src, f)))
        _put(out, "transaction", "empty", table_pb2.DataFragment().SerializeToString())
        _metadata_seeds(out)
        _own_seeds(out, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _own_seeds(out: str, tmp: str) -> None:
    """The seeds of every target that brings its own seeding function (``Target.seed``)."""
    from fuzz.targets import TARGETS

    for name, target in TARGETS.items():
        if target.seed is not None:
            scratch = tempfile.mkdtemp(prefix=f"{name}-", dir=tmp)
            target.seed(out, lambda seed, data, name=name: _put(out, name, seed, data), scratch)


def _metadata_seeds(out: str) -> None:
    """Inputs of the ``metadata`` target: one per kind of edit, and one with several."""
    from fuzz.targets import edit_record

    records = [edit_record(0, b"owner", b"team-a"),
               edit_record(1, b"note", "caf\u00e9".encode()),
               edit_record(2, b"\x01doc", b"a column"),
               edit_record(3, b"", b""),
               edit_record(4, b"", b"release-1"),
               edit_record(5, b"\x00\x00\x00\x01", (1_700_000_000).to_bytes(8, "little")),
               edit_record(6, b"lance", b"99.0.0"),
               edit_record(7, b"k", b"v")]
    for i, r in enumerate(records):
        _put(out, "metadata", f"lancefmt-edit-{i}", r)
    _put(out, "metadata", "lancefmt-edits", b"".join(records))


if __name__ == "__main__":
    make_seeds(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus"))
