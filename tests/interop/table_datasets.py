"""Datasets written by pylance 14.0.2 for the table-metadata interop tests: every storage
version, several fragments, deletions (.arrow and .bin), stable row ids, multi-base (data
directories and dataset roots), tags, a shallow clone, a branch, V1 and V2 manifest naming, an
index and table config."""
import os
import time
import uuid

import lance
import pyarrow as pa
from lance import DatasetBasePath

from lancefmt import __version__
from lancefmt._proto import table_pb2, transaction_pb2
from lancefmt.io import open_store
from lancefmt.io.uri import child
from lancefmt.table.feature_flags import apply_feature_flags
from lancefmt.table.manifest import write_manifest_file
from lancefmt.table.naming import TRANSACTIONS_DIR, transaction_file_name
from lancefmt.table.version_hint import wants_version_hint, write_version_hint
from lancefmt.table.versions import latest_manifest, load_manifest, manifest_uri


def table(n, start=0):
    return pa.table({"x": pa.array(range(start, start + n), pa.int64()),
                     "s": pa.array([f"row {i}" for i in range(start, start + n)])})


def build_datasets(root) -> dict:
    """Write the datasets below ``root``; returns name -> dataset URI (a local path)."""
    root = str(root)
    out = {}

    uri = os.path.join(root, "v20")
    lance.write_dataset(table(100), uri, data_storage_version="2.0", max_rows_per_file=25)
    ds = lance.dataset(uri)
    ds.delete("x < 5")
    ds.tags.create("after_delete", 2)
    lance.write_dataset(table(30, 100), uri, mode="append", max_rows_per_file=25)
    ds = lance.dataset(uri)
    ds.delete("x >= 120 AND x < 123")
    ds.delete("x = 50")
    ds.tags.create("latest_tag", ds.version)
    out["v20"] = uri

    uri = os.path.join(root, "v21_rowids")
    lance.write_dataset(table(60), uri, data_storage_version="2.1", max_rows_per_file=20,
                        enable_stable_row_ids=True)
    ds = lance.dataset(uri)
    ds.delete("x % 7 = 0")
    lance.write_dataset(table(15, 60), uri, mode="append")
    out["v21_rowids"] = uri

    b1 = os.path.join(root, "bucket1")
    b2 = os.path.join(root, "bucket2")
    os.makedirs(b1)
    os.makedirs(b2)
    uri = os.path.join(root, "v22_multibase")
    lance.write_dataset(table(90), uri, data_storage_version="2.2", max_rows_per_file=30,
                        initial_bases=[DatasetBasePath(b1, name="b1"),
                                       DatasetBasePath(b2, name="b2", is_dataset_root=True)],
                        target_bases=["b1"])
    lance.write_dataset(table(40, 90), uri, mode="append", target_bases=["b2"],
                        max_rows_per_file=20)
    lance.write_dataset(table(10, 130), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("x < 3 OR (x >= 95 AND x < 98) OR x = 135")
    out["v22_multibase"] = uri

    uri = os.path.join(root, "v1_naming")
    lance.write_dataset(table(40), uri, max_rows_per_file=15, enable_v2_manifest_paths=False)
    ds = lance.dataset(uri)
    ds.delete("x = 3")
    lance.write_dataset(table(5, 40), uri, mode="append")
    out["v1_naming"] = uri

    uri = os.path.join(root, "bitmap_deletions")
    lance.write_dataset(table(12_000), uri)
    lance.dataset(uri).delete("x < 7000")
    out["bitmap_deletions"] = uri

    uri = os.path.join(root, "indexed")
    lance.write_dataset(table(300), uri, max_rows_per_file=100,
                        auto_cleanup_options={"interval": 5, "older_than_seconds": 3600})
    lance.dataset(uri).create_scalar_index("x", "BTREE")
    out["indexed"] = uri

    src = lance.dataset(out["v20"])
    clone = os.path.join(root, "clone")
    src.shallow_clone(clone, "after_delete")
    lance.write_dataset(table(7, 500), clone, mode="append")
    lance.dataset(clone).delete("x = 10 OR x = 501")
    out["clone"] = clone

    src.create_branch("feat/x", 2)
    out["branch"] = os.path.join(out["v20"], "tree", "feat", "x")
    return out


def commit_config_update(uri, key, value, storage_options=None):
    """Commit version N+1 = version N plus one config entry, as an UpdateConfig transaction."""
    store = open_store(uri, storage_options)
    loc = latest_manifest(uri, store=store)
    old = load_manifest(uri, store=store)
    old.check_writable()
    new = table_pb2.Manifest()
    new.CopyFrom(old.manifest)
    new.version = old.version + 1
    now = time.time_ns()
    new.timestamp.seconds, new.timestamp.nanos = divmod(now, 10**9)
    new.config[key] = value
    new.writer_version.Clear()
    new.writer_version.library = "lancefmt"
    new.writer_version.version = __version__
    txn = transaction_pb2.Transaction(read_version=old.version, uuid=str(uuid.uuid4()))
    txn.update_config.config_updates.update_entries.add(key=key, value=value)
    new.transaction_file = transaction_file_name(old.version, uuid.UUID(txn.uuid))
    store.put(child(uri, TRANSACTIONS_DIR, new.transaction_file), txn.SerializeToString())
    apply_feature_flags(new, fragments=old.fragments)
    target = manifest_uri(uri, new.version, loc.scheme)
    assert write_manifest_file(target, new, txn, old.index_section(), store=store) is not None
    if wants_version_hint(uri):
        write_version_hint(uri, new.version, store=store)
    return old.version, new
