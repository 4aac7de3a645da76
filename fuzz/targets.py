"""One function per untrusted-input entry point. Each takes the fuzzer's bytes and exercises
the entry point the way lancefmt uses it. A LanceError is the expected answer to bad bytes;
anything else escaping (a builtin exception, a crash, a hang, an allocation past the runner's
memory cap) is a finding.
"""
from __future__ import annotations

import io
import os
import shutil
import struct
import tempfile

from lancefmt.errors import LanceError

MAX_ROWS = 1 << 16  # the row count the row-id/deletion targets claim for their fragment


def _manifest(data: bytes) -> None:
    from lancefmt.table.base_paths import BasePathResolver
    from lancefmt.table.manifest import parse_manifest_file

    mf = parse_manifest_file(data, "fuzz/_versions/1.manifest")
    mf.check_readable()
    frags = mf.fragments
    frags.summary()
    frags.to_arrow()
    for i in range(min(len(frags), 8)):
        frags.fragment(i)
    resolver = BasePathResolver("/fuzz", mf.header.base_paths, mf.uri)
    if frags.num_files:
        resolver.data_file_uris(frags.data_file_paths().to_pylist(),
                                frags.file_base_id.tolist())
    mf.transaction()
    mf.indices
    mf.manifest
    mf.data_storage_version


def _transaction(data: bytes) -> None:
    from lancefmt.table.transaction import Transaction

    txn = Transaction.from_bytes(data, "fuzz.txn")
    txn.to_pb()


def _deletion(kind: str):
    def target(data: bytes) -> None:
        from lancefmt.table.deletion import parse_deletion_file

        dv = parse_deletion_file(data, kind, physical_rows=MAX_ROWS, path=f"fuzz.{kind}")
        dv.live_mask(MAX_ROWS)
        dv.kept_indices(MAX_ROWS)
    return target


def _row_ids(data: bytes) -> None:
    """First 2 bytes: the fragment's row count; the rest: a RowIdSequence or version sequence."""
    from lancefmt.table.rowids import RowIdSequence, decode_row_ids, decode_versions

    if len(data) < 2:
        return
    n = struct.unpack_from("<H", data)[0]
    body = data[2:]
    try:
        ids = decode_row_ids(body, "fuzz rowids", n)
        seq = RowIdSequence.from_bytes(body, "fuzz rowids")
        if len(seq) == n and n:
            seq.select([0, n - 1])
            seq.to_bytes()
        assert len(ids) == n
    except LanceError:
        pass
    decode_versions(body, "fuzz versions", n)


def _data_file(data: bytes) -> None:
    from lancefmt.file.reader import LanceFileReader

    r = LanceFileReader(io.BytesIO(data))
    r.read_all()
    n = r.num_rows
    if n:
        r.take([0, n - 1, n // 2])
        r.read_range(n // 3, n)
        got = sum(b.num_rows for b in r.read_batches(max(1, n // 3)))
        assert got == n, f"read_batches gave {got} of {n} rows"


def _refs(data: bytes) -> None:
    """First byte picks tag / branch / version hint."""
    from lancefmt.table.refs import decode_branch, decode_tag, version_mapping
    from lancefmt.table.version_hint import decode_version_hint

    if not data:
        return
    which, body = data[0] % 3, data[1:]
    if which == 0:
        decode_tag("t", body, "fuzz/t.json").to_dict()
    elif which == 1:
        version_mapping(decode_branch("b", body, "fuzz/b.json"))
    else:
        v = decode_version_hint(body)
        assert v is None or (isinstance(v, int) and v >= 0)


class _DatasetReplacer:
    """A small dataset (written by the seeds step) copied to a temp dir; each input replaces
    one of its files (first byte: which) and the dataset is read every way lancefmt offers."""

    def __init__(self, source: str):
        self.root = tempfile.mkdtemp(prefix="lancefmt-fuzz-ds-")
        self.uri = os.path.join(self.root, "ds")
        shutil.copytree(source, self.uri)
        self.files = sorted(os.path.relpath(os.path.join(d, n), self.uri)
                            for d, _, names in os.walk(self.uri) for n in names)
        self.original = {f: open(os.path.join(self.uri, f), "rb").read() for f in self.files}
        self.dirty = None

    def __call__(self, data: bytes) -> None:
        import lancefmt

        if not data:
            return
        if self.dirty is not None:
            with open(os.path.join(self.uri, self.dirty), "wb") as f:
                f.write(self.original[self.dirty])
        name = self.files[data[0] % len(self.files)]
        with open(os.path.join(self.uri, name), "wb") as f:
            f.write(data[1:])
        self.dirty = name
        ds = lancefmt.dataset(self.uri)
        t = ds.to_table()
        n = ds.count_rows()
        assert n >= 0 and (n == t.num_rows), f"count_rows {n} but the scan gave {t.num_rows}"
        if n:
            ds.take([0, n - 1])
        ds.count_rows("id > 3")
        ds.versions()
        ds.tags.list()


TARGETS = {
    "manifest": _manifest,
    "transaction": _transaction,
    "deletion_arrow": _deletion("arrow"),
    "deletion_bin": _deletion("bin"),
    "rowids": _row_ids,
    "file_v2_0": _data_file,
    "file_v2_1": _data_file,  # the same reader: 2.1/2.2 files go through its 2.1 field readers
    "refs": _refs,
    "dataset": None,          # built from the seeds dir (see make_target)
}


def make_target(name: str, seeds_dir: str | None = None):
    """The callable for target ``name``: bytes -> None; raises only on a finding."""
    fn = _DatasetReplacer(os.path.join(seeds_dir, "dataset_source")) if name == "dataset" \
        else TARGETS[name]

    def guarded(data: bytes) -> None:
        try:
            fn(data)
        except LanceError:
            pass  # the expected answer to bad bytes
    return guarded
