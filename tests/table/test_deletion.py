"""Deletion vectors, deletion files (.arrow / .bin) and masking."""
import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
from pyroaring import BitMap

from lancefmt._proto import table_pb2
from lancefmt.errors import CorruptFileError, InvalidArgumentError, LanceError
from lancefmt.table.deletion import (
    ARROW,
    BITMAP,
    DELETION_SCHEMA,
    DeletionVector,
    apply_deletions,
    as_live_mask,
    deletion_file_bytes,
    deletion_file_path,
    deletion_file_uri,
    iter_live_slices,
    load_deletion_vector,
    parse_deletion_file,
    read_deletion_file,
    write_deletion_file,
)

offsets_and_rows = st.integers(1, 3000).flatmap(
    lambda n: st.tuples(st.sets(st.integers(0, n - 1), max_size=n), st.just(n)))


# -- the kind rule ---------------------------------------------------------------------------
def test_kind_rule_matches_lance():
    assert DeletionVector.from_offsets([]).kind is None
    assert DeletionVector.from_offsets(range(4999)).kind == ARROW
    assert DeletionVector.from_offsets(range(5000)).kind == BITMAP  # size hint >= 5000
    small = DeletionVector.from_offsets(range(3000))
    assert small.extend(range(3000, 5000)).kind == ARROW            # set of 5000 stays a set
    assert small.extend(range(3000, 5001)).kind == BITMAP           # > 5000 promotes
    big = DeletionVector.from_offsets(range(6000))
    assert big.extend([]).kind == BITMAP                            # a bitmap stays one
    assert DeletionVector.from_bitmap(BitMap([1, 2])).kind == BITMAP
    assert DeletionVector.empty().extend([4, 2, 2]).offsets.tolist() == [2, 4]


def test_extend_is_cumulative():
    dv = DeletionVector.from_offsets([5, 1]).extend([3, 1]).extend(DeletionVector.from_offsets([9]))
    assert dv.offsets.tolist() == [1, 3, 5, 9]
    assert 3 in dv and 4 not in dv
    assert len(dv) == 4 and dv.num_live(10) == 6
    assert not dv.offsets.flags.writeable


def test_offsets_validation():
    with pytest.raises(InvalidArgumentError):
        DeletionVector.from_offsets([-1])
    with pytest.raises(InvalidArgumentError):
        DeletionVector.from_offsets([2**32])
    with pytest.raises(InvalidArgumentError):
        DeletionVector.from_offsets([1.5])
    with pytest.raises(CorruptFileError, match="outside"):
        DeletionVector.from_offsets([10]).check(10, "x")
    assert DeletionVector.from_offsets(range(5)).deletes_all(5)
    assert not DeletionVector.from_offsets([0, 1, 2, 3, 5]).deletes_all(5)


# -- masks -------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(offsets_and_rows)
def test_masks_match_numpy(case):
    deleted, n = case
    dv = DeletionVector.from_offsets(sorted(deleted))
    expected = np.ones(n, dtype=bool)
    expected[list(deleted)] = False
    np.testing.assert_array_equal(dv.live_mask(n), expected)
    kept = dv.kept_indices(n)
    assert kept.dtype == np.uint32
    np.testing.assert_array_equal(kept, np.flatnonzero(expected))
    assert dv.kept_indices(n, wide=True).dtype == np.uint64
    starts, lengths = dv.live_runs(n)
    rebuilt = np.zeros(n, dtype=bool)
    for s, ln in zip(starts, lengths):
        assert ln > 0
        rebuilt[s:s + ln] = True
    np.testing.assert_array_equal(rebuilt, expected)
    # runs are maximal: a deleted row (or the end) separates consecutive runs
    assert all(starts[i + 1] > starts[i] + lengths[i] for i in range(len(starts) - 1))


def test_mask_bounds():
    dv = DeletionVector.from_offsets([3, 10])
    with pytest.raises(InvalidArgumentError):
        dv.live_mask(10)
    with pytest.raises(InvalidArgumentError):
        dv.kept_indices(5)
    with pytest.raises(InvalidArgumentError):
        dv.live_runs(10)


