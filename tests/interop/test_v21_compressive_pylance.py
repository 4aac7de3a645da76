"""The 2.1/2.2 compressive decoders on real pylance 14.0.2 files, encoding by encoding.

Each case writes one column with pylance (default settings or field metadata that steers its
encoder), asserts through pylance's own ``LanceFileReader.metadata()`` that the encoding it
covers really is in the file, cuts the pages with a small test-only parser
(``pylance21_pages``), decodes values, levels and dictionaries with
``lancefmt.encoding.v2_1.compressive`` and compares the whole column with pylance's read.
"""
import decimal

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("lance")

from pylance21_pages import chunks, field, fullzip_values, pages, pylance_encodings, write  # noqa: E402

from lancefmt._proto import encodings_v2_1_pb2 as pb  # noqa: E402
from lancefmt.encoding.v2_1.compressive import (FullZipValues, decode_block,  # noqa: E402
                                                decode_levels, decode_miniblock,
                                                gather_dictionary)
from lancefmt.errors import CorruptFileError  # noqa: E402
from lancefmt.encoding.v2_1.values import (FixedSizeListValues, FixedValues,  # noqa: E402
                                           StructValues, VariableValues)

VERSIONS = ["2.1", "2.2"]
N = 5000
rng = np.random.default_rng(11)


def _concat(blocks):
    """Concatenate per-chunk blocks of one page (test-only; the structural layer does this)."""
    b0 = blocks[0]
    n = sum(b.num_values for b in blocks)
    if isinstance(b0, FixedValues):
        if b0.bits_per_value == 1:
            bits = np.concatenate([np.unpackbits(b.data, count=b.num_values, bitorder="little")
                                   for b in blocks])
            return FixedValues(1, n, np.packbits(bits, bitorder="little"))
        w = b0.bits_per_value // 8
        return FixedValues(b0.bits_per_value, n,
                           np.concatenate([b.data[:b.num_values * w] for b in blocks]))
    if isinstance(b0, VariableValues):
        offs, datas, base = [np.zeros(1, np.int64)], [], 0
        for b in blocks:
            offs.append(b.offsets[1:] + base)
            datas.append(b.data[:b.offsets[-1]])
            base += int(b.offsets[-1])
        return VariableValues(n, np.concatenate(offs), np.concatenate(datas), b0.offset_bits)
    if isinstance(b0, FixedSizeListValues):
        child = _concat([b.child for b in blocks])
        val = None if b0.validity is None else np.concatenate([b.validity for b in blocks])
        return FixedSizeListValues(b0.dim, n, child, val)
    if isinstance(b0, StructValues):
        return StructValues(n, [_concat([b.children[i] for b in blocks])
                                for i in range(len(b0.children))])
    raise TypeError(type(b0))


def decode_page(page, path):
    """(values block, def levels or None, rep levels or None) of one page."""
    which = page.layout.WhichOneof("layout")
    if which == "mini_block_layout":
        mb = page.layout.mini_block_layout
        blocks, defs, reps = [], [], []
        for c in chunks(page):
            blocks.append(decode_miniblock(mb.value_compression, c.values, c.num_values,
                                           path=path))
            if c.def_ is not None:
                defs.append(decode_levels(mb.def_compression, c.def_, c.num_levels, path=path))
            if c.rep is not None:
                reps.append(decode_levels(mb.rep_compression, c.rep, c.num_levels, path=path))
        block = _concat(blocks)
        if mb.HasField("dictionary"):
            items = decode_block(mb.dictionary, page.buffers[2], mb.num_dictionary_items,
                                 path=path)
            assert isinstance(block, FixedValues) and block.bits_per_value == 32
            block = gather_dictionary(items, block.data.view(np.uint32)[:block.num_values],
                                      path=path)
        return (block, np.concatenate(defs) if defs else None,
                np.concatenate(reps) if reps else None)
    if which == "full_zip_layout":
        fz = page.layout.full_zip_layout
        fzv = FullZipValues(fz.value_compression, path=path)
        fixed, var = fullzip_values(page)
        if fixed is not None:
            assert fzv.bits_per_value == fz.bits_per_value
            raw = FixedValues(fz.bits_per_value, fz.num_items, np.frombuffer(fixed, np.uint8))
        else:
            assert fzv.offset_bits == fz.bits_per_offset
            raw = VariableValues(fz.num_items, var[0], var[1], fz.bits_per_offset)
        return fzv.decode(raw), None, None
    raise AssertionError(f"layout {which} is not the compressive layer's")


