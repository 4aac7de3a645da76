"""Manifests of releases before 0.8.1 carry no writer_version and may record wrong row counts
(0.8.0 stored the live count in ``physical_rows``): like Lance, lancefmt counts from the data
files then, and a lancefmt commit writes the right counts (pylance 14 then agrees)."""
import pyarrow as pa

import lance
import lancefmt
from lancefmt.table.manifest import encode_manifest_file
from lancefmt.table.versions import latest_manifest, load_manifest

from mutations import append


def _as_080(uri):
    """Rewrite the latest manifest as pylance 0.8.0 left it after migrating a 0.7.5 table:
    no writer_version, physical_rows = rows after deletions."""
    loc = latest_manifest(uri)
    mf = load_manifest(uri, loc.version)
    pb = mf.manifest
    pb.ClearField("writer_version")
    for f in pb.fragments:
        if f.HasField("deletion_file"):
            f.physical_rows -= f.deletion_file.num_deleted_rows
            f.deletion_file.num_deleted_rows = 0
    with open(loc.uri, "wb") as out:
        out.write(encode_manifest_file(pb, mf.transaction(), mf.indices))


def test_untrusted_row_counts_are_read_from_the_data_files(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"x": pa.array(range(100), pa.int64())}), uri,
                        data_storage_version="legacy")
    lance.dataset(uri).delete("x >= 10 and x < 20")
    _as_080(uri)
    ours, theirs = lancefmt.dataset(uri), lance.dataset(uri)
    assert ours.count_rows() == theirs.count_rows() == 90
    assert ours.to_table().equals(theirs.to_table())
    # a commit that leaves the fragment as it is must still write its true row count
    append(uri, pa.table({"x": pa.array(range(100, 105), pa.int64())}))
    theirs = lance.dataset(uri)
    assert [f.metadata.physical_rows for f in theirs.get_fragments()] == [100, 5]
    assert theirs.count_rows() == lancefmt.dataset(uri).count_rows() == 95
    assert theirs.to_table().equals(lancefmt.dataset(uri).to_table())