def test_as_live_mask_forms():
    n = 6
    expected = np.array([True, False, True, True, False, True])
    for form in ([1, 4], np.array([4, 1]), BitMap([1, 4]), DeletionVector.from_offsets([1, 4]),
                 expected):
        np.testing.assert_array_equal(as_live_mask(form, n), expected)
    assert as_live_mask(None, n) is None
    assert as_live_mask(DeletionVector.empty(), n) is None
    with pytest.raises(InvalidArgumentError):
        as_live_mask(np.ones(5, dtype=bool), n)


@settings(max_examples=100, deadline=None)
@given(offsets_and_rows, st.data())
def test_apply_to_batches_and_tables(case, data):
    deleted, n = case
    dv = DeletionVector.from_offsets(sorted(deleted))
    table = pa.table({"x": np.arange(n), "s": [str(i) for i in range(n)]})
    expected = table.filter(pa.array(dv.live_mask(n)))
    assert apply_deletions(table, dv).equals(expected)
    # A window of the fragment: rows offset .. offset + m
    offset = data.draw(st.integers(0, n - 1))
    m = data.draw(st.integers(0, n - offset))
    batch = table.slice(offset, m).combine_chunks().to_batches()
    batch = batch[0] if batch else pa.record_batch([pa.array([], pa.int64()), pa.array([], pa.string())],
                                                   names=["x", "s"])
    got = apply_deletions(batch, dv, offset)
    want = expected.filter(pa.compute.and_(pa.compute.greater_equal(expected["x"], offset),
                                           pa.compute.less(expected["x"], offset + m)))
    assert pa.Table.from_batches([got], schema=batch.schema).equals(want.combine_chunks())
    slices = list(iter_live_slices(batch, dv, offset))
    assert sum(s.num_rows for s in slices) == want.num_rows
    if slices:
        assert pa.Table.from_batches(slices).equals(want.combine_chunks()) or want.num_rows == 0


def test_apply_avoids_copies():
    batch = pa.record_batch({"x": np.arange(100)})
    assert apply_deletions(batch, None) is batch
    assert apply_deletions(batch, DeletionVector.from_offsets([200]), 0) is batch
    # deletions only at the ends: a zero-copy slice sharing the buffer
    out = apply_deletions(batch, DeletionVector.from_offsets([0, 1, 99]))
    assert out.num_rows == 97
    assert out.column(0).buffers()[1].address == batch.column(0).buffers()[1].address
    assert apply_deletions(batch, DeletionVector.from_offsets(range(100))).num_rows == 0


# -- files -------------------------------------------------------------------------------------
@pytest.mark.parametrize("compression", ["zstd", None])
@pytest.mark.parametrize("count", [0, 1, 3, 4999, 5000, 20000])
def test_file_round_trip(count, compression, tmp_path):
    rng = np.random.default_rng(count)
    offsets = rng.choice(100_000, count, replace=False)
    dv = DeletionVector.from_offsets(offsets)
    meta = write_deletion_file(str(tmp_path), 7, 3, dv, compression=compression)
    if count == 0:
        assert meta is None
        return
    assert meta.read_version == 3 and meta.num_deleted_rows == count
    assert meta.file_type == (table_pb2.DeletionFile.BITMAP if count >= 5000
                              else table_pb2.DeletionFile.ARROW_ARRAY)
    assert not meta.HasField("base_id")
    path = deletion_file_path(7, meta)
    assert path == f"_deletions/7-3-{meta.id}.{'bin' if count >= 5000 else 'arrow'}"
    assert (tmp_path / path).exists()
    back = load_deletion_vector(str(tmp_path), 7, meta, physical_rows=100_000)
    assert back == dv and back.kind == dv.kind
    assert read_deletion_file(deletion_file_uri(str(tmp_path), 7, meta)) == dv


def test_write_options(memory_uri):
    dv = DeletionVector.from_offsets([1, 2])
    meta = write_deletion_file(memory_uri, 0, 9, dv, base_id=0, file_id=42)
    assert meta.id == 42 and meta.HasField("base_id") and meta.base_id == 0
    assert deletion_file_uri(memory_uri, 0, meta) == memory_uri + "/_deletions/0-9-42.arrow"
    assert load_deletion_vector(memory_uri, 0, meta) == dv
    assert load_deletion_vector(memory_uri, 0, None) == DeletionVector.empty()


