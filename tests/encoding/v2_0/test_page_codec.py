"""encode_page -> PageDecoder round trips for every 2.0 page kind, and corrupt trees."""
import decimal

import numpy as np
import pyarrow as pa
import pytest

from lancefmt._proto import encodings_v2_0_pb2 as pb
from lancefmt.encoding.v2_0.page_decoder import PageDecoder
from lancefmt.encoding.v2_0.page_encoder import (PageOptions, encode_list_offsets, encode_page,
                                                 struct_header_page)
from lancefmt.errors import CorruptFileError, UnsupportedFeatureError


def _buffers(page):
    return [b if isinstance(b, pa.Buffer) else pa.py_buffer(b) for b in page.buffers]


def round_trip(arr, options=None):
    page = encode_page(arr, options)
    enc = pb.ArrayEncoding.FromString(page.encoding.SerializeToString())
    out = PageDecoder(_buffers(page), "test.lance", "page").decode(enc, len(arr), arr.type)
    out.validate(full=True)
    return page, out


ARRAYS = {
    "int8": pa.array([1, None, -3], pa.int8()),
    "uint64": pa.array([0, 2**64 - 1, None], pa.uint64()),
    "float16": pa.array(np.array([1.5, -2, 0], np.float16)),
    "float64": pa.array([1.5, None, float("inf")]),
    "bool": pa.array([True, None, False, True, True, False, False, True, True, None]),
    "date32": pa.array([1, None], pa.date32()),
    "date64": pa.array([86400000, None], pa.date64()),
    "time32": pa.array([1, None], pa.time32("ms")),
    "time64": pa.array([1, None], pa.time64("ns")),
    "timestamp_tz": pa.array([1, None, 3], pa.timestamp("us", tz="Europe/Paris")),
    "duration": pa.array([1, None], pa.duration("s")),
    "decimal128": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(9, 2)),
    "decimal256": pa.array([decimal.Decimal("-1.25"), None], pa.decimal256(50, 2)),
    "fsb": pa.array([b"ab", None, b"cd"], pa.binary(2)),
    "string": pa.array(["a", "", None, "dddd"]),
    "large_string": pa.array(["a", "", None, "dddd"], pa.large_string()),
    "binary": pa.array([b"\x00", b"", None], pa.binary()),
    "large_binary": pa.array([b"\x00", None], pa.large_binary()),
    "all_null_string": pa.array([None, None], pa.string()),
    "empty_strings": pa.array(["", ""]),
    "fsl": pa.array([[1.0, 2.0], None, [3.0, None]], pa.list_(pa.float32(), 2)),
    "fsl_fsl": pa.array([[[1, 2], [3, 4]], None], pa.list_(pa.list_(pa.int32(), 2), 2)),
    "all_null_int": pa.array([None, None, None], pa.int64()),
    "null": pa.nulls(4),
    "dict_strings": pa.array(["x", None, "y", "x"]).dictionary_encode(),
    "dict_ints": pa.array([5, None, 5]).dictionary_encode(),
    "dict_int8_large_string": pa.array(["a", "b", None]).dictionary_encode().cast(
        pa.dictionary(pa.int8(), pa.large_string())),
    "empty_int": pa.array([], pa.int32()),
}


@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_round_trip(name):
    arr = ARRAYS[name]
    page, out = round_trip(arr)
    if pa.types.is_dictionary(arr.type):
        # null rows point at a null dictionary item (as pylance reads them back)
        assert out.cast(arr.type.value_type).equals(arr.cast(arr.type.value_type))
    else:
        assert out.equals(arr)


@pytest.mark.parametrize("name", ["int8", "bool", "string", "large_string", "fsl", "fsb",
                                  "timestamp_tz", "dict_strings"])
@pytest.mark.parametrize("offset", [1, 3, 8, 9])
def test_sliced_arrays(name, offset):
    base = ARRAYS[name]
    arr = pa.concat_arrays([base] * 6).slice(offset, 5)
    _, out = round_trip(arr)
    if pa.types.is_dictionary(arr.type):
        assert out.cast(arr.type.value_type).equals(arr.cast(arr.type.value_type))
    else:
        assert out.equals(arr)


def test_fixed_width_decode_is_zero_copy():
    arr = pa.array(np.arange(1000, dtype=np.int64))
    page = encode_page(arr)
    bufs = _buffers(page)
    out = PageDecoder(bufs, None, "p").decode(page.encoding, 1000, pa.int64())
    assert out.buffers()[1].address == bufs[0].address


def test_nullable_layouts_match_lance():
    assert encode_page(pa.array([1, 2], pa.int32())).encoding.nullable.HasField("no_nulls")
    some = encode_page(pa.array([1, None], pa.int32()))
    sn = some.encoding.nullable.some_nulls
    assert sn.validity.flat.bits_per_value == 1 and sn.validity.flat.buffer.buffer_index == 0
    assert sn.values.flat.bits_per_value == 32 and sn.values.flat.buffer.buffer_index == 1
    assert encode_page(pa.array([None], pa.int32())).encoding.nullable.HasField("all_nulls")
    assert encode_page(pa.array([None], pa.int32())).buffers == []


def test_low_cardinality_strings_become_a_u8_dictionary():
    arr = pa.array([None if i % 7 == 0 else "abc"[i % 3] for i in range(300)])
    page, out = round_trip(arr)
    d = page.encoding.dictionary
    assert d.num_dictionary_items == 3
    assert d.indices.nullable.no_nulls.values.flat.bits_per_value == 8
    idx = np.frombuffer(page.buffers[0], np.uint8)
    assert idx[0] == 0 and idx[7] == 0 and set(idx[1:7]) <= {1, 2, 3}
    assert out.equals(arr)


