"""Synthetic manifests for the table tests (no pylance needed), plus a pure-Python reference of
the columnar fragment view to check the Cython scanner against."""
import random
import uuid

import numpy as np

from lancefmt._proto import file_pb2, table_pb2, transaction_pb2
from lancefmt.table.naming import data_file_name


def make_fragment(rng, frag_id, *, with_deletion=False, base_id=None, n_files=1, row_ids=False,
                  deletion_base_id=None, next_row_id=0):
    rows = rng.randint(1, 10_000)
    frag = table_pb2.DataFragment(id=frag_id, physical_rows=rows)
    for k in range(n_files):
        df = frag.files.add(path=data_file_name(uuid.UUID(int=rng.getrandbits(128))),
                            fields=[0, 1], column_indices=[0, 1], file_major_version=2,
                            file_minor_version=rng.choice([0, 1, 2]),
                            file_size_bytes=rng.randint(0, 1 << 40))
        if base_id is not None and (k == 0 or rng.random() < 0.5):
            df.base_id = base_id
    if with_deletion:
        d = frag.deletion_file
        d.file_type = rng.choice([0, 1])
        d.read_version = rng.randint(1, 50)
        d.id = rng.getrandbits(64)
        d.num_deleted_rows = rng.randint(1, rows)
        if deletion_base_id is not None:
            d.base_id = deletion_base_id
    if row_ids:
        frag.inline_row_ids = b"\n\x06\n\x04\x08" + bytes([next_row_id % 100]) + b"\x10\x05"
    return frag


def make_manifest(n_fragments=20, seed=0, *, deletions=True, bases=True, row_ids=False,
                  version=3):
    rng = random.Random(seed)
    m = table_pb2.Manifest(version=version, reader_feature_flags=0, writer_feature_flags=0,
                           max_fragment_id=max(n_fragments - 1, 0), transaction_file="2-x.txn")
    m.fields.add(name="x", id=0, parent_id=-1, logical_type="int64", nullable=True)
    m.fields.add(name="s", id=1, parent_id=-1, logical_type="string", nullable=False)
    m.timestamp.seconds = 1_795_000_000
    m.timestamp.nanos = 123_456_789
    m.writer_version.library = "lance"
    m.writer_version.version = "14.0.2"
    m.data_format.file_format = "lance"
    m.data_format.version = "2.1"
    if bases:
        m.base_paths.add(id=1, name="b1", path="/tmp/b1", is_dataset_root=False)
        m.base_paths.add(id=2, path="s3://bucket/b2", is_dataset_root=True)
    for i in range(n_fragments):
        with_del = deletions and rng.random() < 0.4
        base = rng.choice([None, 1, 2]) if bases else None
        dbase = rng.choice([None, 1, 2]) if (bases and with_del) else None
        m.fragments.append(make_fragment(rng, i * 2 + rng.randint(0, 1), with_deletion=with_del,
                                         base_id=base, n_files=rng.choice([0, 1, 1, 2, 3]),
                                         row_ids=row_ids, deletion_base_id=dbase))
    if deletions and any(f.HasField("deletion_file") for f in m.fragments):
        m.reader_feature_flags |= 1
        m.writer_feature_flags |= 1
    if row_ids:
        m.reader_feature_flags |= 2
        m.writer_feature_flags |= 2
    if bases:
        m.reader_feature_flags |= 16
        m.writer_feature_flags |= 16
    return m


def make_transaction(read_version=2):
    t = transaction_pb2.Transaction(read_version=read_version, uuid=str(uuid.uuid4()))
    t.update_config.config_updates.update_entries.add(key="k", value="v")
    return t


def make_index_section():
    sec = table_pb2.IndexSection()
    idx = sec.indices.add(name="x_idx", fields=[0], dataset_version=2, fragment_bitmap=b"\x01\x02")
    idx.uuid.uuid = uuid.uuid4().bytes
    return sec


def reference_columns(manifest):
    """The FragmentTable columns computed the slow way, from the protobuf."""
    frags = list(manifest.fragments)
    n = len(frags)

    def opt(msg, field):
        return getattr(msg, field) if msg.HasField(field) else -1

    cols = {
        "ids": np.array([f.id for f in frags], np.uint64),
        "physical_rows": np.array([f.physical_rows for f in frags], np.uint64),
        "num_deleted_rows": np.array([f.deletion_file.num_deleted_rows if f.HasField("deletion_file")
                                      else 0 for f in frags], np.uint64),
        "has_deletion_file": np.array([f.HasField("deletion_file") for f in frags], bool),
        "deletion_file_type": np.array([f.deletion_file.file_type if f.HasField("deletion_file")
                                        else -1 for f in frags], np.int32),
        "deletion_base_id": np.array([opt(f.deletion_file, "base_id") if f.HasField("deletion_file")
                                      else -1 for f in frags], np.int64),
        "deletion_id": np.array([f.deletion_file.id for f in frags], np.uint64),
        "deletion_read_version": np.array([f.deletion_file.read_version for f in frags], np.uint64),
        "num_data_files": np.array([len(f.files) for f in frags], np.int64),
        "base_id": np.array([opt(f.files[0], "base_id") if len(f.files) else -1 for f in frags],
                            np.int64),
        "has_row_ids": np.array([f.WhichOneof("row_id_sequence") is not None for f in frags], bool),
        "file_base_id": np.array([opt(d, "base_id") for f in frags for d in f.files], np.int64),
        "file_size_bytes": np.array([d.file_size_bytes for f in frags for d in f.files], np.uint64),
        "file_major_version": np.array([d.file_major_version for f in frags for d in f.files], np.uint32),
        "file_minor_version": np.array([d.file_minor_version for f in frags for d in f.files], np.uint32),
        "paths": [d.path for f in frags for d in f.files],
    }
    assert len(cols["ids"]) == n
    return cols


def field_tree_names(manifest):
    return [f.name for f in manifest.fields]


__all__ = ["make_manifest", "make_fragment", "make_transaction", "make_index_section",
           "reference_columns", "file_pb2"]
