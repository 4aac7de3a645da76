"""Helpers for the ZONEMAP / BLOOMFILTER interop tests: a table of many types with nulls, NaN
and signed zeros, the decoded contents of an index, and answers checked against full scans."""
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lancefmt
from lancefmt.index.core.metadata import uuid_text
from lancefmt.index.core.store import IndexStore
from lancefmt.index.core.treemap import decode_treemap
from lancefmt.table.versions import load_manifest

NAN = float("nan")


def table(n: int = 12_000, seed: int = 0) -> pa.Table:
    """Mostly sorted columns (so zones prune), with nulls, NaN, +-0.0 and infinities."""
    rng = np.random.default_rng(seed)
    idx = np.arange(n)
    null = rng.random(n) < 0.04
    x = np.sort(rng.normal(size=n)) * 50
    x[rng.random(n) < 0.01] = NAN
    x[::997] = 0.0
    x[1::997] = -0.0
    x[5] = np.inf
    ints = idx * 3 - n
    return pa.table({
        "id": pa.array(idx, pa.int64()),
        "x": pa.array(x, pa.float64(), mask=null),
        "f": pa.array(x.astype(np.float32), pa.float32(), mask=np.roll(null, 1)),
        "i8": pa.array((idx // 100 % 256 - 128).astype(np.int8), pa.int8(), mask=np.roll(null, 2)),
        "u64": pa.array(idx.astype(np.uint64) * np.uint64(2**40), pa.uint64()),
        "i32": pa.array(ints.astype(np.int32), pa.int32(), mask=np.roll(null, 3)),
        "s": pa.array([f"k{i // 7:06d}" for i in idx], pa.string(), mask=np.roll(null, 4)),
        "ls": pa.array([f"long-{i % 500}" for i in idx], pa.large_string()),
        "b": pa.array([int(i).to_bytes(3, "big") for i in idx], pa.binary(), mask=np.roll(null, 5)),
        "d": pa.array((idx // 10).astype(np.int32), pa.int32()).view(pa.date32()),
        "ts": pa.array(idx.astype(np.int64) * 1_000_000, pa.int64()).view(pa.timestamp("us", "UTC")),
        "flag": pa.array(idx % 5 == 0, pa.bool_(), mask=np.roll(null, 6)),
        "dec": pa.array([decimal.Decimal(int(i)) / 100 for i in idx], pa.decimal128(12, 3)),
        "fsb": pa.array([int(i).to_bytes(4, "big") for i in idx], pa.binary(4)),
    })


def segment_contents(uri: str, name: str, filename: str) -> dict:
    """Details bytes, schema metadata, columns and null rows of index ``name``'s only segment."""
    (entry,) = [e for e in load_manifest(uri, None).indices if e.name == name]
    store = IndexStore(f"{uri.rstrip('/')}/_indices/{uuid_text(entry)}")
    reader = store.reader(filename)
    meta = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in reader.schema_metadata.items()}
    nulls = decode_treemap(reader.read_global_buffer(int(meta["null_bitmap"]))).tolist() \
        if "null_bitmap" in meta else None
    return {"type_url": entry.index_details.type_url, "details": bytes(entry.index_details.value),
            "index_version": entry.index_version, "fragments": sorted(_frags(entry)),
            "metadata": meta, "table": reader.read_all(), "nulls": nulls}


def _frags(entry):
    from lancefmt.index.core.metadata import fragment_ids

    return list(fragment_ids(entry))


def same_values(a: pa.Array, b: pa.Array) -> bool:
    """Equal, NaN equal to NaN and -0.0 distinct from 0.0 (compared by bits)."""
    if a.type != b.type or len(a) != len(b):
        return False
    if pa.types.is_floating(a.type):
        va, vb = a.is_valid().to_pylist(), b.is_valid().to_pylist()
        if va != vb:
            return False
        kind = {16: np.uint16, 32: np.uint32, 64: np.uint64}[a.type.bit_width]
        ba = np.frombuffer(a.buffers()[1], kind, count=a.offset + len(a))[a.offset:]
        bb = np.frombuffer(b.buffers()[1], kind, count=b.offset + len(b))[b.offset:]
        nan_a = np.isnan(a.to_numpy(zero_copy_only=False))
        nan_b = np.isnan(b.to_numpy(zero_copy_only=False))
        valid = np.array(va, bool)
        return bool(((ba == bb) | (nan_a & nan_b))[valid].all())
    return a.equals(b)


def full_scan(tbl: pa.Table, expr) -> list:
    """Ids of the rows ``expr`` (a pyarrow expression) keeps."""
    return sorted(tbl.filter(expr).column("id").to_pylist())


def lancefmt_ids(uri: str, flt: str, **kw) -> list:
    return sorted(lancefmt.dataset(uri).to_table(columns=["id"], filter=flt, **kw).column("id").to_pylist())


def pylance_ids(ds, flt: str, **kw) -> list:
    return sorted(ds.to_table(columns=["id"], filter=flt, **kw).column("id").to_pylist())


def live_table(uri: str) -> pa.Table:
    """Every live row (a full scan, no filter)."""
    return lancefmt.dataset(uri).to_table()


def expr(column: str, op: str, value=None):
    f = pc.field(column)
    if op == "null":
        return f.is_null()
    if op == "in":
        return f.isin(pa.array(value[0], value[1]))
    return {"=": f == value, "<": f < value, "<=": f <= value, ">": f > value, ">=": f >= value}[op]


# -- committing a segment made by update() / remap() ---------------------------------------------
def replace_segment(uri: str, name: str, make) -> None:
    """Replace index ``name``'s only segment by ``make(loaded, snapshot, store)`` ->
    (details, fragment ids), committed as one ``CreateIndex``."""
    from lancefmt.dataset.core.indices import index_entries, index_store, index_store_for
    from lancefmt.index.core.catalog import Segment
    from lancefmt.index.core.metadata import fragment_ids, new_metadata, new_uuid
    from lancefmt.index.core.registry import by_details
    from lancefmt.table.transaction import CreateIndex

    snap = lancefmt.dataset(uri).snapshot
    (old,) = [e for e in index_entries(snap) if e.name == name]
    itype = by_details(old.index_details)
    loaded = Segment(old, itype, fragment_ids(old), index_store(snap, old)).load()
    uid = new_uuid()
    store = index_store_for(snap, uid)
    details, frags = make(loaded, snap, store)
    entry = new_metadata(index_uuid=uid, name=name, field_ids=list(old.fields), dataset_version=snap.version,
                         fragments=frags, details=itype.pack_details(details),
                         index_version=itype.index_version, files=store.written)
    snap.commit(CreateIndex([entry], [old]))


def update_with_new_fragments(uri: str, name: str, column: str) -> None:
    """``LoadedIndex.update`` over the fragments the index does not cover yet."""
    from lancefmt.dataset.read.index_training import training_data
    from lancefmt.index.core.metadata import fragment_ids

    def make(loaded, snap, store):
        (old,) = [e for e in load_manifest(uri, None).indices if e.name == name]
        covered = set(fragment_ids(old))
        new = [pb for pb in snap.fragment_pbs() if int(pb.id) not in covered]
        details = loaded.update(training_data(snap, column, new), store)
        return details, sorted(covered | {int(pb.id) for pb in new})

    replace_segment(uri, name, make)


def addresses_by_id(uri: str) -> dict:
    t = lancefmt.dataset(uri).to_table(columns=["id"], with_row_address=True)
    return dict(zip(t.column("id").to_pylist(), t.column("_rowaddr").to_pylist()))


def remap_after_compaction(uri: str, name: str, before: dict) -> None:
    """``LoadedIndex.remap`` with the compaction's old -> new addresses (joined on ``id``)."""
    from lancefmt.index.core.metadata import fragment_ids
    from lancefmt.index.core.registry import RowIdMapping

    after = addresses_by_id(uri)
    moved = [(before[i], a) for i, a in after.items() if before.get(i) != a]
    old = np.array([o for o, _ in moved], np.uint64)
    new = np.array([n for _, n in moved], np.uint64)

    def make(loaded, snap, store):
        (entry,) = [e for e in load_manifest(uri, None).indices if e.name == name]
        live = {int(pb.id) for pb in snap.fragment_pbs()}
        details = loaded.remap(RowIdMapping(old, new, np.empty(0, np.uint64)), store)
        new_frags = set((new >> np.uint64(32)).astype(np.int64).tolist())
        return details, sorted((set(fragment_ids(entry)) & live) | new_frags)

    replace_segment(uri, name, make)


# -- writes that must keep an index valid ----------------------------------------------------------
def write_ops(index_table):
    """Each write lancefmt makes to an indexed dataset (``index_checks.index_table`` data)."""
    return {
        "append": lambda ds, uri: lancefmt.write_dataset(index_table(500, 3000), uri, mode="append",
                                                         max_rows_per_file=300),
        "delete": lambda ds, uri: ds.delete("id < 30 OR id % 17 = 0"),
        "update indexed": lambda ds, uri: ds.update({"v": "v + 100"}, where="id < 60"),
        "update other": lambda ds, uri: ds.update({"x": "x + 1"}, where="id >= 2000"),
        "merge_insert": lambda ds, uri: ds.merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().execute(index_table(200, 2900)),
        "compact": lambda ds, uri: (ds.delete("id % 3 = 0"),
                                    lancefmt.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)),
        "optimize": lambda ds, uri: (lancefmt.write_dataset(index_table(400, 3000), uri, mode="append"),
                                     lancefmt.dataset(uri).optimize.optimize_indices()),
    }