def to_arrow(block, typ, validity=None):
    mask = None if validity is None else pa.py_buffer(np.packbits(validity, bitorder="little"))
    if isinstance(block, FixedValues):
        return pa.Array.from_buffers(typ, block.num_values, [mask, pa.py_buffer(block.data)])
    if isinstance(block, VariableValues):
        large = pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)
        offs = block.offsets.astype(np.int64 if large else np.int32)
        return pa.Array.from_buffers(typ, block.num_values,
                                     [mask, pa.py_buffer(offs), pa.py_buffer(block.data)])
    if isinstance(block, FixedSizeListValues):
        child = to_arrow(block.child, typ.value_type, block.validity)
        return pa.Array.from_buffers(typ, block.num_values, [mask], children=[child])
    if isinstance(block, StructValues):
        kids = [to_arrow(c, f.type) for c, f in zip(block.children, typ)]
        return pa.StructArray.from_arrays(kids, fields=list(typ),
                                          mask=None if validity is None else pa.array(~validity))
    raise TypeError(type(block))


def read_with_lancefmt(path, typ):
    arrays = []
    for page in pages(path):
        block, defs, reps = decode_page(page, path)
        if reps is not None:   # list<item> with all-valid layers: rep 1 starts a row
            assert defs is None
            starts = np.flatnonzero(reps == 1)
            offs = np.append(starts, reps.size).astype(np.int32)
            items = to_arrow(block, typ.value_type)
            arrays.append(pa.ListArray.from_arrays(pa.array(offs), items))
            continue
        validity = None if defs is None else defs == 0
        arrays.append(to_arrow(block, typ, validity))
    return pa.chunked_array(arrays, typ).combine_chunks()


def _strs(n, f):
    return [f(i) for i in range(n)]


