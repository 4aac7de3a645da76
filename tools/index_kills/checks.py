"""What must hold after a killed or raced writer, checked with both libraries.

* pylance validates the dataset, and both libraries open the same version;
* the rows are the ones committed (a full read by each library, against the ids expected);
* every index both libraries list is the manifest's, its files are all there with the sizes
  the manifest records, and it was added by a committed transaction;
* each index's filters (a full-text index: its queries) answer, in both libraries, what pyarrow
  computes over the full table;
* after a cleanup, the dataset holds exactly what its last version references (no dead index
  directory, data file, temporary...), and nothing it references is gone;
* on S3, a multipart upload a killed writer began and never completed is counted, and is never
  for an object the dataset references, nor for a manifest, transaction or deletion file;
  lancefmt's cleanup aborts them (pylance's does not list them).
"""
from __future__ import annotations

import os
import uuid as uuidlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .data import FTS, INDICES, fts_probes, probes


class CheckFailed(AssertionError):
    """An invariant of the module docstring does not hold (the message says which)."""


def expect(ok, message: str) -> None:
    if not ok:
        raise CheckFailed(message)


@dataclass
class Target:
    """A dataset location with the storage options each library takes."""

    uri: str
    lf_options: dict | None = None
    pl_options: dict | None = None
    s3: dict | None = None  # boto3 client settings when on S3

    @property
    def local(self) -> bool:
        return self.s3 is None

    def lancefmt(self, version=None):
        import lancefmt

        return lancefmt.dataset(self.uri, version=version, storage_options=self.lf_options)

    def pylance(self):
        import lance

        return lance.dataset(self.uri, storage_options=self.pl_options)


def listing(t: Target) -> tuple[dict, set]:
    """(relative path -> size of every object below the dataset, empty local directories)."""
    files, empty = {}, set()
    if t.local:
        for d, dirs, names in os.walk(t.uri):
            rel = os.path.relpath(d, t.uri)
            for n in names:
                p = n if rel == "." else f"{rel}/{n}"
                try:
                    files[p] = os.path.getsize(os.path.join(d, n))
                except FileNotFoundError:
                    continue
            if not dirs and not names and rel != ".":
                empty.add(rel)
        return files, empty
    import boto3

    bucket, _, prefix = t.uri[len("s3://"):].partition("/")
    client = boto3.client("s3", **t.s3)
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            files[o["Key"][len(prefix) + 1:]] = int(o["Size"])
    return files, empty


def pending_uploads(t: Target) -> list[str]:
    """Paths (relative to the dataset) of multipart uploads begun below it and never completed
    (S3 only; a listing of up to 1,000, more than a campaign's world ever has)."""
    if t.local:
        return []
    import boto3

    bucket, _, prefix = t.uri[len("s3://"):].partition("/")
    out = boto3.client("s3", **t.s3).list_multipart_uploads(Bucket=bucket, Prefix=prefix + "/")
    return [u["Key"][len(prefix) + 1:] for u in out.get("Uploads", [])]


def _uuid(pb) -> str:
    return str(uuidlib.UUID(bytes=bytes(pb.uuid.uuid)))


@dataclass
class State:
    """What one check saw: the version, its index segments (uuid -> name) and live ids."""

    version: int
    segments: dict
    ids: np.ndarray = field(repr=False)


def referenced(t: Target) -> set:
    """Relative paths the latest version needs: its manifest, transaction, data, deletion and
    index files (an index directory's files from the manifest's list, else from listing)."""
    from lancefmt.table.versions import load_manifest

    pl = t.pylance()
    mf = load_manifest(t.uri, None, storage_options=t.lf_options)
    out = {mf.uri[len(t.uri) + 1:]}
    if mf.header.transaction_file:
        out.add(f"_transactions/{mf.header.transaction_file}")
    for frag in pl.get_fragments():
        meta = frag.metadata
        out |= {f"data/{f.path}" for f in meta.files}
        if meta.deletion_file is not None:
            out.add(meta.deletion_file.path(meta.id))
    files, _ = listing(t)
    for pb in mf.indices:
        d = f"_indices/{_uuid(pb)}/"
        names = [f.path for f in pb.files] or [p[len(d):] for p in files if p.startswith(d)]
        out |= {d + n for n in names}
    return out


