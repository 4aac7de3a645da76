"""Manifests of old releases: legacy dictionary values travel with the manifest (pylance's reads
of them: tests/interop/test_legacy_write_interop.py), and the storage format is inferred and
corrected as Lance does."""
import pyarrow as pa
import pytest

from lancefmt._proto import file_pb2, table_pb2, transaction_pb2
from lancefmt.errors import CorruptFileError
from lancefmt.table.legacy_dictionaries import is_legacy
from lancefmt.table.manifest import encode_manifest_file, parse_manifest_file


def _manifest():
    m = table_pb2.Manifest(version=3)
    m.fields.extend([
        file_pb2.Field(name="id", id=0, parent_id=-1, logical_type="int64"),
        file_pb2.Field(name="s", id=1, parent_id=-1, logical_type="dict:string:int32:false"),
        file_pb2.Field(name="n", id=2, parent_id=-1, logical_type="dict:int16:uint8:false")])
    m.data_format.file_format = "lance"
    m.data_format.version = "0.1"
    return m


def test_values_round_trip_and_sections_follow_them():
    values = {1: pa.array(["a", "", "ccc"]), 2: pa.array([7, -1], pa.int16())}
    txn = transaction_pb2.Transaction(read_version=2, uuid="u")
    data = encode_manifest_file(_manifest(), txn, None, values)
    mf = parse_manifest_file(data)
    got = mf.dictionary_values()
    assert got[1].to_pylist() == ["a", None, "ccc"]      # empty strings read as null (as Lance)
    assert got[2].to_pylist() == [7, -1]
    assert mf.header.fields[1].dictionary.length == 3 and mf.header.fields[1].dictionary.offset > 0
    assert mf.transaction().uuid == "u"


def test_bad_dictionary_offsets_are_corrupt():
    data = bytearray(encode_manifest_file(_manifest(), None, None, {1: pa.array(["a", "b"])}))
    m = table_pb2.Manifest()
    mf = parse_manifest_file(bytes(data))
    m.CopyFrom(mf.header)
    m.fields[1].dictionary.offset = 10 ** 6
    with pytest.raises(CorruptFileError):
        parse_manifest_file(encode_manifest_file(m)).dictionary_values()


def test_only_legacy_manifests_carry_dictionaries():
    m = _manifest()
    assert is_legacy(m)
    m.data_format.version = "2.0"
    assert not is_legacy(m)
    old = table_pb2.Manifest()   # 0.10-era: no data_format, files of version 0.0
    old.fragments.add().files.add(path="a.lance")
    assert is_legacy(old)


def test_a_commit_keeps_the_format_an_old_manifest_implies():
    """0.10-era manifests have no data_format: the next commit writes the inferred one (legacy
    for 0.x data files), as Lance does, instead of a default."""
    from lancefmt.table.manifest_builder import build_manifest
    from lancefmt.table.transaction import Delete, Transaction

    old = table_pb2.Manifest(version=1, max_fragment_id=0)
    old.fields.add(name="id", id=0, parent_id=-1, logical_type="int64")
    frag = old.fragments.add(id=0, physical_rows=3)
    frag.files.add(path="a.lance", fields=[0])
    txn = Transaction(1, Delete([], [], "id > 5"))
    manifest, _ = build_manifest(old, [], txn, version=2, transaction_file="")
    assert manifest.data_format.version == "0.1" and manifest.data_format.file_format == "lance"
    old.fragments[0].files[0].file_major_version = 2
    manifest, _ = build_manifest(old, [], txn, version=2, transaction_file="")
    assert manifest.data_format.version == "2.0"


def _old_manifest(*file_versions, flags=0):
    old = table_pb2.Manifest(version=1, max_fragment_id=len(file_versions), writer_feature_flags=flags)
    old.fields.add(name="id", id=0, parent_id=-1, logical_type="int64")
    for i, (major, minor) in enumerate(file_versions):
        frag = old.fragments.add(id=i, physical_rows=3)
        frag.files.add(path=f"{i}.lance", fields=[0], file_major_version=major,
                       file_minor_version=minor)
    return old


def _commit_delete(old):
    from lancefmt.table.manifest_builder import build_manifest
    from lancefmt.table.transaction import Delete, Transaction

    return build_manifest(old, [], Transaction(1, Delete([], [], "false")), version=2,
                          transaction_file="")[0]


def test_format_inference_for_manifests_without_data_format():
    assert _commit_delete(_old_manifest((0, 3))).data_format.version == "2.0"   # 0.13-0.16 v2
    assert _commit_delete(_old_manifest()).data_format.version == "0.1"
    v2_flag = _old_manifest(flags=4)  # 0.15: no files, the deprecated "use v2" writer flag
    assert _commit_delete(v2_flag).data_format.version == "2.2"   # pylance 14's stable
    assert parse_manifest_file(encode_manifest_file(v2_flag)).data_storage_version == "2.2"


def test_a_0_16_legacy_label_on_2_0_files_is_corrected_and_mixtures_refused():
    from lancefmt.errors import UnsupportedFeatureError

    wrong = _old_manifest((2, 0), (2, 0))
    wrong.data_format.file_format, wrong.data_format.version = "lance", "0.1"
    assert _commit_delete(wrong).data_format.version == "2.0"
    mixed = _old_manifest((0, 2), (2, 0))
    mixed.data_format.file_format, mixed.data_format.version = "lance", "0.1"
    with pytest.raises(UnsupportedFeatureError, match="mixture of file versions"):
        _commit_delete(mixed)
