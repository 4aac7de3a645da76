import pytest

from lancefmt import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from lancefmt._proto import table_pb2
from lancefmt.table import feature_flags as ff
from lancefmt.table.manifest import encode_manifest_file, parse_manifest_file

from table_factory import make_manifest


@pytest.mark.parametrize("flags", [0, 1, 2, 3, 4, 8, 16, 17, 19, 32, 63])
def test_supported_flags_pass(flags):
    ff.check_reader_flags(flags, "/x.manifest")
    ff.check_writer_flags(flags, "/x.manifest")


def test_unknown_reader_flag_is_refused_by_name():
    with pytest.raises(UnsupportedFeatureError) as e:
        ff.check_reader_flags(1 | 64, "/ds/_versions/1.manifest")
    msg = str(e.value)
    assert "64 (unstable_data_overlay_files)" in msg
    assert e.value.path == "/ds/_versions/1.manifest"
    assert "1 (" not in msg.split("support:")[1]  # only the unknown bit is named


def test_several_unknown_flags_are_each_named():
    with pytest.raises(UnsupportedFeatureError) as e:
        ff.check_writer_flags(256 | 2048 | (1 << 40) | 2)
    msg = str(e.value)
    assert "256 (mixed_data_file_versions)" in msg
    assert "2048 (semantic_types)" in msg
    assert f"{1 << 40} (unknown)" in msg
    assert "writer" in msg


def test_flag_names():
    assert ff.flag_names(19) == ["deletion_files", "stable_row_ids", "base_paths"]
    assert ff.flag_names(1 << 20) == ["bit_20"]
    assert ff.flag_names(0) == []


def _bare():
    m = table_pb2.Manifest(version=1)
    m.fragments.add(id=0, physical_rows=5).files.add(path="a.lance")
    return m


def test_compute_empty_manifest():
    assert ff.compute_feature_flags(table_pb2.Manifest()) == (0, 0)


def test_compute_deletions():
    m = _bare()
    m.fragments[0].deletion_file.num_deleted_rows = 1
    assert ff.compute_feature_flags(m) == (1, 1)


def test_compute_stable_row_ids():
    m = _bare()
    m.fragments[0].inline_row_ids = b"\n\x04\n\x02\x10\x05"
    assert ff.compute_feature_flags(m) == (2, 2)
    m.fragments.add(id=1, physical_rows=3)
    with pytest.raises(InvalidArgumentError):
        ff.compute_feature_flags(m)
    with pytest.raises(InvalidArgumentError):
        ff.compute_feature_flags(_bare(), enable_stable_row_ids=True)


def test_compute_config_is_writer_only():
    m = _bare()
    m.config["lance.auto_cleanup.interval"] = "20"
    assert ff.compute_feature_flags(m) == (0, 8)


def test_compute_base_paths_and_txn_file():
    m = _bare()
    m.base_paths.add(id=1, path="/x")
    assert ff.compute_feature_flags(m) == (16, 16)
    assert ff.compute_feature_flags(m, disable_transaction_file=True) == (16, 48)


def test_compute_overlays_and_carried_bits():
    m = _bare()
    m.fragments[0].overlays.add()
    assert ff.compute_feature_flags(m) == (64, 64)
    m = _bare()
    m.reader_feature_flags = 128 | 256 | 1   # stale deletion bit is dropped, 128/256 carried
    m.writer_feature_flags = 256
    assert ff.compute_feature_flags(m) == (384, 384)
    m.writer_feature_flags = 0               # 256 on one side only: corrupt, as in Lance
    with pytest.raises(CorruptFileError):
        ff.compute_feature_flags(m)


def test_apply_and_fragment_table_agree():
    for seed in range(5):
        m = make_manifest(40, seed, row_ids=seed % 2 == 0)
        m.config["k"] = "v"
        m.reader_feature_flags = m.writer_feature_flags = 0
        slow = ff.compute_feature_flags(m)
        fast = ff.compute_feature_flags(m, fragments=parse_manifest_file(encode_manifest_file(m)).fragments)
        assert slow == fast
        ff.apply_feature_flags(m)
        assert (m.reader_feature_flags, m.writer_feature_flags) == slow
        assert slow[1] & 8 and not slow[0] & 8


def test_paired_flag_check():
    ff.check_paired_flags(256, 256)
    with pytest.raises(CorruptFileError):
        ff.check_paired_flags(2048, 0, "/m")
