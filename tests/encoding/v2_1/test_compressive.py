"""Compressive decoders on the worked examples of lance_v21_encodings.md (real pylance 14.0.2
bytes, quoted there) and on hand-built buffers; bad input gives LanceErrors naming the file."""
import struct
import tracemalloc

import numpy as np
import pytest

from lancefmt._proto import encodings_v2_1_pb2 as pb
from lancefmt.encoding import compression
from lancefmt.encoding.v2_1 import _fastlanes
from lancefmt.encoding.v2_1.compressive import (FullZipValues, decode_block, decode_levels,
                                                decode_miniblock, gather_dictionary)
from lancefmt.encoding.v2_1.values import (FixedSizeListValues, FixedValues, StructValues,
                                           VariableValues)
from lancefmt.errors import CorruptFileError, UnsupportedFeatureError

PATH = "mem://t.lance"


def h(s: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(s.replace(" ", "")), np.uint8)


def flat(bits):
    e = pb.CompressiveEncoding()
    e.flat.bits_per_value = bits
    return e


def variable(bits=32):
    e = pb.CompressiveEncoding()
    e.variable.offsets.CopyFrom(flat(bits))
    return e


def inline(t):
    e = pb.CompressiveEncoding()
    e.inline_bitpacking.uncompressed_bits_per_value = t
    return e


def ool(t, w):
    e = pb.CompressiveEncoding()
    e.out_of_line_bitpacking.uncompressed_bits_per_value = t
    e.out_of_line_bitpacking.values.CopyFrom(flat(w))
    return e


def rle(bits):
    e = pb.CompressiveEncoding()
    e.rle.values.CopyFrom(flat(bits))
    e.rle.run_lengths.CopyFrom(flat(8))
    return e


def general(scheme, inner):
    e = pb.CompressiveEncoding()
    e.general.compression.scheme = scheme
    e.general.values.CopyFrom(inner)
    return e


def fsl(dim, inner, has_validity=False):
    e = pb.CompressiveEncoding()
    e.fixed_size_list.items_per_value = dim
    e.fixed_size_list.has_validity = has_validity
    e.fixed_size_list.values.CopyFrom(inner)
    return e


def fsst(table: bytes, inner=None):
    e = pb.CompressiveEncoding()
    e.fsst.symbol_table = table
    e.fsst.values.CopyFrom(inner or variable(32))
    return e


def strings(v: VariableValues):
    return [v.data[v.offsets[i]:v.offsets[i + 1]].tobytes() for i in range(v.num_values)]


def ints(v: FixedValues, dtype):
    return v.data.view(dtype)[:v.num_values].tolist()


# ---------------------------------------------------------------- worked examples (§4.3, §3.6)

def test_nullable_int32_chunk():
    defs = decode_levels(flat(16), h("0000 0100 0000 0000 0100"), 5)
    assert defs.dtype == np.uint16 and defs.tolist() == [0, 1, 0, 0, 1]
    vals = decode_miniblock(flat(32), [h("01000000 00000000 03000000 04000000 00000000")], 5)
    assert isinstance(vals, FixedValues) and ints(vals, np.int32) == [1, 0, 3, 4, 0]


def test_variable_miniblock_with_chunk_relative_offsets():
    buf = h("18000000 19000000 1b000000 1b000000 1f000000 1f000000") + 0
    buf = np.concatenate([buf, np.frombuffer(b"abbdddd", np.uint8), h("48")])
    v = decode_miniblock(variable(32), [buf], 5)
    assert strings(v) == [b"a", b"bb", b"", b"dddd", b""]
    assert v.offsets.dtype == np.int64 and v.offsets[0] == 0


def test_variable_block_32_and_64():
    b32 = np.concatenate([h("20000000 20000000 00000000 05000000 09000000 0e000000 12000000 "
                            "17000000"), np.frombuffer(b"DEBUGWARNTRACEINFOERROR", np.uint8)])
    assert strings(decode_block(variable(32), b32, 5)) == [b"DEBUG", b"WARN", b"TRACE",
                                                          b"INFO", b"ERROR"]
    b64 = np.concatenate([h("4000000000000000 3000000000000000"),
                          np.array([0, 2, 5, 6], "<u8").view(np.uint8),
                          np.frombuffer(b"aabbbc", np.uint8)])
    v = decode_block(variable(64), b64, 3)
    assert strings(v) == [b"aa", b"bbb", b"c"] and v.offset_bits == 64


