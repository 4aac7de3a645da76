"""Bad RowIdSequence / RowDatasetVersionSequence bytes: a LanceError naming the file, never a
crash or a bare IndexError/struct.error/DecodeError."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from lancefmt.errors import CorruptFileError, LanceError
from lancefmt.table.rowids import (
    RowDatasetVersionSequence,
    RowIdSequence,
    RowIdIndex,
    decode_row_ids,
    decode_versions,
    encode_row_ids,
    encode_versions,
)
from rowid_reference import reference_decode

U64_MAX = (1 << 64) - 1


def _samples():
    rng = np.random.default_rng(3)
    return [
        encode_row_ids(np.arange(5, 500, dtype=np.uint64)),
        encode_row_ids(np.delete(np.arange(1000, dtype=np.uint64), [3, 500])),
        encode_row_ids(np.arange(0, 400, 2, dtype=np.uint64)),
        encode_row_ids(np.sort(rng.choice(2**40, 50, replace=False)).astype(np.uint64)),
        encode_row_ids(rng.permutation(300).astype(np.uint64)),
        RowIdSequence.from_arrays([np.arange(10, dtype=np.uint64),
                                   np.array([50, 40], dtype=np.uint64)]).to_bytes(),
    ]


SAMPLES = _samples()


def _try_all(data):
    """Every reader must either succeed or raise LanceError."""
    for fn in (lambda: decode_row_ids(data, "frag.bin"),
               lambda: RowIdSequence.from_bytes(data, "frag.bin").to_numpy(),
               lambda: RowIdIndex.build([(0, data)], path="frag.bin"),
               lambda: decode_versions(data, "frag.bin"),
               lambda: RowDatasetVersionSequence.from_bytes(data, "frag.bin").to_numpy()):
        try:
            fn()
        except LanceError as exc:
            if isinstance(exc, CorruptFileError):
                assert exc.path == "frag.bin"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SAMPLES), st.data())
def test_truncated_and_flipped(sample, data):
    cut = data.draw(st.integers(0, len(sample)))
    mutated = bytearray(sample[:cut])
    for _ in range(data.draw(st.integers(0, 3))):
        if mutated:
            i = data.draw(st.integers(0, len(mutated) - 1))
            mutated[i] ^= 1 << data.draw(st.integers(0, 7))
    mutated = bytes(mutated)
    _try_all(mutated)
    # When the bytes still decode, the result equals the plain-Python walk of them.
    try:
        got = decode_row_ids(mutated)
    except CorruptFileError:
        return
    try:
        expected = reference_decode(mutated)
    except (IndexError, KeyError, ValueError, TypeError):
        return  # the reference is lenient/strict in other ways; only compare on success
    assert got.tolist() == expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes(blob):
    _try_all(blob)


def _seq(segment_body: bytes) -> bytes:
    return bytes([0x0A, len(segment_body)]) + segment_body


def _len(field, payload):
    return bytes([(field << 3) | 2, len(payload)]) + payload


@pytest.mark.parametrize("data,message", [
    (b"\x0a\x05\x01", "malformed"),                                    # truncated length
    (_seq(b""), "no segment kind"),                                      # empty U64Segment
    (_seq(_len(1, b"\x08\x05\x10\x02")), "end is below"),                # Range 5..2
    (_seq(_len(2, b"\x08\x00\x10\x05")), "no holes"),                    # RangeWithHoles, no holes
    (_seq(_len(2, b"\x08\x00\x10\x05" + _len(3, _len(1, b"\x08\x07\x12\x02\x00\x00")))),
     "holes"),                                                          # hole 7 outside 0..5
    (_seq(_len(2, b"\x08\x00\x10\x05" + _len(3, _len(1, b"\x08\x01\x12\x04\x01\x00\x00\x00")))),
     "holes"),                                                          # holes 2, 1: not increasing
    (_seq(_len(3, b"\x08\x00\x10\x10" + _len(3, b"\xff"))), "bitmap"),   # 16 bits need 2 bytes
    (_seq(_len(4, _len(1, b"\x12\x03\x01\x02\x03"))), "multiple"),       # u16 payload of 3 bytes
    (_seq(_len(4, b"")), "no array kind"),                               # EncodedU64Array empty
    (_seq(_len(5, _len(1, b"\x08" + b"\xff" * 9 + b"\x01" + b"\x12\x02\xff\xff"))), "overflow"),
    (_seq(b"\x48\x01"), "no segment kind"),                              # only an unknown varint
    (b"\x0a\x0b\x0a\x09\x10\x81\x80\x80\x80\x20\x00\x00\x00\x00", "malformed"),
    (_seq(_len(1, b"\x10\x81\x80\x80\x80\x20")), "longer than"),         # Range 0..2**33+1
    (_seq(_len(1, b"\x0a\x00")), "wire type"),                          # start as bytes
])
def test_specific_corruptions(data, message):
    with pytest.raises(CorruptFileError, match=message) as info:
        decode_row_ids(data, "_versions/3.manifest")
    assert info.value.path == "_versions/3.manifest"


def test_total_length_cap():
    two_ranges = RowIdSequence.from_arrays([]).to_bytes()
    assert two_ranges == b""
    from lancefmt.table.rowids import U64Segment

    big = RowIdSequence([U64Segment.range(0, 1 << 31), U64Segment.range(1 << 40, (1 << 40) + (1 << 31) + 1)])
    with pytest.raises(CorruptFileError, match="longer than"):
        decode_row_ids(big.to_bytes())


def test_versions_missing_span():
    with pytest.raises(CorruptFileError, match="no span"):
        decode_versions(b"\x0a\x02\x10\x03", "f")
    ok = encode_versions(np.array([1, 1, 2], dtype=np.uint64))
    np.testing.assert_array_equal(decode_versions(ok), [1, 1, 2])


def test_not_bytes():
    with pytest.raises(TypeError):
        decode_row_ids("not bytes")
