"""Test tables with every type Lance file version 2.0 stores, nulls wherever they can be."""
import decimal

import numpy as np
import pyarrow as pa


def _mask(rng, n, p):
    return rng.random(n) < p


def _apply_mask(arr, mask):
    import pyarrow.compute as pc

    return pc.if_else(pa.array(~mask), arr, pa.scalar(None, arr.type))


def _strings(rng, n, large=False, binary=False, p=0.2):
    lengths = rng.integers(0, 12, n)
    lengths[rng.random(n) < 0.1] = 0  # empty strings
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", np.uint8)
    data = alphabet[rng.integers(0, len(alphabet), int(lengths.sum()))].tobytes()
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    t = (pa.large_binary() if large else pa.binary()) if binary else \
        (pa.large_string() if large else pa.string())
    odt = np.int64 if large else np.int32
    mask = _mask(rng, n, p)
    validity = pa.py_buffer(np.packbits(~mask, bitorder="little")) if mask.any() else None
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(offsets.astype(odt)),
                                        pa.py_buffer(data)])


def _lists(rng, n, values_fn, large=False, p=0.2):
    lengths = rng.integers(0, 5, n)
    lengths[rng.random(n) < 0.15] = 0  # empty lists
    mask = _mask(rng, n, p)
    lengths[mask] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64 if large else np.int32)
    values = values_fn(int(lengths.sum()))
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(pa.array(offsets), values, mask=pa.array(mask) if mask.any() else None)


def _ints(rng, n, dtype, p=0.2):
    info = np.iinfo(dtype)
    vals = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return pa.array(vals, mask=_mask(rng, n, p))