def check_dataset(t: Target, expected_ids=None, rng=None, *, probes_per_index: int = 1) -> State:
    """The invariants of the module docstring for the latest version (cleanup aside)."""
    from lancefmt.table.versions import load_manifest

    rng = rng or np.random.default_rng(0)
    pl = t.pylance()
    try:
        pl.validate()
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        raise CheckFailed(f"pylance does not validate version {pl.version}: {e}") from e
    lf = t.lancefmt()
    expect(lf.version == pl.version, f"lancefmt opens version {lf.version}, pylance {pl.version}")
    full_pl = pl.to_table().sort_by("id")
    full_lf = lf.to_table().sort_by("id")
    expect(full_pl.equals(full_lf), "a full read differs between pylance and lancefmt")
    ids = full_pl["id"].to_numpy()
    if expected_ids is not None:
        want = np.sort(np.asarray(expected_ids, np.int64))
        missing = np.setdiff1d(want, ids)
        extra = np.setdiff1d(ids, want)
        expect(not missing.size and not extra.size,
               f"rows differ from what was committed: {missing.size} missing (e.g. "
               f"{missing[:5].tolist()}), {extra.size} unexpected (e.g. {extra[:5].tolist()})")
    expect(len(np.unique(ids)) == len(ids), "an id is there twice")

    mf = load_manifest(t.uri, None, storage_options=t.lf_options)
    segments = {_uuid(pb): pb.name for pb in mf.indices}
    ours = {(d.name, s.uuid) for d in lf.describe_indices() for s in d.segments}
    theirs = {(d.name, s.uuid) for d in pl.describe_indices() for s in d.segments}
    manifest = {(n, u) for u, n in segments.items()}
    expect(ours == manifest, f"lancefmt lists {sorted(ours ^ manifest)} unlike the manifest")
    expect(theirs == manifest, f"pylance lists {sorted(theirs ^ manifest)} unlike the manifest")
    files, _ = listing(t)
    for pb in mf.indices:
        d = f"_indices/{_uuid(pb)}/"
        for f in pb.files:
            expect(files.get(d + f.path) == f.size_bytes,
                   f"index {pb.name} segment {d}: {f.path} is {files.get(d + f.path)} bytes, "
                   f"the manifest says {f.size_bytes}")

    names = sorted({n for n in segments.values() if n in INDICES})
    top = int(ids.max()) + 1 if ids.size else 1
    for name in names:
        for _ in range(probes_per_index):
            for p in probes(name, rng, top):
                want = np.sort(ids_where(full_pl, p.mask(full_pl)))
                for lib, ds in (("pylance", pl), ("lancefmt", lf)):
                    try:
                        got = np.sort(ds.to_table(columns=["id"], filter=p.sql)["id"].to_numpy())
                    except Exception as e:  # noqa: BLE001
                        raise CheckFailed(f"{lib}: {p.sql} (index {name}) failed: {e!r}") from e
                    expect(np.array_equal(got, want),
                           f"{lib}: {p.sql} (index {name}) gives {got.size} rows, a full scan "
                           f"{want.size} (missing {np.setdiff1d(want, got)[:5].tolist()}, extra "
                           f"{np.setdiff1d(got, want)[:5].tolist()})")
    for name in sorted({n for n in segments.values() if n in FTS}):
        for p in fts_probes(rng, top):
            want = np.sort(ids_where(full_pl, p.mask(full_pl)))
            for lib, ds in (("pylance", pl), ("lancefmt", lf)):
                try:
                    got = np.sort(ds.to_table(columns=["id"], full_text_query=p.sql)["id"].to_numpy())
                except Exception as e:  # noqa: BLE001
                    raise CheckFailed(f"{lib}: full-text query {p.sql!r} (index {name}) failed: {e!r}") from e
                expect(np.array_equal(got, want),
                       f"{lib}: full-text query {p.sql!r} (index {name}) gives {got.size} rows, "
                       f"{want.size} hold the token (missing {np.setdiff1d(want, got)[:5].tolist()}, "
                       f"extra {np.setdiff1d(got, want)[:5].tolist()})")
    return State(pl.version, segments, ids)


