"""One function per untrusted-input entry point. Each takes the fuzzer's bytes and exercises
the entry point the way lancefmt uses it. A LanceError is the expected answer to bad bytes;
anything else escaping (a builtin exception, a crash, a hang) is a finding, and so is an
allocation past the runner's memory cap even when a LanceError follows it.
"""
from __future__ import annotations

import io
import os
import shutil
import struct
import sys
import tempfile
from typing import Callable, NamedTuple

from fuzz import seed_sets
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

    prefix = "lancefmt-fuzz-ds-"

    def __init__(self, source: str):
        self.root = tempfile.mkdtemp(prefix=self.prefix)
        self.uri = os.path.join(self.root, "ds")
        shutil.copytree(source, self.uri)
        self.files = self.replaceable()
        self.original = {f: open(os.path.join(self.uri, f), "rb").read() for f in self.files}
        self.dirty = None

    def replaceable(self) -> list:
        """The files an input may replace, relative to the dataset, in a fixed order."""
        return sorted(os.path.relpath(os.path.join(d, n), self.uri)
                      for d, _, names in os.walk(self.uri) for n in names)

    def __call__(self, data: bytes) -> None:
        if not data:
            return
        if self.dirty is not None:
            with open(os.path.join(self.uri, self.dirty), "wb") as f:
                f.write(self.original[self.dirty])
        name = self.files[data[0] % len(self.files)]
        with open(os.path.join(self.uri, name), "wb") as f:
            f.write(data[1:])
        self.dirty = name
        self.read()

    def read(self) -> None:
        import lancefmt

        ds = lancefmt.dataset(self.uri)
        t = ds.to_table()
        n = ds.count_rows()
        assert n >= 0 and (n == t.num_rows), f"count_rows {n} but the scan gave {t.num_rows}"
        if n:
            ds.take([0, n - 1])


class _MetadataEditor:
    """The oracle for metadata-only changes: each input edits only metadata of the dataset's
    newest manifest (config, table and schema metadata, field metadata that does not steer
    decoding, tag, commit time, writer version); a read that succeeds must then give exactly the
    original rows. Edits are ``op, len, key, len, value`` records (one byte each for op/len)."""

    def __init__(self, source: str):
        import lancefmt

        self.root = tempfile.mkdtemp(prefix="lancefmt-fuzz-meta-")
        self.uri = os.path.join(self.root, "ds")
        shutil.copytree(source, self.uri)
        versions = os.path.join(self.uri, "_versions")
        self.path = os.path.join(versions, min(n for n in os.listdir(versions)
                                               if n.endswith(".manifest")))  # v2 names: newest first
        with open(self.path, "rb") as f:
            self.original = f.read()
        ds = lancefmt.dataset(self.uri)
        self.expected = ds.to_table()
        self.version = ds.version

    def _edited(self, data: bytes) -> bytes:
        from lancefmt._proto import table_pb2
        from lancefmt.table.manifest import parse_manifest_file

        mf = parse_manifest_file(self.original, self.path)
        m = table_pb2.Manifest()
        m.CopyFrom(mf.manifest)
        for op, key, value in _edit_records(data):
            text_key, text = key.decode("utf-8", "replace"), value.decode("utf-8", "replace")
            if op == 0:
                m.config[text_key] = text
            elif op == 1:
                m.schema_metadata[text_key] = value
            elif op == 2 and len(m.fields) and not text_key.startswith(("lance", "packed")):
                m.fields[key[0] % len(m.fields) if key else 0].metadata[text_key] = value
            elif op == 3:
                for meta in (m.config, m.schema_metadata, m.table_metadata):
                    for k in sorted(meta)[:1]:
                        del meta[k]
            elif op == 4:
                m.tag = text
            elif op == 5:
                m.timestamp.seconds = int.from_bytes(value[:8].ljust(8, b"\0"), "little", signed=True)
                m.timestamp.nanos = int.from_bytes(key[:4].ljust(4, b"\0"), "little") % 1_000_000_000
            elif op == 6:
                m.writer_version.library, m.writer_version.version = text_key, text
            else:
                m.table_metadata[text_key] = text
        body = m.SerializeToString()
        start = mf._msg_start - 4  # the manifest's length prefix; the sections before it stay put
        return self.original[:start] + struct.pack("<I", len(body)) + body + self.original[-16:]

    def __call__(self, data: bytes) -> None:
        import lancefmt

        with open(self.path, "wb") as f:
            f.write(self._edited(data))
        ds = lancefmt.dataset(self.uri)
        assert ds.version == self.version, f"version {ds.version}, expected {self.version}"
        got = ds.to_table()
        assert got.equals(self.expected), "a metadata-only edit changed the rows read"
        n = self.expected.num_rows
        assert ds.count_rows() == n
        if n:
            # (compared as values: a take may return a smaller dictionary for the same values)
            assert ds.take([n - 1, 0]).to_pylist() == self.expected.take([n - 1, 0]).to_pylist()
        ds.versions()
        ds.schema