def wide_table(n=1000, seed=0, p=0.2, dim=8) -> pa.Table:
    """A table with every 2.0 type. Struct fields have no struct-level nulls (2.0 cannot store
    them); dictionary columns hold low-cardinality strings."""
    rng = np.random.default_rng(seed)
    cols = {}
    for name, dt in [("i8", np.int8), ("i16", np.int16), ("i32", np.int32), ("i64", np.int64),
                     ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64)]:
        cols[name] = _ints(rng, n, dt, p)
    cols["f16"] = pa.array(rng.standard_normal(n).astype(np.float16), mask=_mask(rng, n, p))
    cols["f32"] = pa.array(rng.standard_normal(n).astype(np.float32), mask=_mask(rng, n, p))
    cols["f64"] = pa.array(rng.standard_normal(n), mask=_mask(rng, n, p))
    cols["bool"] = pa.array(rng.random(n) < 0.5, mask=_mask(rng, n, p))
    cols["date32"] = pa.array(rng.integers(-10000, 30000, n, dtype=np.int32), pa.int32()) \
        .cast(pa.date32())
    cols["date32"] = _apply_mask(cols["date32"], _mask(rng, n, p))
    cols["date64"] = _apply_mask(pa.array(rng.integers(0, 10**6, n) * 86_400_000, pa.int64())
                                 .cast(pa.date64()), _mask(rng, n, p))
    cols["time32s"] = _apply_mask(pa.array(rng.integers(0, 86400, n, dtype=np.int32)).cast(
        pa.time32("s")), _mask(rng, n, p))
    cols["time32ms"] = _apply_mask(pa.array(rng.integers(0, 86400_000, n, dtype=np.int32)).cast(
        pa.time32("ms")), _mask(rng, n, p))
    cols["time64us"] = _apply_mask(pa.array(rng.integers(0, 86400 * 10**6, n)).cast(
        pa.time64("us")), _mask(rng, n, p))
    cols["time64ns"] = _apply_mask(pa.array(rng.integers(0, 86400 * 10**9, n)).cast(
        pa.time64("ns")), _mask(rng, n, p))
    for unit in ("s", "ms", "us", "ns"):
        for tz in (None, "UTC", "America/New_York"):
            key = f"ts_{unit}_{tz or 'naive'}".replace("/", "_")
            cols[key] = _apply_mask(pa.array(rng.integers(0, 2**40, n)).cast(
                pa.timestamp(unit, tz)), _mask(rng, n, p))
    cols["duration"] = _apply_mask(pa.array(rng.integers(0, 2**40, n)).cast(pa.duration("ms")),
                                   _mask(rng, n, p))
    cols["dec128"] = _apply_mask(pa.array([decimal.Decimal(int(v)).scaleb(-3)
                                           for v in rng.integers(-10**9, 10**9, n)],
                                          pa.decimal128(12, 3)), _mask(rng, n, p))
    cols["dec256"] = _apply_mask(pa.array([decimal.Decimal(int(v)).scaleb(-2)
                                           for v in rng.integers(-10**9, 10**9, n)],
                                          pa.decimal256(45, 2)), _mask(rng, n, p))
    cols["string"] = _strings(rng, n, p=p)
    cols["large_string"] = _strings(rng, n, large=True, p=p)
    cols["binary"] = _strings(rng, n, binary=True, p=p)
    cols["large_binary"] = _strings(rng, n, large=True, binary=True, p=p)
    cols["fsb"] = _apply_mask(pa.array([bytes(r) for r in rng.integers(0, 256, (n, 5),
                                                                      dtype=np.uint8)],
                                       pa.binary(5)), _mask(rng, n, p))
    cols["low_card"] = _apply_mask(pa.array(np.array(["red", "green", "blue", ""])[
        rng.integers(0, 4, n)]), _mask(rng, n, p))
    cols["dict"] = _apply_mask(pa.array(np.array(["a", "bb", "ccc"])[rng.integers(0, 3, n)]),
                               _mask(rng, n, p)).dictionary_encode()
    cols["list_i32"] = _lists(rng, n, lambda k: _ints(rng, k, np.int32, p), p=p)
    cols["large_list_str"] = _lists(rng, n, lambda k: _strings(rng, k, p=p), large=True, p=p)
    cols["list_list"] = _lists(rng, n, lambda k: _lists(rng, k, lambda j: _ints(rng, j, np.int16, p),
                                                       p=p), p=p)
    vec = rng.standard_normal(n * dim).astype(np.float32)
    cols["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vec), dim,
                                                       mask=pa.array(_mask(rng, n, p)))
    cols["fsl_i16"] = pa.FixedSizeListArray.from_arrays(_ints(rng, n * 3, np.int16, p), 3)
    inner = pa.StructArray.from_arrays(
        [_ints(rng, n, np.int64, p), _strings(rng, n, p=p)], names=["x", "y"])
    cols["struct"] = pa.StructArray.from_arrays(
        [inner, _lists(rng, n, lambda k: _ints(rng, k, np.uint8, p), p=p),
         pa.array(rng.random(n) < 0.5)], names=["inner", "tags", "flag"])
    cols["list_struct"] = _lists(rng, n, lambda k: pa.StructArray.from_arrays(
        [_ints(rng, k, np.int32, p), _strings(rng, k, p=p)], names=["a", "b"]), p=p)
    cols["all_null_int"] = pa.nulls(n, pa.int32())
    cols["all_null_str"] = pa.nulls(n, pa.string())
    cols["all_null_list"] = pa.nulls(n, pa.list_(pa.int64()))
    cols["null"] = pa.nulls(n)
    return pa.table(cols)


def equal_ignoring_dictionaries(a: pa.Table, b: pa.Table) -> bool:
    """Equality where dictionary columns compare by value (Lance adds a null item)."""
    if a.column_names != b.column_names or a.num_rows != b.num_rows:
        return False
    for name in a.column_names:
        x, y = a[name], b[name]
        if pa.types.is_dictionary(x.type):
            x = x.cast(x.type.value_type)
        if pa.types.is_dictionary(y.type):
            y = y.cast(y.type.value_type)
        if not x.equals(y):
            return False
    return True


def diff(a: pa.Table, b: pa.Table) -> list[str]:
    return [n for n in a.column_names if n not in b.column_names or not a[n].equals(b[n])]
