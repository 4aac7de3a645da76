"""Pure-Python reference implementations of the Cython kernels (test oracles only)."""


def decode_adjusted_offsets(ends, adjustment, limit):
    offsets, valid = [0], []
    prev = 0
    for i, v in enumerate(ends):
        v = int(v)
        if v >= adjustment:
            v -= adjustment
            valid.append(False)
        else:
            valid.append(True)
        if v < prev or v > limit:
            return None, None, i
        offsets.append(v)
        prev = v
    return offsets, valid, -1


def encode_adjusted_offsets(offsets, valid, adjustment=None):
    base = offsets[0]
    ends = [o - base for o in offsets[1:]]
    adj = adjustment if adjustment else ((ends[-1] + 1) if ends else 1)
    return [e + (0 if ok else adj) for e, ok in zip(ends, valid)], adj


def bits(bitmap, n, offset=0):
    return [bool((bitmap[(i + offset) >> 3] >> ((i + offset) & 7)) & 1) for i in range(n)]