def test_dictionary_thresholds():
    few = pa.array(["a", "b"] * 49)           # 98 rows: too few for a dictionary
    assert encode_page(few).encoding.WhichOneof("array_encoding") == "binary"
    many = pa.array([str(i % 100) for i in range(1000)])  # 100 distinct values: too many
    assert encode_page(many).encoding.WhichOneof("array_encoding") == "binary"
    large = pa.array(["a"] * 200, pa.large_string())       # only utf8 qualifies
    assert encode_page(large).encoding.WhichOneof("array_encoding") == "binary"
    nulls = pa.array([None] * 200, pa.string())
    page, out = round_trip(nulls)
    assert page.encoding.dictionary.num_dictionary_items == 1 and out.equals(nulls)


@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
def test_compressed_strings(scheme):
    arr = pa.array([None if i % 5 == 0 else f"value number {i}" for i in range(2000)])
    page, out = round_trip(arr, PageOptions(compression=scheme))
    assert page.encoding.binary.bytes.flat.compression.scheme == scheme
    assert out.equals(arr)


def test_compression_options_from_metadata():
    o = PageOptions.from_metadata({b"lance-encoding:compression": b"zstd",
                                   b"lance-encoding:compression-level": b"7"})
    assert (o.compression, o.compression_level) == ("zstd", 7)
    assert PageOptions.from_metadata({"lance-encoding:compression": "fsst"}).compression is None


def test_packed_struct():
    arr = pa.StructArray.from_arrays(
        [pa.array([1, 2, 3], pa.int32()), pa.array([0.5, 1.5, 2.5]),
         pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.uint8(), 2))], names=["a", "b", "c"])
    page, out = round_trip(arr.slice(1))
    assert page.encoding.WhichOneof("array_encoding") == "packed_struct"
    assert len(page.buffers) == 1 and np.asarray(page.buffers[0]).nbytes == 2 * (4 + 8 + 2)
    assert out.equals(arr.slice(1))


def test_list_offsets_page():
    offsets = np.array([0, 2, 2, 2, 3], dtype=np.int64)
    validity = np.packbits(np.array([1, 1, 0, 1], bool), bitorder="little")
    page = encode_list_offsets(offsets, validity, 3)
    assert page.encoding.list.null_offset_adjustment == 4 and page.encoding.list.num_items == 3
    assert np.frombuffer(page.buffers[0], np.uint64).tolist() == [2, 2, 6, 3]
    out, valid, n = PageDecoder(_buffers(page), None, "p").list_offsets(page.encoding, 4)
    assert out.tolist() == offsets.tolist() and n == 3
    assert np.unpackbits(valid, count=4, bitorder="little").tolist() == [1, 1, 0, 1]


def test_struct_header_page():
    page = struct_header_page(7)
    assert page.encoding.WhichOneof("array_encoding") == "struct" and page.buffers == []


# -- corrupt and unsupported trees -----------------------------------------------------------


def flat(bits, index=0):
    return pb.ArrayEncoding(flat=pb.Flat(bits_per_value=bits, buffer=pb.Buffer(buffer_index=index)))


def test_short_buffer_is_corrupt():
    with pytest.raises(CorruptFileError, match="too short"):
        PageDecoder([pa.py_buffer(b"\x00" * 7)], "f", "p").decode(flat(64), 1, pa.int64())


def test_wrong_width_is_corrupt():
    with pytest.raises(CorruptFileError):
        PageDecoder([pa.py_buffer(b"\x00" * 8)], "f", "p").decode(flat(32), 2, pa.int64())


def test_missing_buffer_is_corrupt():
    with pytest.raises(CorruptFileError, match="buffer 3"):
        PageDecoder([], "f", "p").decode(flat(8, 3), 1, pa.int8())


def test_unknown_encoding_is_unsupported_and_named():
    enc = pb.ArrayEncoding(fsst=pb.Fsst(binary=flat(8)))
    with pytest.raises(UnsupportedFeatureError, match="fsst") as e:
        PageDecoder([], "some/file.lance", "column 2 page 0").decode(enc, 1, pa.string())
    assert "some/file.lance" in str(e.value)
    with pytest.raises(UnsupportedFeatureError, match="bitpacked"):
        PageDecoder([], "f", "p").decode(pb.ArrayEncoding(bitpacked=pb.Bitpacked()), 1, pa.int32())


def test_bad_string_offsets_are_corrupt():
    page = encode_page(pa.array(["ab", "cd"]))
    ends = pa.py_buffer(np.array([2, 20], np.uint64).tobytes())  # 20 - 5 > 4 bytes
    with pytest.raises(CorruptFileError, match="row 1"):
        PageDecoder([ends, pa.py_buffer(page.buffers[1])], "f", "p").decode(
            page.encoding, 2, pa.string())


def test_dictionary_index_out_of_range_is_corrupt():
    arr = pa.array(["x", "y", None]).dictionary_encode()
    page = encode_page(arr)
    bufs = _buffers(page)
    bad = np.frombuffer(bufs[0], np.int32).copy()
    bad[1] = 99
    bufs[0] = pa.py_buffer(bad.tobytes())
    with pytest.raises(CorruptFileError, match="past the"):
        PageDecoder(bufs, "f", "p").decode(page.encoding, 3, arr.type)


def test_fsl_dimension_mismatch_is_corrupt():
    arr = pa.array([[1, 2]], pa.list_(pa.int32(), 2))
    page = encode_page(arr)
    with pytest.raises(CorruptFileError, match="dimension"):
        PageDecoder(_buffers(page), "f", "p").decode(page.encoding, 1, pa.list_(pa.int32(), 3))
