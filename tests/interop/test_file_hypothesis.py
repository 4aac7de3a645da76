"""Property-based round trips: random schemas and tables through our writer, then through our
reader and pylance's reader (the oracle)."""
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from lance.file import LanceFileReader as PyLanceReader

from lancefmt.file.reader import LanceFileReader
from lancefmt.file.writer import LanceFileWriter

from file_tables import equal_ignoring_dictionaries

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

FIXED = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(),
         pa.uint64(), pa.float16(), pa.float32(), pa.float64(), pa.bool_(), pa.date32(),
         pa.date64(), pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns"),
         pa.timestamp("s"), pa.timestamp("ms", "UTC"), pa.timestamp("us", "Asia/Tokyo"),
         pa.timestamp("ns"), pa.duration("us"), pa.decimal128(10, 2), pa.binary(3)]
VARIABLE = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]

fixed_types = st.sampled_from(FIXED)
fsl_types = st.builds(lambda t, n: pa.list_(t, n),
                      st.one_of(fixed_types, st.builds(lambda t, n: pa.list_(t, n), fixed_types,
                                                       st.integers(1, 3))),
                      st.integers(1, 4))
leaf_types = st.one_of(fixed_types, st.sampled_from(VARIABLE), fsl_types)


def _nested(children):
    return st.one_of(
        st.builds(pa.list_, children),
        st.builds(pa.large_list, children),
        st.lists(children, min_size=1, max_size=3).map(
            lambda ts: pa.struct([pa.field(f"c{i}", t) for i, t in enumerate(ts)])),
    )


types = st.recursive(leaf_types, _nested, max_leaves=6)
top_types = st.one_of(types, st.just(pa.dictionary(pa.int32(), pa.string())))
schemas = st.lists(top_types, min_size=1, max_size=5).map(
    lambda ts: pa.schema([pa.field(f"f{i}", t) for i, t in enumerate(ts)]))


def gen(dtype, n, rng, p):
    """A random array of ``dtype`` with about ``p`` nulls (never at struct level)."""
    mask = rng.random(n) < p
    pmask = pa.array(mask) if mask.any() else None
    if pa.types.is_struct(dtype):
        children = [gen(dtype.field(i).type, n, rng, p) for i in range(dtype.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(dtype))
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        lengths = rng.integers(0, 4, n)
        lengths[mask] = 0
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        child = gen(dtype.value_type, int(offsets[-1]), rng, p)
        cls = pa.ListArray if pa.types.is_list(dtype) else pa.LargeListArray
        return cls.from_arrays(pa.array(offsets, pa.int32() if pa.types.is_list(dtype) else pa.int64()),
                               child, mask=pmask)
    if pa.types.is_fixed_size_list(dtype):
        child = gen(dtype.value_type, n * dtype.list_size, rng, p)
        return pa.FixedSizeListArray.from_arrays(child, dtype.list_size, mask=pmask)
    if pa.types.is_dictionary(dtype):
        values = pa.array(np.array(["x", "yy", "", "zzz"])[rng.integers(0, 4, n)])
        return pc.if_else(pa.array(~mask), values, None).dictionary_encode()
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or \
            pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        words = np.array(["", "a", "bc", "hello", "ünïcödé", "x" * 40])
        vals = pa.array(words[rng.integers(0, len(words), n)])
        return pc.if_else(pa.array(~mask), vals, None).cast(dtype)
    if pa.types.is_fixed_size_binary(dtype):
        raw = rng.integers(0, 256, (n, dtype.byte_width), dtype=np.uint8)
        return pa.array([bytes(r) for r in raw], dtype, mask=mask)
    if pa.types.is_boolean(dtype):
        return pa.array(rng.random(n) < 0.5, mask=mask)
    if pa.types.is_decimal(dtype):
        return pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**6, 10**6, n)],
                        dtype, mask=mask)
    if pa.types.is_floating(dtype):
        np_type = {16: np.float16, 32: np.float32, 64: np.float64}[dtype.bit_width]
        return pa.array(rng.standard_normal(n).astype(np_type), mask=mask)
    if pa.types.is_integer(dtype):
        info = np.iinfo(dtype.to_pandas_dtype())
        return pa.array(rng.integers(info.min, info.max, n, dtype=info.dtype, endpoint=True),
                        mask=mask)
    storage = pa.int32() if dtype.bit_width == 32 else pa.int64()
    hi = 86400 if dtype.bit_width == 32 else 2**40
    vals = pa.array(rng.integers(0, hi, n), pa.int64()).cast(storage)
    return pc.if_else(pa.array(~mask), vals.cast(dtype), None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(schema=schemas, n=st.integers(0, 300), seed=st.integers(0, 2**32 - 1),
       p=st.sampled_from([0.0, 0.3, 1.0]), page=st.sampled_from([None, 128, 1000]),
       chunk=st.integers(1, 300), version=st.sampled_from(["2.0", "2.1", "2.2"]))
def test_round_trip_through_both_readers(tmp_path, schema, n, seed, p, page, chunk, version):
    rng = np.random.default_rng(seed)
    table = pa.table([gen(f.type, n, rng, p) for f in schema], schema=schema)
    path = str(tmp_path / f"h{seed}.lance")
    with LanceFileWriter(path, schema, version=version, max_page_bytes=page,
                         page_buffer_bytes=(page or 0) * 4 or None) as w:
        for batch in table.to_batches(max_chunksize=chunk):
            w.write_batch(batch)
    ours = LanceFileReader(path).read_all()
    assert ours.schema.equals(schema)
    assert equal_ignoring_dictionaries(ours, table)
    theirs = PyLanceReader(path).read_all().to_table()
    assert equal_ignoring_dictionaries(theirs, table)
    if n:
        idx = rng.integers(0, n, 5)
        assert equal_ignoring_dictionaries(LanceFileReader(path).take(idx), table.take(idx))
