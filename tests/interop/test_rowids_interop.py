"""Row-id sequences against pylance 14.0.2 (the oracle).

* pylance's own ``RowIdSequence`` encoder/decoder agree with ours byte for byte on random arrays;
* a dataset with stable row ids, deletions, updates and compaction: every fragment's stored
  sequence decodes (in lancefmt) to exactly the ``_rowid`` / ``_rowaddr`` pylance scans, the
  version sequences to its ``_row_created_at_version`` / ``_row_last_updated_at_version``,
  re-encoding reproduces pylance's bytes, and lancefmt's mask + rechunk reproduce the
  sequences pylance's compaction wrote;
* the row-id index resolves every live id to pylance's address and nothing else.
"""
import json
import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

lance = pytest.importorskip("lance")
from lance.fragment import RowIdMeta, RowIdSequence as PyLanceRowIdSequence  # noqa: E402

from lance_manifest import read_manifest  # noqa: E402
from lancefmt._proto import transaction_pb2  # noqa: E402
from lancefmt.table.deletion import DeletionVector, load_deletion_vector  # noqa: E402
from lancefmt.table.rowids import (  # noqa: E402
    MISSING_ADDRESS,
    RowDatasetVersionSequence,
    RowIdIndex,
    RowIdSequence,
    decode_row_ids,
    decode_versions,
    encode_row_ids,
    load_row_id_sequence,
    rechunk_sequences,
    rechunk_version_sequences,
)

U64_MAX = (1 << 64) - 1


def pylance_encode(values) -> bytes:
    meta = PyLanceRowIdSequence([int(v) for v in values]).to_inline_metadata()
    return bytes(json.loads(meta.json())["Inline"])


def pylance_decode(data: bytes) -> list:
    meta = RowIdMeta.from_json(json.dumps({"Inline": list(data)}))
    return PyLanceRowIdSequence.from_inline_metadata(meta).to_pyarrow().to_pylist()