def _edit_records(data: bytes):
    """``(op, key, value)`` records from fuzzer bytes (at most 8; a truncated one ends them)."""
    pos, out = 0, []
    while pos + 2 <= len(data) and len(out) < 8:
        op, klen = data[pos] % 8, data[pos + 1]
        key = data[pos + 2:pos + 2 + klen]
        pos += 2 + klen
        if pos >= len(data):
            break
        vlen = data[pos]
        value = data[pos + 1:pos + 1 + vlen]
        pos += 1 + vlen
        out.append((op, key, value))
    return out


def edit_record(op: int, key: bytes, value: bytes) -> bytes:
    """One record of the ``metadata`` target's input (for seeds and tests)."""
    return bytes([op, len(key)]) + key + bytes([len(value)]) + value


_NS_TYPES = ("namespace", "table")


def decode_namespace_rows(data: bytes) -> list:
    """``(object_id, object_type, location, metadata)`` rows from fuzzer bytes, at most 16: per
    row a flags byte (bit 0: table, else namespace; bit 1: another type, named by a string;
    bit 2: no location; bit 3: no metadata), then strings of one length byte each: the id, the
    location, the metadata (JSON text) and, with bit 1, the type."""
    pos, rows = 0, []

    def text() -> str:
        nonlocal pos
        n = data[pos] if pos < len(data) else 0
        out = data[pos + 1:pos + 1 + n].decode("utf-8", "replace")
        pos += 1 + n
        return out

    while pos < len(data) and len(rows) < 16:
        flags = data[pos]
        pos += 1
        oid, location, meta = text(), text(), text()
        kind = text() if flags & 2 else _NS_TYPES[flags & 1]
        rows.append((oid, kind, None if flags & 4 else location, None if flags & 8 else meta))
    return rows


def encode_namespace_rows(rows) -> bytes:
    """The inverse of :func:`decode_namespace_rows` (strings cut to 255 bytes), for seeds."""
    out = bytearray()
    for oid, kind, location, meta in rows:
        flags = ((0 if kind in _NS_TYPES else 2) | (kind == "table")
                 | (4 if location is None else 0) | (8 if meta is None else 0))
        out.append(flags)
        for value in (oid, location or "", meta or "") + ((kind,) if flags & 2 else ()):
            b = value.encode("utf-8")[:255]
            out += bytes([len(b)]) + b
    return bytes(out)


