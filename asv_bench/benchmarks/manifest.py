"""Manifest reading: lancefmt's columnar fragment view vs pylance's fragment list.

Fixture (built once by ``setup_cache``): pylance writes a 10-row dataset and deletes 2 rows;
lancefmt then commits version 3 with 10,000 fragments, each with its own data file (a hard link
of the one pylance wrote) and every tenth with its own deletion file. pylance opens and
validates the result, so both sides read a real Lance dataset.

Timed: open the latest version and get every fragment's id and physical row count.
* lancefmt: list ``_versions/``, read the manifest, build the :class:`FragmentTable`.
* pylance: ``lance.dataset(uri)``, ``get_fragments()``, ``physical_rows`` of each fragment.
Target: lancefmt >= 2x faster (``track_speedup_open_fragments``).
"""
import os
import shutil
import time
import uuid

from lancefmt._proto import table_pb2, transaction_pb2
from lancefmt.table.feature_flags import apply_feature_flags
from lancefmt.table.manifest import encode_manifest_file, parse_manifest_file, read_manifest
from lancefmt.table.naming import data_file_names, deletion_file_name, transaction_file_name
from lancefmt.table.version_hint import write_version_hint
from lancefmt.table.versions import latest_manifest, load_manifest, manifest_uri

from .common import scratch_dir, speedup

N_FRAGMENTS = 10_000


def build_dataset(uri, n_fragments=N_FRAGMENTS):
    import lance
    import pyarrow as pa

    if os.path.exists(uri):
        shutil.rmtree(uri)
    lance.write_dataset(pa.table({"x": pa.array(range(10), pa.int64()),
                                  "s": pa.array([f"v{i}" for i in range(10)])}), uri)
    lance.dataset(uri).delete("x < 2")
    base = load_manifest(uri)
    src = base.manifest.fragments[0]
    data_dir = os.path.join(uri, "data")
    del_dir = os.path.join(uri, "_deletions")
    src_data = os.path.join(data_dir, src.files[0].path)
    src_del = os.path.join(del_dir, base.fragments.deletion_file_names()[0])
    m = table_pb2.Manifest()
    m.CopyFrom(base.manifest)
    del m.fragments[:]
    names = data_file_names(n_fragments)
    for i, name in enumerate(names):
        f = m.fragments.add()
        f.CopyFrom(src)
        f.id = i
        f.files[0].path = name
        os.link(src_data, os.path.join(data_dir, name))
        if i % 10:
            f.ClearField("deletion_file")
        else:
            f.deletion_file.read_version = base.version
            dname = deletion_file_name(i, base.version, f.deletion_file.id, f.deletion_file.file_type)
            os.link(src_del, os.path.join(del_dir, dname))
    m.max_fragment_id = n_fragments - 1
    m.version = base.version + 1
    m.timestamp.seconds, m.timestamp.nanos = divmod(time.time_ns(), 10**9)
    txn = transaction_pb2.Transaction(read_version=base.version, uuid=str(uuid.uuid4()))
    txn.update_config.config_updates.update_entries.add(key="bench", value="1")
    m.config["bench"] = "1"
    m.transaction_file = transaction_file_name(base.version, uuid.UUID(txn.uuid))
    with open(os.path.join(uri, "_transactions", m.transaction_file), "wb") as f:
        f.write(txn.SerializeToString())
    apply_feature_flags(m)
    with open(manifest_uri(uri, m.version), "wb") as f:
        f.write(encode_manifest_file(m, txn))
    write_version_hint(uri, m.version)
    ds = lance.dataset(uri)
    assert len(ds.get_fragments()) == n_fragments
    ds.validate()
    return uri


def lancefmt_open_fragments(uri):
    loc = latest_manifest(uri)
    view = read_manifest(loc.uri, size=loc.size).fragments
    return view.ids, view.physical_rows


def pylance_open_fragments(uri):
    import lance

    frags = lance.dataset(uri).get_fragments()
    return [f.fragment_id for f in frags], [f.physical_rows for f in frags]


class ManifestFragments:
    timeout = 600

    def setup_cache(self):
        return build_dataset(os.path.join(scratch_dir("manifest"), "ds10k"))

    def time_lancefmt_open_fragments(self, uri):
        lancefmt_open_fragments(uri)

    def time_pylance_open_fragments(self, uri):
        pylance_open_fragments(uri)

    def time_lancefmt_load_manifest_checked(self, uri):
        load_manifest(uri).fragments.total_live_rows

    def track_speedup_open_fragments(self, uri):
        return speedup(lambda: lancefmt_open_fragments(uri), lambda: pylance_open_fragments(uri))

    track_speedup_open_fragments.unit = "x (pylance time / lancefmt time)"


class ManifestScan:
    """Pure lancefmt: the Cython scan of in-memory manifests with 10k and 100k fragments."""

    params = [10_000, 100_000]
    param_names = ["fragments"]

    def setup(self, n):
        m = table_pb2.Manifest(version=2)
        frag = table_pb2.DataFragment(physical_rows=1000)
        frag.files.add(path=data_file_names(1)[0], fields=[0, 1], column_indices=[0, 1],
                       file_major_version=2, file_minor_version=1, file_size_bytes=12345)
        for i, name in enumerate(data_file_names(n)):
            f = m.fragments.add()
            f.CopyFrom(frag)
            f.id = i
            f.files[0].path = name
            if i % 3 == 0:
                f.files[0].base_id = 1
            if i % 10 == 0:
                f.deletion_file.num_deleted_rows = 5
        self.data = encode_manifest_file(m)

    def time_scan(self, n):
        parse_manifest_file(self.data).fragments.total_live_rows

    def time_scan_and_paths(self, n):
        parse_manifest_file(self.data).fragments.data_file_paths()

    def time_protobuf_decode(self, n):
        # reference point: upb decoding the whole Manifest, before touching a single fragment
        table_pb2.Manifest.FromString(self.data[4:-16])