def test_rle_miniblock_example():
    v = decode_miniblock(rle(32), [h("05000000 05000000 07000000 09000000"), h("ff 2d c8 64")],
                         600)
    assert ints(v, np.int32) == [5] * 300 + [7] * 200 + [9] * 100


def test_rle_block_levels_example():
    buf = np.concatenate([h("1200000000000000"), h("0100" * 9), h("ff" * 8 + "07")])
    lv = decode_levels(rle(16), buf, 2047)
    assert lv.dtype == np.uint16 and lv.size == 2047 and np.all(lv == 1)


def test_fsl_with_validity_example():
    floats = np.array([1, 2, 0, 0, 0, 4, 5, 6, 7, 8], np.float32).view(np.uint8)
    v = decode_miniblock(fsl(2, flat(32), True), [h("e303"), floats], 5)
    assert isinstance(v, FixedSizeListValues) and v.dim == 2 and v.num_values == 5
    assert v.validity.tolist() == [True, True, False, False, False, True, True, True, True, True]
    assert v.child.num_values == 10
    assert v.child.data.view(np.float32)[-1] == 8


def test_nested_fsl_buffers_outer_first():
    rows = 3   # fsl<fsl<u8,2>,3>, both with validity
    outer_bits = np.packbits(np.ones(rows * 3, bool), bitorder="little")
    inner_bits = np.packbits(np.arange(rows * 6) % 2 == 0, bitorder="little")
    data = np.arange(rows * 6, dtype=np.uint8)
    v = decode_miniblock(fsl(3, fsl(2, flat(8), True), True), [outer_bits, inner_bits, data],
                         rows)
    assert v.dim == 3 and v.validity.all() and v.child.dim == 2
    assert v.child.num_values == 9 and v.child.validity.tolist() == [i % 2 == 0
                                                                      for i in range(18)]
    assert v.child.child.data.tolist() == list(range(18))


def test_bool_bitmap_flat():
    v = decode_miniblock(flat(1), [h("a5 01")], 9)
    assert v.bits_per_value == 1 and v.data.size == 2


def test_wide_flat_128():
    raw = np.arange(48, dtype=np.uint8)
    v = decode_miniblock(flat(128), [raw], 3)
    assert v.bits_per_value == 128 and v.data.tolist() == list(range(48))


# ---------------------------------------------------------------- bit-packing