class _NamespaceManifest:
    """Each input is the ``__manifest`` table of a fresh namespace root (written as another
    writer could have left it: any ids, types, locations, metadata text); the namespace is then
    asked everything a reader asks (nothing that deletes). LanceErrors are expected per call."""

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="lancefmt-fuzz-ns-")

    def __call__(self, data: bytes) -> None:
        import pyarrow as pa

        import lancefmt
        from lancefmt.namespace import DirectoryNamespace
        from lancefmt.namespace.manifest import SCHEMA

        rows = decode_namespace_rows(data)
        root = os.path.join(self.base, "root")
        shutil.rmtree(root, ignore_errors=True)
        if rows:
            cols = list(zip(*rows)) + [[None] * len(rows)]
            table = pa.table(dict(zip(SCHEMA.names, cols)), schema=SCHEMA)
            lancefmt.write_dataset(table, os.path.join(root, "__manifest"))
        ns = DirectoryNamespace(root=root)
        calls = [lambda: ns.list_namespaces([]), lambda: ns.list_tables([]),
                 ns.list_all_tables, lambda: ns.describe_namespace([])]
        for oid in sorted({r[0] for r in rows})[:8]:
            parts = oid.split("$")
            calls += [lambda p=parts, op=op: op(p) for op in (
                ns.list_namespaces, ns.describe_namespace, ns.namespace_exists, ns.list_tables,
                ns.describe_table, ns.table_exists, ns.open_table)]
        for call in calls:
            try:
                call()
            except LanceError as exc:
                _raise_cap_hit(exc)


class _IndexReplacer(_DatasetReplacer):
    """An indexed dataset (written by the seeds step): each input replaces one of its index
    files (first byte: which), then reads go through the index: every filter of the type,
    counted and read, plus its statistics (a fresh Dataset each time: a session of its own, so
    nothing of the replaced file is served from a cache)."""

    prefix = "lancefmt-fuzz-index-"

    def __init__(self, source: str, kind: str):
        self.filters = [f.format(c=c) for c in ("a", "b") for f in seed_sets.INDEX_KINDS[kind][1]]
        super().__init__(source)

    def replaceable(self) -> list:
        return seed_sets.index_files(self.uri)

    def read(self) -> None:
        import lancefmt

        ds = lancefmt.dataset(self.uri)
        for text in self.filters:
            try:
                ds.count_rows(text)
                ds.to_table(filter=text)
            except LanceError:
                continue
        for name in ("a_idx", "b_idx"):
            ds.stats.index_stats(name)


def _index_target(kind: str) -> "Target":
    return Target(lambda d: _IndexReplacer(os.path.join(d, f"index_{kind}_source"), kind),
                  seed_sets.index_dataset(kind))


class _SearchReplacer(_IndexReplacer):
    """A vector or full-text index's file replaced, then searches through each index of the
    dataset: plain, and with a prefilter whose rows the answer must keep to (at most ``k``)."""

    K, PREFILTER, BOUND = 5, "id < 150", 150

    def __init__(self, source: str, columns: list, queries: Callable[[str], list]):
        self.columns, self.queries = columns, queries  # queries(column): (options, row limit)s
        _DatasetReplacer.__init__(self, source)

    def read(self) -> None:
        import lancefmt

        ds = lancefmt.dataset(self.uri)
        for c in self.columns:
            for opts, limit in self.queries(c):
                for pre in (False, True):
                    extra = {"filter": self.PREFILTER, "prefilter": True} if pre else {}
                    try:
                        ids = ds.to_table(columns=["id"], **opts, **extra).column("id").to_pylist()
                    except LanceError:
                        continue
                    assert limit is None or len(ids) <= limit, f"{len(ids)} rows for k={limit}"
                    assert not pre or all(i < self.BOUND for i in ids), "prefilter not kept"
            ds.stats.index_stats(f"{c}_idx")


def _vector_queries(column: str) -> list:
    q, k = seed_sets.vector_query(), _SearchReplacer.K
    return [({"nearest": {"column": column, "q": q, "k": k}}, k),
            ({"nearest": {"column": column, "q": q, "k": k, "nprobes": 2, "refine_factor": 2}},
             k)]


def _inverted_queries(column: str) -> list:
    from lancefmt.query import MatchQuery, PhraseQuery

    k = _SearchReplacer.K
    out = [({"full_text_query": MatchQuery("lance vector", column)}, None),
           ({"full_text_query": MatchQuery("index", column), "limit": k}, k)]
    if column in ("a", "b"):  # the indices with positions
        out.append(({"full_text_query": PhraseQuery("lance format", column)}, None))
    return out