def test_arrow_bytes_shape():
    data = deletion_file_bytes(DeletionVector.from_offsets([2, 0, 1]))
    assert data[:6] == b"ARROW1" and data[-6:] == b"ARROW1"
    reader = pa.ipc.open_file(data)
    assert reader.schema.equals(DELETION_SCHEMA, check_metadata=True)
    assert reader.num_record_batches == 1
    assert reader.get_batch(0).column(0).to_pylist() == [0, 1, 2]


def test_bitmap_bytes_and_run_cookie():
    dv = DeletionVector.from_offsets(range(0, 20000, 3))
    data = deletion_file_bytes(dv)
    assert int.from_bytes(data[:4], "little") == 12346
    assert parse_deletion_file(data, BITMAP) == dv
    runs = BitMap(range(10, 50000))
    runs.run_optimize()
    run_bytes = runs.serialize()
    assert int.from_bytes(run_bytes[:2], "little") == 12347
    assert len(parse_deletion_file(run_bytes, BITMAP, physical_rows=50000)) == 49990


def _arrow(table, compression=None, batches=None):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema,
                         options=pa.ipc.IpcWriteOptions(compression=compression)) as w:
        for b in (batches if batches is not None else table.to_batches()):
            w.write_batch(b)
    return sink.getvalue().to_pybytes()


GOOD = _arrow(pa.table([pa.array([3, 1], pa.uint32())], schema=DELETION_SCHEMA))


@pytest.mark.parametrize("data,message", [
    (b"", "unreadable"),
    (b"ARROW1garbage", "unreadable"),
    (GOOD[:-10], "unreadable"),
    (_arrow(pa.table({"row_id": pa.array([1], pa.uint32())})), "schema"),            # nullable
    (_arrow(pa.table([pa.array([1], pa.int32())],
                     schema=pa.schema([pa.field("row_id", pa.int32(), False)]))), "schema"),
    (_arrow(pa.table([pa.array([1], pa.uint32())],
                     schema=pa.schema([pa.field("rowid", pa.uint32(), False)]))), "schema"),
    (_arrow(pa.table([pa.array([1], pa.uint32())], schema=DELETION_SCHEMA.with_metadata({"a": "b"}))),
     "schema"),
    (_arrow(pa.table([pa.array([1], pa.uint32())], schema=DELETION_SCHEMA), batches=[]), "one batch"),
    (_arrow(pa.table([pa.array([1, 2], pa.uint32())], schema=DELETION_SCHEMA),
            batches=pa.table([pa.array([1, 2], pa.uint32())], schema=DELETION_SCHEMA).to_batches(1)),
     "one batch"),
    (_arrow(pa.table([pa.array([1, 2], pa.uint32())], schema=DELETION_SCHEMA)).replace(
        b"ARROW1", b"ARROW2", 1), "unreadable"),
])
def test_bad_arrow_files(data, message):
    with pytest.raises(CorruptFileError, match=message) as info:
        parse_deletion_file(data, ARROW, path="_deletions/1-2-3.arrow")
    assert info.value.path == "_deletions/1-2-3.arrow"


def test_arrow_null_values():
    # A batch declared non-null that still carries a null (Lance rejects such files).
    arr = pa.array([1, None], pa.uint32())
    forged = pa.RecordBatch.from_arrays([pa.Array.from_buffers(pa.uint32(), 2, arr.buffers(), 1)],
                                        schema=DELETION_SCHEMA)
    data = _arrow(pa.Table.from_batches([forged]))
    with pytest.raises(CorruptFileError, match="null row offsets"):
        parse_deletion_file(data, ARROW, path="f.arrow")


def test_offsets_beyond_fragment():
    with pytest.raises(CorruptFileError, match="outside"):
        parse_deletion_file(GOOD, ARROW, physical_rows=3, path="f.arrow")
    assert parse_deletion_file(GOOD, ARROW, physical_rows=4).offsets.tolist() == [1, 3]
    bits = deletion_file_bytes(DeletionVector.from_offsets(range(6000)))
    with pytest.raises(CorruptFileError, match="outside"):
        parse_deletion_file(bits, BITMAP, physical_rows=5999, path="f.bin")