@st.composite
def row_id_arrays(draw):
    style = draw(st.sampled_from(["range", "holes", "bitmap", "sparse", "unsorted", "wide", "max"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    start = draw(st.one_of(st.integers(0, 10**6), st.integers(0, U64_MAX - 10**6)))
    n = draw(st.integers(1, 3000))
    s0 = np.uint64(start)
    if style == "range":
        v = np.arange(n, dtype=np.uint64) + s0
    elif style == "holes":
        v = np.arange(n + 10, dtype=np.uint64) + s0
        v = np.delete(v, rng.choice(v.size, 10, replace=False))
    elif style == "bitmap":
        v = (np.arange(2 * n, dtype=np.uint64) + s0)[rng.random(2 * n) < 0.6]
    elif style == "sparse":
        v = np.sort(rng.choice(2**34, n, replace=False)).astype(np.uint64) + \
            np.uint64(min(start, U64_MAX - 2**34))
    elif style == "unsorted":
        v = rng.permutation(n * 3)[:n].astype(np.uint64) + s0
    elif style == "wide":
        v = np.sort(rng.choice(2**62, n, replace=False)).astype(np.uint64) * np.uint64(3)
    else:
        v = np.array([U64_MAX - 5, U64_MAX - 2, U64_MAX], dtype=np.uint64)
    v = np.asarray(v, dtype=np.uint64)
    return v if v.size else np.array([start], dtype=np.uint64)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row_id_arrays())
def test_encoder_matches_pylance(values):
    ours = encode_row_ids(values)
    assert ours == pylance_encode(values)
    assert pylance_decode(ours) == values.tolist()


# -- a pylance dataset with stable row ids -----------------------------------------------------
N = 60_000


@pytest.fixture(scope="module")
def stable_ds(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("stable") / "ds")
    table = pa.table({"a": pa.array(np.arange(N, dtype=np.int64)),
                      "b": pa.array(np.zeros(N, dtype=np.int64))})
    ds = lance.write_dataset(table, uri, enable_stable_row_ids=True, max_rows_per_file=20_000)
    ds.delete("a % 10 = 3 and a < 40000")                       # v2: sparse -> .arrow
    ds.delete("a >= 20000 and a < 32000 and a % 2 = 0")         # v3: fragment 1 -> .bin
    ds.update({"b": "1"}, where="a >= 50000 and a < 52000 and a % 500 != 7")  # holes
    ds.update({"b": "2"}, where="a >= 40000 and a < 41000 and a % 3 = 0")     # bitmap
    ds.update({"b": "3"}, where="a % 997 = 0")                  # sparse sorted arrays
    ds = lance.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=25_000)  # rechunked sequences
    ds = lance.dataset(uri)
    ds.delete("a % 13 = 0")                                     # deletions after compaction
    ds.update({"b": "4"}, where="a >= 100 and a < 400")
    return uri


def _versions(uri):
    return [v["version"] for v in lance.dataset(uri).versions()]


def _pylance_rows(ds, fragment_id):
    frag = ds.get_fragment(fragment_id)
    return ds.scanner(columns=["_row_created_at_version", "_row_last_updated_at_version"],
                      with_row_id=True, with_row_address=True, fragments=[frag],
                      scan_in_order=True).to_table()


def test_every_fragment_of_every_version(stable_ds):
    seen_kinds = set()
    for version in _versions(stable_ds):
        manifest = read_manifest(stable_ds, version)
        ds = lance.dataset(stable_ds, version=version)
        for frag in manifest.fragments:
            data = frag.inline_row_ids
            assert data, "stable row ids are stored inline"
            ids = decode_row_ids(data, expected_len=frag.physical_rows)
            seq = RowIdSequence.from_bytes(data)
            seen_kinds.update(s.kind.name for s in seq.segments)
            # Byte-exact round trips: structure, and each segment re-shaped from its values.
            assert RowIdSequence(seq.segments).to_bytes() == data
            assert RowIdSequence.from_arrays([s.to_numpy() for s in seq.segments]).to_bytes() == data
            dv = load_deletion_vector(stable_ds, frag.id,
                                      frag.deletion_file if frag.HasField("deletion_file") else None,
                                      physical_rows=frag.physical_rows)
            kept = dv.kept_indices(frag.physical_rows)
            rows = _pylance_rows(ds, frag.id)
            np.testing.assert_array_equal(rows["_rowid"].to_numpy(), seq.select(kept))
            np.testing.assert_array_equal(rows["_rowid"].to_numpy(), ids[kept])
            np.testing.assert_array_equal(rows["_rowaddr"].to_numpy(),
                                          (frag.id << 32) | kept.astype(np.uint64))
            created = decode_versions(frag.inline_created_at_versions, expected_len=frag.physical_rows)
            updated = decode_versions(frag.inline_last_updated_at_versions,
                                      expected_len=frag.physical_rows)
            np.testing.assert_array_equal(rows["_row_created_at_version"].to_numpy(), created[kept])
            np.testing.assert_array_equal(rows["_row_last_updated_at_version"].to_numpy(),
                                          updated[kept])
            for blob in (frag.inline_created_at_versions, frag.inline_last_updated_at_versions):
                vs = RowDatasetVersionSequence.from_bytes(blob)
                assert RowDatasetVersionSequence(vs.runs).to_bytes() == blob
    # The scenario really exercised the interesting shapes.
    assert {"RANGE", "RANGE_WITH_HOLES", "RANGE_WITH_BITMAP", "SORTED_ARRAY"} <= seen_kinds, seen_kinds


def _rewrite_transactions(uri):
    """(version, Rewrite op) for every compaction commit."""
    out = []
    for version in _versions(uri):
        m = read_manifest(uri, version)
        if not m.transaction_file:
            continue
        with open(os.path.join(uri, "_transactions", m.transaction_file), "rb") as f:
            txn = transaction_pb2.Transaction.FromString(f.read())
        if txn.WhichOneof("operation") == "rewrite":
            out.append((version, txn))
    return out


def test_compaction_rechunk_matches_pylance(stable_ds):
    rewrites = _rewrite_transactions(stable_ds)
    assert rewrites, "compaction wrote a Rewrite transaction"
    # Several new fragments: the rechunk cuts source segments at fragment boundaries.
    assert max(len(g.new_fragments) for _, t in rewrites for g in t.rewrite.groups) > 1
    for version, txn in rewrites:
        before = {f.id: f for f in read_manifest(stable_ds, txn.read_version).fragments}
        after = {f.id: f for f in read_manifest(stable_ds, version).fragments}
        for group in txn.rewrite.groups:
            olds = [before[f.id] for f in group.old_fragments]
            news = [after[f.id] for f in group.new_fragments]
            seqs, created, updated = [], [], []
            for old in olds:
                dv = load_deletion_vector(stable_ds, old.id, old.deletion_file
                                          if old.HasField("deletion_file") else None)
                seq = load_row_id_sequence(old)
                c = RowDatasetVersionSequence.from_bytes(old.inline_created_at_versions)
                u = RowDatasetVersionSequence.from_bytes(old.inline_last_updated_at_versions)
                if dv:
                    seq, c, u = seq.mask(dv.offsets), c.mask(dv.offsets), u.mask(dv.offsets)
                seqs.append(seq)
                created.append(c)
                updated.append(u)
            sizes = [f.physical_rows for f in news]
            for new, seq in zip(news, rechunk_sequences(seqs, sizes)):
                assert seq.to_bytes() == new.inline_row_ids
            for new, c in zip(news, rechunk_version_sequences(created, sizes)):
                assert c.to_bytes() == new.inline_created_at_versions
            for new, u in zip(news, rechunk_version_sequences(updated, sizes)):
                assert u.to_bytes() == new.inline_last_updated_at_versions


def test_row_id_index_matches_pylance(stable_ds):
    for version in _versions(stable_ds)[-3:]:
        manifest = read_manifest(stable_ds, version)
        ds = lance.dataset(stable_ds, version=version)
        fragments = []
        for frag in manifest.fragments:
            dv = load_deletion_vector(stable_ds, frag.id, frag.deletion_file
                                      if frag.HasField("deletion_file") else None)
            fragments.append((frag.id, frag.inline_row_ids, dv))
        index = RowIdIndex.build(fragments)
        t = ds.to_table(columns=[], with_row_id=True, with_row_address=True)
        ids = t["_rowid"].to_numpy()
        assert len(index) == ids.size
        np.testing.assert_array_equal(index.lookup(ids), t["_rowaddr"].to_numpy())
        # Ids of deleted rows and never-assigned ids do not resolve.
        gone = np.setdiff1d(np.arange(manifest.next_row_id + 10, dtype=np.uint64), ids)
        assert gone.size > 0
        assert np.all(index.lookup(gone) == MISSING_ADDRESS)


def test_new_fragment_sequences(stable_ds):
    m = read_manifest(stable_ds, 1)
    starts = 0
    for frag in m.fragments:
        assert frag.inline_row_ids == RowIdSequence.from_range(starts, starts + frag.physical_rows).to_bytes()
        assert frag.inline_created_at_versions == RowDatasetVersionSequence.uniform(
            frag.physical_rows, 1).to_bytes()
        starts += frag.physical_rows
    assert m.next_row_id == starts == N