def ids_where(table: pa.Table, mask: np.ndarray) -> np.ndarray:
    return table["id"].to_numpy()[mask]


def introduced(t: Target, after: int, upto: int) -> set:
    """Index segment uuids the transactions of versions ``after+1 .. upto`` added."""
    from lancefmt.table.transaction import CreateIndex, Rewrite

    lf = t.lancefmt()
    out = set()
    for v in range(after + 1, upto + 1):
        txn = lf.read_transaction(v)
        expect(txn is not None, f"version {v} has no transaction")
        op = txn.operation
        if isinstance(op, CreateIndex):
            out |= {_uuid(pb) for pb in op.new_indices}
        elif isinstance(op, Rewrite):
            out |= {str(r.new_id) for r in op.rewritten_indices}
    return out


def check_no_uncommitted_index(t: Target, before: State, after: State) -> None:
    """Every segment listed after the kill was there before or came with a committed
    transaction; with no new version, the segments are exactly the old ones."""
    new = set(after.segments) - set(before.segments)
    if after.version == before.version:
        expect(after.segments == before.segments,
               f"no commit, yet the segments changed: {sorted(set(after.segments) ^ set(before.segments))}")
        return
    stray = new - introduced(t, before.version, after.version)
    expect(not stray, f"segments {sorted(stray)} are listed but no transaction added them")


def check_clean(t: Target, impl: str) -> dict:
    """After a cleanup that removed every old version and unverified file: the dataset holds
    exactly what its last version references (plus the version hint) and no empty local
    directory below ``_indices``; pending multipart uploads are counted. pylance's cleanup
    leaves lancefmt's write temporaries beside deletion and transaction files and a Spark job's
    staging records (it does not know them): counted, not failed, for ``impl='pylance'``."""
    files, empty = listing(t)
    refs = referenced(t)
    gone = sorted(refs - set(files))
    expect(not gone, f"{impl} cleanup removed referenced files: {gone[:5]}")
    extra = sorted(p for p in set(files) - refs if not p.endswith("latest_version_hint.json"))
    left_temps = []
    if impl == "pylance":
        left_temps = [p for p in extra if p.startswith("_lancefmt_staging/") or (
            os.path.basename(p).startswith(".tmp_")
            and p.split("/", 1)[0] in ("_transactions", "_deletions"))]
        extra = [p for p in extra if p not in left_temps]
    expect(not extra, f"{impl} cleanup left {len(extra)} unreferenced files: {extra[:6]}")
    live = {p.rsplit("/", 1)[0] + "/" for p in refs if p.startswith("_indices/")}
    # a committed INVERTED index whose staged partitions were united keeps its emptied
    # staging/ directory on local disk: it goes with its index directory
    dead_dirs = sorted(d for d in empty if d.startswith(("_indices/", "data/", "_deletions/"))
                       and not any(d.startswith(x) for x in live))
    expect(not dead_dirs, f"{impl} cleanup left empty directories: {dead_dirs[:6]}")
    uploads = pending_uploads(t)
    named = sorted(set(uploads) & refs)
    expect(not named, f"pending multipart uploads for referenced objects: {named[:5]}")
    odd = sorted(u for u in uploads if u.split("/", 1)[0] not in ("data", "_indices"))
    expect(not odd, f"pending multipart uploads outside data/ and _indices/: {odd[:5]}")
    expect(impl == "pylance" or not uploads,  # lancefmt's aborts them (moto dates them 2010)
           f"lancefmt cleanup left {len(uploads)} multipart uploads pending: {uploads[:5]}")
    return {"files": len(files), "pylance_left_temps": len(left_temps), "pending_uploads": len(uploads)}