@pytest.mark.parametrize("data", [b"", b"\x3a\x30", b"\x00\x00\x00\x00", b"\x3a\x30\x00\x00\xff\xff\xff\x7f",
                                  deletion_file_bytes(DeletionVector.from_offsets(range(9000)))[:-7]])
def test_bad_roaring_files(data):
    with pytest.raises(CorruptFileError) as info:
        parse_deletion_file(data, BITMAP, path="_deletions/0-1-2.bin")
    assert info.value.path == "_deletions/0-1-2.bin"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([GOOD, deletion_file_bytes(DeletionVector.from_offsets(range(0, 30000, 2))),
                        deletion_file_bytes(DeletionVector.from_offsets([5, 9]), compression="zstd")]),
       st.data())
def test_mutated_files_raise_lance_errors_only(sample, data):
    cut = data.draw(st.integers(0, len(sample)))
    mutated = bytearray(sample[:cut])
    for _ in range(data.draw(st.integers(0, 3))):
        if mutated:
            mutated[data.draw(st.integers(0, len(mutated) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    for kind in (ARROW, BITMAP):
        try:
            parse_deletion_file(bytes(mutated), kind, physical_rows=40000, path="f")
        except LanceError:
            pass


def test_manifest_count_mismatch(tmp_path):
    meta = write_deletion_file(str(tmp_path), 1, 1, DeletionVector.from_offsets([1, 2, 3]))
    meta.num_deleted_rows = 5
    with pytest.raises(CorruptFileError, match="manifest says 5"):
        load_deletion_vector(str(tmp_path), 1, meta)
    meta.num_deleted_rows = 0  # unknown: accepted
    assert len(load_deletion_vector(str(tmp_path), 1, meta)) == 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 3000), st.integers(0, 2**32 - 1)), max_size=400))
def test_sorted_unique_kernel(values):
    from lancefmt.table import _deletion

    arr = np.array(values, dtype=np.uint32)
    got = _deletion.sorted_unique(arr)
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, np.unique(arr))


@pytest.mark.parametrize("physical_rows", [None, 5000])
def test_arrow_deletion_file_claiming_a_huge_buffer_is_refused_before_allocating(physical_rows):
    """pyarrow allocates whatever a compressed buffer's length prefix claims: the prefix is
    checked against the batch's declared rows (and the fragment's) first."""
    import struct

    import numpy as np

    from lancefmt.errors import CorruptFileError
    from lancefmt.table.deletion import DeletionVector, deletion_file_bytes, parse_deletion_file

    dv = DeletionVector.from_offsets(np.arange(0, 3000, 3, dtype=np.uint32))
    data = bytearray(deletion_file_bytes(dv, "arrow", compression="zstd"))
    at = data.find(b"\x28\xb5\x2f\xfd")  # the zstd frame of the values buffer
    assert struct.unpack_from("<q", data, at - 8)[0] == 4000
    struct.pack_into("<q", data, at - 8, 1 << 40)
    with pytest.raises(CorruptFileError):
        parse_deletion_file(bytes(data), "arrow", physical_rows=physical_rows)


def test_arrow_deletion_file_with_more_rows_than_the_fragment_is_refused():
    import numpy as np

    from lancefmt.errors import CorruptFileError
    from lancefmt.table.deletion import DeletionVector, deletion_file_bytes, parse_deletion_file

    data = deletion_file_bytes(DeletionVector.from_offsets(np.arange(50, dtype=np.uint32)), "arrow")
    assert len(parse_deletion_file(data, "arrow", physical_rows=50)) == 50
    with pytest.raises(CorruptFileError):
        parse_deletion_file(data, "arrow", physical_rows=10)