CASES = {
    # name: (field, array, {version: [substrings pylance's metadata must show]})
    "bitpack_int64_seq": (field("x", pa.int64()), pa.array(np.arange(N, dtype=np.int64) * 3),
                          {"*": ["InlineBitpacking { uncompressed_bits_per_value: 64"]}),
    "bitpack_u8": (field("x", pa.uint8()), pa.array(rng.integers(0, 100, N).astype(np.uint8)),
                   {"*": ["InlineBitpacking { uncompressed_bits_per_value: 8"]}),
    "bitpack_u8_worked_example": (field("x", pa.uint8(), rle_threshold=0),
                                  pa.array(((np.arange(1024) // 128) % 8).astype(np.uint8)),
                   {"*": ["InlineBitpacking { uncompressed_bits_per_value: 8"]}),
    "bitpack_int16_nullable": (
        field("x", pa.int16()),
        pa.array([None if i % 3 == 0 else i % 1000 for i in range(N)], pa.int16()),
        {"*": ["InlineBitpacking { uncompressed_bits_per_value: 16", "OutOfLineBitpacking"]}),
    "flat_f64": (field("x", pa.float64()), pa.array(rng.normal(size=N)),
                 {"*": ["Flat { bits_per_value: 64"]}),
    "flat_bool": (field("x", pa.bool_()), pa.array(rng.random(N) < 0.3),
                  {"*": ["Flat { bits_per_value: 1,"]}),
    "flat_int32_none": (field("x", pa.int32(), compression="none"),
                        pa.array(rng.integers(-50, 50, N).astype(np.int32)),
                        {"*": ["Flat { bits_per_value: 32"]}),
    "variable_binary": (field("x", pa.binary()),
                        pa.array([rng.bytes(int(k)) for k in rng.integers(0, 30, N)]),
                        {"*": ["Variable {"]}),
    "fsst_strings": (field("x", pa.string(), compression="fsst"),
                     pa.array(_strs(20000, lambda i: f"common_prefix_{i}_suffix")),
                     {"*": ["Fsst {"]}),
    "fsst_nullable_strings": (
        field("x", pa.string()),
        pa.array(_strs(N, lambda i: None if i % 11 == 0 else f"Ωmega-{i}")),
        {"*": ["Fsst {"]}),
    "large_string_plain": (field("x", pa.large_string(), compression="none"),
                           pa.array(_strs(N, lambda i: f"s{i * 7919}"), pa.large_string()),
                           {"*": ["Variable {"]}),
    "rle_int32": (field("x", pa.int32(), rle_threshold=0.5),
                  pa.array(np.repeat(np.arange(10, dtype=np.int32), 500)),
                  {"*": ["Rle {"]}),
    "rle_f64": (field("x", pa.float64(), rle_threshold=0.5),
                pa.array(np.repeat(rng.normal(size=20), 250)),
                {"*": ["Rle {"]}),
    "general_zstd_f64": (field("x", pa.float64(), compression="zstd"),
                         pa.array(rng.normal(size=N)),
                         {"*": ["CompressionAlgorithmZstd"]}),
    "general_lz4_bss": (field("x", pa.float64(), compression="lz4"),
                        pa.array(np.round(rng.normal(size=20000), 2)),
                        {"2.1": ["CompressionAlgorithmLz4"],
                         "2.2": ["ByteStreamSplit", "CompressionAlgorithmLz4"]}),
    "bss_bare": (field("x", pa.float32(), compression="zstd", bss="on"),
                 pa.array(rng.normal(size=600).astype(np.float32)),
                 {"*": ["ByteStreamSplit"]}),
    "dict_strings": (field("x", pa.string()),
                     pa.array(_strs(N, lambda i: None if i % 7 == 0 else
                                    ["INFO", "DEBUG", "WARN"][i % 3])),
                     {"2.1": ["dictionary: Some", "Variable {"],
                      "2.2": ["dictionary: Some", "CompressionAlgorithmLz4"]}),
    "dict_large_string": (field("x", pa.large_string()),
                          pa.array(_strs(N, lambda i: ["aa", "bbb", "c"][i % 3]),
                                   pa.large_string()),
                          {"*": ["dictionary: Some", "bits_per_value: 64"]}),
    "dict_decimal": (field("x", pa.decimal128(20, 2)),
                     pa.array([decimal.Decimal(i % 7) for i in range(N)],
                              pa.decimal128(20, 2)),
                     {"*": ["dictionary: Some", "Flat { bits_per_value: 128"]}),
    "dict_int64_inline": (field("x", pa.int64()), pa.array(rng.integers(0, 200, 20000) * 3),
                          {"2.2": ["dictionary: Some( CompressiveEncoding { compression: Some( "
                                   "InlineBitpacking( InlineBitpacking { "
                                   "uncompressed_bits_per_value: 64"]}),
    "dict_int64_ool": (field("x", pa.int64()),
                       pa.array(rng.integers(0, 2000, 20000) * 1_000_000_007),
                       {"2.2": ["OutOfLineBitpacking { uncompressed_bits_per_value: 64"]}),
    "fsl_f32x8": (field("x", pa.list_(pa.float32(), 8)),
                  pa.FixedSizeListArray.from_arrays(
                      pa.array(rng.normal(size=N * 8).astype(np.float32)), 8),
                  {"*": ["FixedSizeList { items_per_value: 8"]}),
    "fsl_nullable_items": (
        field("x", pa.list_(pa.float32(), 4)),
        pa.array([[1, None, 3, i] if i % 5 else None for i in range(N)], pa.list_(pa.float32(), 4)),
        {"*": ["has_validity: true"]}),
    "fsl_nested": (field("x", pa.list_(pa.list_(pa.int16(), 2), 3)),
                   pa.array([[[i, i + 1], [i + 2, i + 3], [i + 4, i + 5]] for i in range(N)],
                            pa.list_(pa.list_(pa.int16(), 2), 3)),
                   {"*": ["FixedSizeList { items_per_value: 3"]}),
    "fullzip_fsl_wide": (field("x", pa.list_(pa.float32(), 1536)),
                         pa.FixedSizeListArray.from_arrays(
                             pa.array(rng.normal(size=60 * 1536).astype(np.float32)), 1536),
                         {"*": ["FullZipLayout", "BitsPerValue( 49152"]}),
    "fullzip_fsl_nullable_items": (
        field("x", pa.list_(pa.float32(), 64), nullable=False),
        pa.array([[None if j == i % 64 else float(j) for j in range(64)] for i in range(50)],
                 pa.list_(pa.float32(), 64)),
        {"*": ["FullZipLayout", "has_validity: true"]}),
    "fullzip_fsst": (field("x", pa.string(), nullable=False),
                     pa.array(_strs(300, lambda i: f"abc{i}" * 100)),
                     {"*": ["FullZipLayout", "Fsst {"]}),
    "fullzip_variable": (field("x", pa.binary(), nullable=False, compression="none"),
                         pa.array([rng.bytes(300 + i) for i in range(40)]),
                         {"*": ["FullZipLayout", "Variable {"]}),
    "fullzip_zstd_per_value": (field("x", pa.string(), nullable=False),
                               pa.array(_strs(3, lambda i: "x" * 40000 + str(i))),
                               {"*": ["FullZipLayout", "CompressionAlgorithmZstd"]}),
    "packed_struct": (field("x", pa.struct([("a", pa.int32()), ("b", pa.float64()),
                                            ("c", pa.int16())]), nullable=False, packed="true"),
                      pa.array([{"a": i, "b": i / 2, "c": -i} for i in range(N)],
                               pa.struct([("a", pa.int32()), ("b", pa.float64()),
                                          ("c", pa.int16())])),
                      {"*": ["PackedStruct { bits_per_value: [ 32, 64, 16"]}),
    "variable_packed_struct": (
        field("x", pa.struct([("id", pa.int32()), ("name", pa.string()),
                              ("score", pa.float64())]), nullable=False, packed="true"),
        pa.array([{"id": i, "name": f"name-{i % 97}" * (i % 3), "score": i * 0.25}
                  for i in range(N)],
                 pa.struct([("id", pa.int32()), ("name", pa.string()), ("score", pa.float64())])),
        {"2.2": ["VariablePackedStruct"]}),
    "general_zstd_strings": (field("x", pa.string(), compression="zstd"),
                             pa.array(_strs(N, lambda i: f"row {i} {i * 7919 % 100003}")),
                             {"*": ["General", "CompressionAlgorithmZstd", "Variable {"]}),
    "general_lz4_large_binary": (field("x", pa.large_binary(), compression="lz4"),
                                 pa.array([rng.bytes(20) for _ in range(N)], pa.large_binary()),
                                 {"*": ["General", "CompressionAlgorithmLz4", "Variable {"]}),
    "dict_indices_bss": (field("x", pa.string(), compression="fsst"),
                         pa.array(_strs(N, lambda i: ["alpha", "beta", "gamma"][i % 3])),
                         {"*": ["dictionary: Some", "ByteStreamSplit"]}),
    "wide_flat_fsb40": (field("x", pa.binary(40)),
                        pa.array([bytes([i % 256]) * 40 for i in range(N)], pa.binary(40)),
                        {"*": ["Flat { bits_per_value: 320"]}),
    "fullzip_flat_fsb300": (field("x", pa.binary(300)),
                            pa.array([bytes([i % 256]) * 300 for i in range(200)], pa.binary(300)),
                            {"*": ["FullZipLayout", "Flat { bits_per_value: 2400"]}),
    "flat_decimal256": (field("x", pa.decimal256(40, 3)),
                        pa.array([decimal.Decimal(i * 7919) / 1000 for i in range(N)],
                                 pa.decimal256(40, 3)),
                        {"*": ["Flat { bits_per_value: 256"]}),
    "minichunk_large": (field("x", pa.string(), minichunk_size=65536),
                        pa.array(_strs(20000, lambda i: f"value number {i} " * 3)),
                        {"2.2": ["has_large_chunk: true"]}),
}

PARAMS = [pytest.param(name, ver, id=f"{name}-{ver}") for name, (_, _, exp) in CASES.items()
          for ver in VERSIONS if "*" in exp or ver in exp]


@pytest.mark.parametrize("name,version", PARAMS)
def test_decoders_match_pylance(tmp_path, name, version):
    import lance.file

    f, arr, expect = CASES[name]
    table = pa.Table.from_arrays([arr], schema=pa.schema([f]))
    path = write(tmp_path, name, table, version)
    described = " ".join(pylance_encodings(path).split())
    for needle in expect.get(version, expect.get("*")):
        assert " ".join(needle.split()) in described, f"{needle!r} not in pylance's metadata"
    ours = read_with_lancefmt(path, f.type)
    theirs = lance.file.LanceFileReader(path).read_all().to_table().column(0).combine_chunks()
    assert ours.equals(theirs)


def test_levels_of_lists_with_rle_values(tmp_path):
    """list<int32> with one repeated item: rep levels bit-packed, values run-length encoded."""
    import lance.file

    typ = pa.list_(pa.int32())
    arr = pa.array([[7] * (1 + i % 3) for i in range(3000)], typ)
    table = pa.table({"x": arr}, schema=pa.schema([field("x", typ, nullable=False)]))
    path = write(tmp_path, "lists", table, "2.1")
    described = pylance_encodings(path)
    assert "rep_compression: Some" in described and "Rle" in described
    ours = read_with_lancefmt(path, typ)
    assert ours.equals(lance.file.LanceFileReader(path).read_all().to_table().column(0)
                       .combine_chunks())


@pytest.mark.parametrize("version", VERSIONS)
def test_every_page_layout_parses(tmp_path, version):
    """Sanity for the test parser itself: every default column gives a page it can cut."""
    table = pa.table({"i": pa.array(np.arange(N)), "s": pa.array(_strs(N, str))})
    path = write(tmp_path, "both", table, version)
    for col in (0, 1):
        for page in pages(path, col):
            assert isinstance(page.layout, pb.PageLayout)
            assert page.layout.mini_block_layout.has_large_chunk == (version == "2.2")


def test_constant_page_rle_and_ool_levels(tmp_path):
    """2.2 all-null list pages carry block-compressed levels: RLE rep, bit-packed def."""
    typ = pa.list_(pa.int32())
    arr = pa.array([None if i % 3 else [] for i in range(N)], typ)
    path = write(tmp_path, "allnull", pa.table({"x": arr}), "2.2")
    described = " ".join(pylance_encodings(path).split())
    assert "ConstantLayout" in described and "rep_compression: Some( CompressiveEncoding { " \
        "compression: Some( Rle" in described and "OutOfLineBitpacking" in described
    (page,) = pages(path)
    cl = page.layout.constant_layout
    rep = decode_levels(cl.rep_compression, page.buffers[0], cl.num_rep_values, path=path)
    defs = decode_levels(cl.def_compression, page.buffers[1], cl.num_def_values, path=path)
    assert rep.tolist() == [1] * N
    # layers [item, null-and-empty list]: list null = 1, empty = 2
    assert defs.tolist() == [1 if i % 3 else 2 for i in range(N)]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["bitpack_int64_seq", "bitpack_u8", "flat_f64",
                                  "bitpack_int16_nullable", "variable_binary", "fsst_strings",
                                  "fsst_nullable_strings", "large_string_plain"])
def test_page_batch_equals_chunk_by_chunk(tmp_path, name, version):
    from lancefmt.encoding.v2_1.compressive import decode_miniblock_batch

    f, arr, _ = CASES[name]
    path = write(tmp_path, name, pa.Table.from_arrays([arr], schema=pa.schema([f])), version)
    for page in pages(path):
        mb = page.layout.mini_block_layout
        cs = chunks(page)
        base = page.buffers[1].ctypes.data
        starts = [c.values[0].ctypes.data - base for c in cs]
        sizes = [c.values[0].size for c in cs]
        counts = [c.num_values for c in cs]
        got = decode_miniblock_batch(mb.value_compression, page.buffers[1], starts, sizes,
                                     counts, path=path)
        want = _concat([decode_miniblock(mb.value_compression, c.values, c.num_values)
                        for c in cs])
        assert got.num_values == want.num_values == mb.num_items
        assert type(got) is type(want)
        if isinstance(got, FixedValues):
            assert got.bits_per_value == want.bits_per_value
            assert np.array_equal(got.data, want.data)
        else:
            assert np.array_equal(got.offsets, want.offsets)
            assert np.array_equal(got.data, want.data)
        # a chunk claiming more values than its buffer holds is refused
        bad = list(counts)
        bad[0] += 4096
        with pytest.raises(CorruptFileError, match=path):
            decode_miniblock_batch(mb.value_compression, page.buffers[1], starts, sizes, bad,
                                   path=path)


FUZZ_CASES = ["bitpack_int64_seq", "bitpack_int16_nullable", "flat_bool", "variable_binary",
              "fsst_strings", "rle_int32", "general_zstd_f64", "general_lz4_bss",
              "dict_strings", "dict_int64_ool", "fsl_nullable_items", "packed_struct"]


@pytest.mark.parametrize("version", VERSIONS)
def test_fuzzed_buffers_give_lance_errors_only(tmp_path, version):
    """Seeded byte flips and truncations of real chunk, level and dictionary buffers: every
    decoder returns a block or raises a LanceError; nothing else escapes, nothing crashes."""
    import time

    from lancefmt.errors import LanceError

    fuzz = np.random.default_rng(2024)
    deadline = time.monotonic() + 4.0
    tried = 0
    for name in FUZZ_CASES:
        f, arr, expect = CASES[name]
        if "*" not in expect and version not in expect:
            continue
        path = write(tmp_path, name, pa.Table.from_arrays([arr], schema=pa.schema([f])),
                     version)
        page = pages(path)[0]
        mb = page.layout.mini_block_layout
        cs = chunks(page)[:3]
        targets = []
        for c in cs:
            targets.append(("values", c))
            if c.def_ is not None:
                targets.append(("def", c))
        if mb.HasField("dictionary"):
            targets.append(("dict", None))
        for kind, c in targets:
            for _ in range(12):
                if time.monotonic() > deadline:
                    break
                bufs = list(c.values) if kind == "values" else None
                j = int(fuzz.integers(len(bufs))) if bufs else 0
                victim = (bufs[j] if kind == "values" else
                          c.def_ if kind == "def" else page.buffers[2]).copy()
                if victim.size and fuzz.random() < 0.6:
                    pos = fuzz.integers(victim.size, size=fuzz.integers(1, 4))
                    victim[pos] ^= fuzz.integers(1, 256, size=pos.size).astype(np.uint8)
                else:
                    victim = victim[:fuzz.integers(0, max(victim.size, 1))]
                try:
                    if kind == "values":
                        bufs[j] = victim
                        decode_miniblock(mb.value_compression, bufs, c.num_values, path=path)
                    elif kind == "def":
                        decode_levels(mb.def_compression, victim, c.num_levels, path=path)
                    else:
                        decode_block(mb.dictionary, victim, mb.num_dictionary_items, path=path)
                except LanceError as e:
                    assert path in str(e)
                tried += 1
    assert tried > 50


LEVEL_CASES = {
    "flat16": pa.array([1, None, 3, 4, None], pa.int32()),
    "inline16": pa.array([None if i % 4 == 0 else i for i in range(500)], pa.int32()),
    "ool": pa.array([None if i % 3 == 0 else float(i) for i in range(N)], pa.float64()),
    "ool_strings": pa.array(_strs(N, lambda i: None if i % 5 == 0 else f"v{i}")),
    # the last chunk holds 8 levels: its tail is stored raw (8 u16), not packed
    "ool_raw_tail": pa.array([None if i % 3 == 0 else float(i) for i in range(1032)]),
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", sorted(LEVEL_CASES))
def test_whole_page_levels_and_values_equal_chunk_by_chunk(tmp_path, name, version):
    from lancefmt.encoding.v2_1.compressive import decode_miniblock_page

    arr = LEVEL_CASES[name]
    path = write(tmp_path, name, pa.table({"x": arr}), version)
    codec = {"flat16": "Flat { bits_per_value: 16", "inline16": "InlineBitpacking { "
             "uncompressed_bits_per_value: 16", "ool": "OutOfLineBitpacking",
             "ool_strings": "OutOfLineBitpacking", "ool_raw_tail": "OutOfLineBitpacking"}[name]
    assert codec in " ".join(pylance_encodings(path).split())
    for page in pages(path):
        mb = page.layout.mini_block_layout
        cs = chunks(page)
        words = page.buffers[0].view("<u4" if mb.has_large_chunk else "<u2").astype(np.int64)
        sizes = ((words >> 4) + 1) * 8
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        counts = [c.num_values for c in cs]
        defs, values = decode_miniblock_page(mb, page.buffers[1], offsets, sizes, counts,
                                             path=path)
        want_defs = np.concatenate([decode_levels(mb.def_compression, c.def_, c.num_levels)
                                    for c in cs])
        want = _concat([decode_miniblock(mb.value_compression, c.values, c.num_values)
                        for c in cs])
        assert defs.dtype == np.uint16 and np.array_equal(defs, want_defs)
        if name == "ool_raw_tail":
            assert cs[-1].num_levels == 8 and cs[-1].def_.size == 16
        assert np.array_equal(values.data, want.data)
        # levels must be the nulls pylance wrote
        assert np.array_equal(defs == 0, np.asarray(arr.is_valid())[:defs.size]) or \
            len(pages(path)) > 1


@pytest.mark.parametrize("version", VERSIONS)
def test_arrow_dictionary_column_with_nulls_reads_whole(tmp_path, version):
    """An Arrow dictionary<int32, string> column with nulls, through the whole file reader."""
    import lance.file

    from lancefmt.file.reader import LanceFileReader

    typ = pa.dictionary(pa.int32(), pa.string())
    arr = pa.array([None if i % 4 == 0 else ["x", "yy", "zzz"][i % 3] for i in range(300)],
                   typ)
    path = write(tmp_path, "cdict", pa.table({"d": arr}), version)
    ours = LanceFileReader(path).read_all()
    theirs = lance.file.LanceFileReader(path).read_all().to_table()
    assert ours.column(0).type == theirs.column(0).type
    assert ours.column(0).combine_chunks().cast(pa.string()).equals(
        theirs.column(0).combine_chunks().cast(pa.string()))