def test_inline_bitpacking_chunk_u8_width3():
    v = ((np.arange(1024) // 128) % 8).astype(np.uint8)
    chunk = np.concatenate([h("03"), _fastlanes.pack(v, 8, 3)])
    assert chunk.size == 385
    out = decode_miniblock(inline(8), [chunk], 1024)
    assert np.array_equal(out.data, v)


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_inline_bitpacking_partial_last_block_and_block_context(t):
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[t]
    vals = (np.arange(1500) % 5).astype(dt)
    groups = []
    for g in range(2):
        blk = np.zeros(1024, dt)
        part = vals[g * 1024:(g + 1) * 1024]
        blk[:part.size] = part
        groups += [np.array([3], dt).view(np.uint8), _fastlanes.pack(blk, t, 3)]
    buf = np.concatenate(groups)
    out = decode_block(inline(t), buf, 1500)
    assert np.array_equal(out.data.view(dt), vals)
    one = decode_miniblock(inline(t), [np.concatenate(groups[2:])], 1500 - 1024)
    assert np.array_equal(one.data.view(dt), vals[1024:])


@pytest.mark.parametrize("n,raw_tail", [(512, False), (32, True), (2048 + 32, True),
                                        (1024 + 900, False)])
def test_out_of_line_bitpacking_tail_forms(n, raw_tail):
    levels = (np.arange(n) % 3 == 0).astype(np.uint16)
    full, tail = divmod(n, 1024)
    padded = np.zeros(((n + 1023) // 1024) * 1024, np.uint16)
    padded[:n] = levels
    packed = _fastlanes.pack(padded, 16, 1)
    if raw_tail:
        buf = np.concatenate([packed[:full * 128], levels[full * 1024:].view(np.uint8)])
    else:
        buf = packed
    assert np.array_equal(decode_levels(ool(16, 1), buf, n), levels)


def test_ool_def_worked_example_prefix():
    # §2.4: 512 def levels of a column whose every third row is null, first bytes 09 02 02 04
    levels = (np.arange(512) % 3 == 0).astype(np.uint16)
    padded = np.zeros(1024, np.uint16)
    padded[:512] = levels
    packed = _fastlanes.pack(padded, 16, 1)
    assert packed[:4].tolist() == [0x09, 0x02, 0x02, 0x04]


# ---------------------------------------------------------------- general, BSS, FSST

@pytest.mark.parametrize("scheme,name", [(1, "lz4"), (2, "zstd")])
def test_general_compresses_only_buffer_zero(scheme, name):
    vals = np.repeat(np.arange(8, dtype=np.uint32), 10)
    # run values compressed, run lengths left raw
    runs = np.arange(8, dtype=np.uint32).view(np.uint8)
    comp = np.frombuffer(compression.compress(name, runs.tobytes()), np.uint8)
    out = decode_miniblock(general(scheme, rle(32)), [comp, np.full(8, 10, np.uint8)], 80)
    assert np.array_equal(out.data.view(np.uint32), vals)
    data = np.arange(600, dtype=np.float64)
    block = np.frombuffer(compression.compress(name, data.tobytes()), np.uint8)
    got = decode_block(general(scheme, flat(64)), block, 600)
    assert np.array_equal(got.data.view(np.float64), data)


def test_byte_stream_split():
    vals = np.array([1.5, -2.0, 3.25], np.float32)
    streams = vals.view(np.uint8).reshape(3, 4).T.reshape(-1)
    e = pb.CompressiveEncoding()
    e.byte_stream_split.values.CopyFrom(flat(32))
    out = decode_miniblock(e, [streams], 3)
    assert np.array_equal(out.data.view(np.float32), vals)


def fsst_table(symbols: list[bytes], switch=True) -> bytes:
    header = (0x46535354 << 32) | (int(switch) << 24) | len(symbols)
    body = b"".join(s.ljust(8, b"\0") for s in symbols) + bytes(len(s) for s in symbols)
    return (struct.pack("<Q", header) + body).ljust(2312, b"\0")


def test_fsst_decode_symbols_and_escape():
    table = fsst_table([b"common_p", b"r", b"\xce\xa9", b"mega-"])
    codes = [bytes([0, 1, 255, 0xBB, 2]), b"", bytes([2, 3, 255, 0x30])]
    offs = np.cumsum([0] + [len(c) for c in codes])
    buf = np.concatenate([((offs + 4 * 4).astype("<u4")).view(np.uint8),
                          np.frombuffer(b"".join(codes), np.uint8)])
    v = decode_miniblock(fsst(table), [buf], 3)
    assert strings(v) == [b"common_pr\xbb\xce\xa9", b"", "Ωmega-0".encode()]


def test_fsst_switch_off_is_raw_copy():
    table = fsst_table([], switch=False)
    buf = np.concatenate([np.array([12, 14, 15], "<u4").view(np.uint8),
                          np.frombuffer(b"v0v", np.uint8)])
    assert strings(decode_miniblock(fsst(table), [buf], 2)) == [b"v0", b"v"]


@pytest.mark.parametrize("codes", [bytes([9]), bytes([0, 255])])
def test_fsst_bad_code_or_cut_escape(codes):
    table = fsst_table([b"ab"])
    buf = np.concatenate([np.array([8, 8 + len(codes)], "<u4").view(np.uint8),
                          np.frombuffer(codes, np.uint8)])
    with pytest.raises(CorruptFileError, match=PATH):
        decode_miniblock(fsst(table), [buf], 1, path=PATH)


# ---------------------------------------------------------------- packed structs, dictionaries

def test_packed_struct_rows():
    e = pb.CompressiveEncoding()
    e.packed_struct.bits_per_value.extend([32, 64, 16])
    e.packed_struct.values.CopyFrom(flat(112))
    rows = b"".join(struct.pack("<idh", i, i / 2, -i) for i in range(5))
    v = decode_miniblock(e, [np.frombuffer(rows, np.uint8)], 5)
    assert isinstance(v, StructValues) and len(v.children) == 3
    assert ints(v.children[0], np.int32) == [0, 1, 2, 3, 4]
    assert v.children[1].data.view(np.float64).tolist() == [0, 0.5, 1, 1.5, 2]
    assert ints(v.children[2], np.int16) == [0, -1, -2, -3, -4]


def test_gather_dictionary_variable_fixed_and_bits():
    d = decode_block(variable(32), np.concatenate([
        h("20000000 20000000 00000000 05000000 09000000 0e000000 12000000 17000000"),
        np.frombuffer(b"DEBUGWARNTRACEINFOERROR", np.uint8)]), 5)
    got = gather_dictionary(d, np.array([4, 0, 0, 2], np.uint32))
    assert strings(got) == [b"ERROR", b"DEBUG", b"DEBUG", b"TRACE"]
    fx = FixedValues(64, 3, np.array([10, 20, 30], np.int64).view(np.uint8))
    assert ints(gather_dictionary(fx, np.array([2, 2, 0])), np.int64) == [30, 30, 10]
    bits = FixedValues(1, 3, np.array([0b101], np.uint8))
    out = gather_dictionary(bits, np.array([1, 0, 2, 1]))
    assert np.unpackbits(out.data, count=4, bitorder="little").tolist() == [0, 1, 1, 0]
    with pytest.raises(CorruptFileError, match=PATH):
        gather_dictionary(d, np.array([5]), path=PATH)


# ---------------------------------------------------------------- full-zip per value

def test_fullzip_fixed_fsl_with_validity():
    e = fsl(64, flat(32), True)
    fz = FullZipValues(e, path=PATH)
    assert fz.bits_per_value == (8 + 256) * 8 and fz.offset_bits is None
    rows = []
    for r in range(2):
        valid = np.ones(64, bool)
        valid[r] = False
        rows.append(np.concatenate([np.packbits(valid, bitorder="little"),
                                    np.arange(64, dtype=np.float32).view(np.uint8) + r]))
    raw = FixedValues(fz.bits_per_value, 2, np.concatenate(rows))
    v = fz.decode(raw)
    assert isinstance(v, FixedSizeListValues) and v.num_values == 2 and v.dim == 64
    assert v.validity.sum() == 126 and not v.validity[0] and not v.validity[65]
    assert v.child.num_values == 128 and v.child.data.size == 128 * 4


def _var(pieces, bits=32):
    offs = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
    return VariableValues(len(pieces), offs, np.frombuffer(b"".join(pieces), np.uint8), bits)


def test_fullzip_per_value_zstd_and_fsst():
    fz = FullZipValues(general(2, variable(32)), path=PATH)
    assert fz.offset_bits == 32 and fz.bits_per_value is None
    big = b"x" * 40000
    raw = _var([compression.compress("zstd", big), b"", compression.compress("zstd", b"hi")])
    assert strings(fz.decode(raw)) == [big, b"", b"hi"]
    fz2 = FullZipValues(fsst(fsst_table([b"abc"])), path=PATH)
    assert strings(fz2.decode(_var([bytes([0, 0, 255, 0x21])]))) == [b"abcabc!"]


def test_fullzip_variable_packed_struct():
    e = pb.CompressiveEncoding()
    f1 = e.variable_packed_struct.fields.add()
    f1.bits_per_value = 32
    f1.value.CopyFrom(flat(32))
    f2 = e.variable_packed_struct.fields.add()
    f2.bits_per_length = 32
    f2.value.CopyFrom(variable(32))
    f3 = e.variable_packed_struct.fields.add()
    f3.bits_per_value = 64
    f3.value.CopyFrom(flat(64))
    fz = FullZipValues(e, path=PATH)
    rows = [struct.pack("<iI", 7, 3) + b"abc" + struct.pack("<d", 1.5), b"",
            struct.pack("<iI", 9, 0) + struct.pack("<d", -1.0)]
    v = fz.decode(_var(rows))
    assert isinstance(v, StructValues)
    assert ints(v.children[0], np.int32) == [7, 0, 9]
    assert strings(v.children[1]) == [b"abc", b"", b""]
    assert v.children[2].data.view(np.float64).tolist() == [1.5, 0.0, -1.0]
    with pytest.raises(CorruptFileError, match=PATH):
        fz.decode(_var([struct.pack("<iI", 7, 99) + b"abc"]))


# ---------------------------------------------------------------- bad input

def test_short_buffers_are_corrupt_and_name_the_file():
    with pytest.raises(CorruptFileError, match=PATH):
        decode_miniblock(flat(64), [np.zeros(12, np.uint8)], 5, path=PATH)
    with pytest.raises(CorruptFileError, match=PATH):
        decode_miniblock(inline(64), [h("2800000000000000")], 1024, path=PATH)
    with pytest.raises(CorruptFileError, match="exceeds"):
        decode_miniblock(inline(8), [h("09")], 10, path=PATH)
    with pytest.raises(CorruptFileError, match=PATH):
        decode_miniblock(variable(32), [h("08000000 ff000000")], 1, path=PATH)
    with pytest.raises(CorruptFileError, match=PATH):
        decode_block(variable(32), h("20000000 ffffff00 00000000"), 1, path=PATH)
    with pytest.raises(CorruptFileError, match=PATH):
        decode_levels(ool(16, 3), np.zeros(12, np.uint8), 4000, path=PATH)
    with pytest.raises(CorruptFileError, match=PATH):
        decode_miniblock(rle(32), [h("05000000"), h("ff")], 10, path=PATH)


def test_huge_claims_never_allocate():
    """A 12-byte buffer claiming gigabytes is refused before any allocation."""
    tracemalloc.start()
    try:
        for scheme in (1, 2):
            with pytest.raises(CorruptFileError, match=PATH):
                decode_block(general(scheme, variable(32)), h("ffffffff ffff0000 28b52ffd"), 10,
                             path=PATH)
            with pytest.raises(CorruptFileError, match=PATH):
                decode_miniblock(general(scheme, flat(64)), [h("00000010 00000000 28b52ffd")],
                                 10, path=PATH)
        with pytest.raises(CorruptFileError, match=PATH):
            decode_block(rle(16), h("ffffffffffffff7f 0100 ff"), 1 << 40, path=PATH)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_unsupported_encodings_are_named():
    for name in ("range", "delta"):
        e = pb.CompressiveEncoding()
        getattr(e, name).uncompressed_bits_per_value = 64
        with pytest.raises(UnsupportedFeatureError, match="2.3") as ei:
            decode_miniblock(e, [np.zeros(8, np.uint8)], 1, path=PATH)
        assert PATH in str(ei.value) and name in str(ei.value)
    bad = general(7, flat(32))
    with pytest.raises(UnsupportedFeatureError, match=PATH):
        decode_block(bad, np.zeros(16, np.uint8), 1, path=PATH)
    d = pb.CompressiveEncoding()
    d.dictionary.num_dictionary_items = 1
    with pytest.raises(UnsupportedFeatureError, match="dictionary"):
        decode_miniblock(d, [np.zeros(8, np.uint8)], 1, path=PATH)
    with pytest.raises(CorruptFileError, match=PATH):
        decode_miniblock(pb.CompressiveEncoding(), [np.zeros(8, np.uint8)], 1, path=PATH)


def test_fsst_output_growth_beyond_first_guess():
    """8-byte symbols expand 8x, past the decoder's first 3x output guess."""
    table = fsst_table([b"abcdefgh", b"z"])
    codes = [bytes([0] * k + [1]) for k in range(200)]
    offs = np.cumsum([0] + [len(c) for c in codes])
    head = (len(codes) + 1) * 4
    buf = np.concatenate([((offs + head).astype("<u4")).view(np.uint8),
                          np.frombuffer(b"".join(codes), np.uint8)])
    v = decode_miniblock(fsst(table), [buf], len(codes))
    assert strings(v) == [b"abcdefgh" * k + b"z" for k in range(200)]