def test_arrow_deletion_prefix_check_happens_before_pyarrow_allocates(tmp_path):
    """In a fresh process (a clean allocation peak): a 1 GiB claim is refused without pyarrow
    ever allocating it."""
    import subprocess
    import sys

    script = """
import struct, numpy as np, pyarrow as pa
from lancefmt.errors import CorruptFileError
from lancefmt.table.deletion import DeletionVector, deletion_file_bytes, parse_deletion_file
data = bytearray(deletion_file_bytes(
    DeletionVector.from_offsets(np.arange(0, 3000, 3, dtype=np.uint32)), "arrow"))
at = data.find(b"\\x28\\xb5\\x2f\\xfd")
struct.pack_into("<q", data, at - 8, 1 << 30)
try:
    parse_deletion_file(bytes(data), "arrow", physical_rows=5000)
except CorruptFileError:
    pass
from lancefmt.encoding.pool_memory import decode_pool
print(pa.default_memory_pool().max_memory() + decode_pool().max_memory())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={**os.environ})
    assert int(out.stdout.split()[-1]) < 1 << 26


def _ipc_messages(data: bytes) -> tuple[int, list]:
    """(footer start, [(offset, metadata length, body length)]) of an Arrow IPC file's stream."""
    import struct

    import pyarrow as pa

    footer_start = len(data) - 10 - struct.unpack_from("<i", data, len(data) - 10)[0]
    pos, out = 8, []
    while struct.unpack_from("<i", data, pos + 4)[0]:
        msg = pa.ipc.read_message(pa.BufferReader(data[pos:]))
        meta = 8 + struct.unpack_from("<i", data, pos + 4)[0]
        out.append((pos, meta, msg.body.size))
        pos += meta + msg.body.size
    return footer_start, out


def test_arrow_deletion_footer_pointing_past_the_end_of_stream_is_checked_too():
    """pyarrow's file reader reads the batch the footer's block points at; a copy of the batch
    placed after the end-of-stream marker (claiming 3 GiB) is invisible to a stream walk, so
    the check follows the footer."""
    import struct

    from lancefmt.errors import CorruptFileError
    from lancefmt.table.deletion import DeletionVector, deletion_file_bytes, parse_deletion_file

    good = deletion_file_bytes(DeletionVector.from_offsets([1, 5, 9]), "arrow", compression="zstd")
    footer_start, messages = _ipc_messages(good)
    offset, meta, body = messages[1]  # schema, then the record batch
    evil = bytearray(good[offset:offset + meta + body])
    at = evil.find(b"\x28\xb5\x2f\xfd", meta)
    struct.pack_into("<q", evil, at - 8, 3 << 30)
    footer = good[footer_start:-10]
    assert footer.count(struct.pack("<q", offset)) == 1
    data = (good[:footer_start] + bytes(evil)
            + footer.replace(struct.pack("<q", offset), struct.pack("<q", footer_start))
            + good[-10:])
    assert len(data) < 1024
    with pytest.raises(CorruptFileError, match="claims 3221225472 bytes"):
        parse_deletion_file(data, "arrow", physical_rows=100, path="x.arrow")
    # the same file with the batch's honest prefix still reads (the walk matches pyarrow's)
    struct.pack_into("<q", evil, at - 8, 12)
    honest = (good[:footer_start] + bytes(evil)
              + footer.replace(struct.pack("<q", offset), struct.pack("<q", footer_start))
              + good[-10:])
    assert parse_deletion_file(honest, "arrow", physical_rows=100).offsets.tolist() == [1, 5, 9]


def test_arrow_deletion_block_disagreeing_with_its_message_is_refused():
    import struct

    from lancefmt.errors import CorruptFileError
    from lancefmt.table.deletion import DeletionVector, deletion_file_bytes, parse_deletion_file

    good = deletion_file_bytes(DeletionVector.from_offsets([2, 4]), "arrow", compression="zstd")
    footer_start, messages = _ipc_messages(good)
    offset, meta, body = messages[1]
    block = struct.pack("<qi4xq", offset, meta, body)
    at = good.find(block, footer_start)
    assert at > 0
    bad = bytearray(good)
    struct.pack_into("<qi4xq", bad, at, offset, meta, body + 8)
    with pytest.raises(CorruptFileError, match="body"):
        parse_deletion_file(bytes(bad), "arrow", physical_rows=100)


def test_window_holds_the_deleted_offsets_of_a_row_range():
    dv = DeletionVector.from_offsets([0, 5, 9, 10, 4_000_000_000])
    assert dv.window(0, 10).tolist() == [0, 5, 9]
    assert dv.window(5, 6).tolist() == [0, 4, 5]
    assert dv.window(11, 100).tolist() == []
    assert dv.window(3_999_999_999, 2**32).tolist() == [1]  # an end past u32 is clipped