def _vector_target(kind: str) -> "Target":
    return Target(lambda d: _SearchReplacer(os.path.join(d, f"index_{kind}_source"),
                                            seed_sets.vector_columns(kind), _vector_queries),
                  seed_sets.vector_dataset(kind))


class Target(NamedTuple):
    """A fuzz target: ``build(seeds_dir)`` gives the function fuzzed (bytes -> None; raising
    only on a finding), ``seed(out_dir, scratch_dir)`` writes its seed files (None: the shared
    datasets of :mod:`fuzz.seeds` seed it)."""

    build: Callable[[str], Callable[[bytes], None]]
    seed: Callable[[str, str], None] | None = None


def _fn(fn) -> Callable[[str], Callable[[bytes], None]]:
    return lambda seeds_dir: fn


def _replacer(source: str) -> Callable[[str], Callable[[bytes], None]]:
    return lambda seeds_dir: _DatasetReplacer(os.path.join(seeds_dir, source))


# One line per target. ``make fuzz`` and the suite's smoke pass run every one of them.
TARGETS = {
    "manifest": Target(_fn(_manifest)),
    "transaction": Target(_fn(_transaction)),
    "deletion_arrow": Target(_fn(_deletion("arrow"))),
    "deletion_bin": Target(_fn(_deletion("bin"))),
    "rowids": Target(_fn(_row_ids)),
    "file_v2_0": Target(_fn(_data_file)),
    "file_v2_1": Target(_fn(_data_file)),  # the same reader: 2.1/2.2 go through its 2.1 readers
    "refs": Target(_fn(_refs)),
    "dataset": Target(_replacer("dataset_source")),  # the seeds step writes the dataset
    # metadata-only edits of the dataset's newest manifest
    "metadata": Target(lambda d: _MetadataEditor(os.path.join(d, "dataset_source"))),
    "file_legacy": Target(_fn(_data_file), seed_sets.legacy_files),  # v0.1 files
    "manifest_old": Target(_fn(_manifest), seed_sets.old_manifests),  # 0.10 .. 9.0 releases
    "dataset_legacy": Target(_replacer("dataset_legacy_source"), seed_sets.legacy_dataset),
    "namespace_manifest": Target(lambda d: _NamespaceManifest(), seed_sets.namespace_rows),
    # index files: one target per scalar type (a replaced file, then reads through the index)
    **{f"index_{kind}": _index_target(kind) for kind in seed_sets.INDEX_KINDS},
    # vector indices: one target per type (IVF_PQ with pylance's legacy single file too)
    **{f"index_{kind}": _vector_target(kind) for kind in seed_sets.VECTOR_KINDS},
    "index_inverted": Target(lambda d: _SearchReplacer(
        os.path.join(d, "index_inverted_source"), list("abcd"), _inverted_queries),
        seed_sets.inverted_dataset),
}


def make_target(name: str, seeds_dir: str | None = None):
    """The callable for target ``name``: bytes -> None; raises only on a finding."""
    fn = TARGETS[name].build(seeds_dir)

    def guarded(data: bytes) -> None:
        try:
            fn(data)
        except LanceError as exc:
            _raise_cap_hit(exc)  # the expected answer to bad bytes, unless it hides a cap hit
    return guarded


def _raise_cap_hit(exc: LanceError) -> None:
    hit = memory_cap_hit(exc)
    if hit is not None:
        raise AllocationCapHit(f"{type(hit).__name__} under {exc!r}") from exc


class AllocationCapHit(AssertionError):
    """A finding: the input made lancefmt ask for more memory than the runner's cap allows,
    even if a LanceError was raised afterwards (a cap hit on a Spark executor is an outage)."""


def memory_cap_hit(exc: BaseException | None) -> BaseException | None:
    """The MemoryError in ``exc``'s cause/context chain (``raise ... from None`` keeps the
    context), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, MemoryError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


if __name__ == "__main__":  # the target names, for ``make fuzz``
    print(" ".join(TARGETS))
    sys.exit(0)
