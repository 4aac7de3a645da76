"""Pure-Python twins of the row-id codec, used only to check the Cython results.

* ``reference_kind(values)``: Lance's segment-shape rule, restated from lance_facts.md §6.
* ``reference_decode(data)``: a hand-written protobuf walk of RowIdSequence bytes -> list[int].
* ``reference_encode(values)``: RowIdSequence bytes through the generated protobuf classes.
"""
from lancefmt._proto import rowids_pb2

U64_MAX = (1 << 64) - 1
RANGE, HOLES, BITMAP, SORTED, ARRAY = 1, 2, 3, 4, 5


def reference_kind(values):
    """The segment kind Lance picks for ``values`` (distinct u64s)."""
    values = [int(v) for v in values]
    if any(b < a for a, b in zip(values, values[1:])):
        return ARRAY
    if not values:
        return RANGE
    lo, hi, n = values[0], values[-1], len(values)
    if hi == U64_MAX:
        return SORTED
    span = hi - lo + 1
    if span == n:
        return RANGE
    holes = 24 + 4 * (span - n)
    bitmap = 24 + -(-span // 8)
    sorted_array = 24 + 2 * n
    best = min(holes, bitmap, sorted_array)
    if best == holes:
        return HOLES
    if best == bitmap:
        return BITMAP
    return SORTED


def reference_width(values):
    if not values:
        return 64
    span = max(values) - min(values)
    return 16 if span <= 0xFFFF else (32 if span <= 0xFFFFFFFF else 64)


def _encoded_array(msg, values):
    values = [int(v) for v in values]
    width = reference_width(values)
    if width == 64:
        msg.u64_array.values = b"".join(v.to_bytes(8, "little") for v in values)
        return
    base = min(values)
    sub = msg.u16_array if width == 16 else msg.u32_array
    sub.base = base
    sub.offsets = b"".join((v - base).to_bytes(width // 8, "little") for v in values)


def reference_encode(values):
    """RowIdSequence bytes for ``values`` (one segment), via the generated protobuf classes."""
    values = [int(v) for v in values]
    seq = rowids_pb2.RowIdSequence()
    if not values:
        return seq.SerializeToString()
    seg = seq.segments.add()
    kind = reference_kind(values)
    if kind == ARRAY:
        _encoded_array(seg.array, values)
    elif kind == SORTED:
        _encoded_array(seg.sorted_array, values)
    elif kind == RANGE:
        seg.range.start = values[0]
        seg.range.end = values[-1] + 1
    else:
        lo, hi = values[0], values[-1]
        present = set(values)
        if kind == HOLES:
            seg.range_with_holes.start = lo
            seg.range_with_holes.end = hi + 1
            _encoded_array(seg.range_with_holes.holes,
                           [v for v in range(lo, hi + 1) if v not in present])
        else:
            bits = bytearray((hi - lo + 1 + 7) // 8)
            for v in values:
                bits[(v - lo) // 8] |= 1 << ((v - lo) % 8)
            seg.range_with_bitmap.start = lo
            seg.range_with_bitmap.end = hi + 1
            seg.range_with_bitmap.bitmap = bytes(bits)
    return seq.SerializeToString()


# -- a deliberately plain protobuf walk ---------------------------------------------------------
def _varint(b, i):
    shift = result = 0
    while True:
        byte = b[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, i
        shift += 7


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            value, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            value = b[i:i + n]
            i += n
        elif wt == 1:
            value = b[i:i + 8]
            i += 8
        elif wt == 5:
            value = b[i:i + 4]
            i += 4
        else:
            raise ValueError("group wire type")
        yield field, value


def _decode_array(b):
    kind, body = None, None
    for f, v in _fields(b):
        kind, body = f, v
    base, payload = 0, b""
    for f, v in _fields(body):
        if f == 1 and kind != 3:
            base = v
        elif f == 2:
            payload = v
    width = {1: 2, 2: 4, 3: 8}[kind]
    vals = [int.from_bytes(payload[j:j + width], "little") for j in range(0, len(payload), width)]
    return vals if kind == 3 else [base + v for v in vals]


def reference_decode_segment(b):
    kind, body = None, None
    for f, v in _fields(b):
        kind, body = f, v
    if kind in (4, 5):
        return _decode_array(body)
    start = end = 0
    extra = b""
    for f, v in _fields(body):
        if f == 1:
            start = v
        elif f == 2:
            end = v
        elif f == 3:
            extra = v
    if kind == 1:
        return list(range(start, end))
    if kind == 2:
        holes = set(_decode_array(extra))
        return [v for v in range(start, end) if v not in holes]
    return [start + i for i in range(end - start) if extra[i // 8] >> (i % 8) & 1]


def reference_decode(b):
    out = []
    for f, v in _fields(b):
        if f == 1:
            out.extend(reference_decode_segment(v))
    return out


def reference_decode_versions(b):
    out = []
    for f, run in _fields(b):
        if f != 1:
            continue
        span, version = b"", 0
        for g, v in _fields(run):
            if g == 1:
                span = v
            elif g == 2:
                version = v
        out.extend([version] * len(reference_decode_segment(span)))
    return out
