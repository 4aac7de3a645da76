"""The keys a merge insert inserted, carried by its ``Update`` for conflict checks.

Lance attaches a ``KeyExistenceFilter`` (``Update.inserted_rows``) when a merge inserts on the
columns of the schema's unenforced primary key: a writer that commits after another one
inserted one of the same keys must retry, or the key would exist twice. Lance writes a split
block bloom filter over XxHash64; lancefmt writes the exact set of 64-bit key hashes
(``ExactKeySetFilter``) of its own scheme below. Two exact sets are compared exactly; any
comparison with a bloom filter (or filters on different key columns) counts as an
intersection, which is what Lance itself does for an exact set against a bloom filter, so
mixing lancefmt and pylance writers can only cause a retry, never a missed conflict.

Key bytes follow Lance's ``KeyValue::to_bytes``: UTF-8 text, little-endian i64 for signed and
u64 for unsigned integers, raw binary, parts of a composite key each followed by a 0 byte;
rows with a null key part are not tracked (as in Lance). The hash is the first 8 bytes of
BLAKE2b of those bytes, little-endian; a single integer key column is hashed by SplitMix64's
finalizer over its 64-bit value instead (vectorised, and collision-free).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class KeyFilter:
    """``field_ids`` of the key columns; ``hashes`` (exact) or ``bloom`` (a Lance filter,
    kept as protobuf bytes so it survives a round trip)."""

    field_ids: tuple
    hashes: frozenset | None = None
    bloom: bytes | None = None

    def intersects(self, other: "KeyFilter") -> bool:
        """May the two sets of inserted keys overlap? (True when it cannot be told.)"""
        if tuple(self.field_ids) != tuple(other.field_ids):
            return True
        if self.hashes is None or other.hashes is None:
            return True
        small, big = sorted((self.hashes, other.hashes), key=len)
        return any(h in big for h in small)

    def to_pb(self, pb) -> None:
        pb.field_ids.extend(self.field_ids)
        if self.bloom is not None:
            pb.bloom.ParseFromString(self.bloom)
        else:
            pb.exact.SetInParent()
            pb.exact.key_hashes.extend(sorted(self.hashes or ()))

    @classmethod
    def from_pb(cls, pb) -> "KeyFilter":
        kind = pb.WhichOneof("data")
        if kind == "bloom":
            return cls(tuple(pb.field_ids), None, pb.bloom.SerializeToString())
        return cls(tuple(pb.field_ids), frozenset(pb.exact.key_hashes))  # none: an empty set


def primary_key_ids(lance_fields, on) -> tuple | None:
    """The field ids of ``on`` when they are exactly the unenforced primary key (top-level
    fields), else None: Lance tracks inserted keys only then."""
    pk = {f.name: f.id for f in lance_fields if f.parent_id == -1 and _is_key(f)}
    if not pk or set(pk) != set(on):
        return None
    return tuple(sorted(pk.values()))


def _is_key(field) -> bool:
    """Lance marks the key with ``lance-schema:unenforced-primary-key`` (true) or its
    ``...:position`` variant in the field metadata."""
    md = field.metadata
    flag = md.get(PK_KEY, b"").decode("utf-8", "replace").lower() in ("true", "1", "yes")
    return bool(field.unenforced_primary_key or flag or f"{PK_KEY}:position" in md)


PK_KEY = "lance-schema:unenforced-primary-key"


def key_hashes(table: pa.Table | pa.RecordBatch, on) -> np.ndarray:
    """The 64-bit hashes of the keys ``on`` of the rows of ``table`` (rows with a null key part
    left out), as uint64."""
    if not table.num_rows:
        return np.empty(0, np.uint64)
    valid = None
    for k in on:
        v = pc.is_valid(table.column(k))
        valid = v if valid is None else pc.and_(valid, v)
    if not pc.all(valid).as_py():
        table = table.filter(valid)
    if len(on) == 1 and pa.types.is_integer(table.schema.field(on[0]).type):
        return _mix64(_integers(table.column(on[0])))
    parts = [_key_bytes(table.column(k)) for k in on]
    out = np.empty(table.num_rows, np.uint64)
    if len(on) == 1:
        rows = parts[0]
    else:
        rows = [b"".join(p + b"\0" for p in row) for row in zip(*parts)]
    for i, b in enumerate(rows):
        out[i] = int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "little")
    return out


def _integers(col) -> np.ndarray:
    """An integer key column as uint64 bit patterns (signed values as i64, as Lance's bytes)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    dt = np.int64 if pa.types.is_signed_integer(col.type) else np.uint64
    return np.ascontiguousarray(col.to_numpy(zero_copy_only=False).astype(dt)).view(np.uint64)


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer over uint64s: a bijection, so distinct keys never collide (one
    vectorised pass instead of a digest per key)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _key_bytes(col) -> list:
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    t = col.type
    if pa.types.is_integer(t):
        dt = "<i8" if pa.types.is_signed_integer(t) else "<u8"
        raw = col.to_numpy(zero_copy_only=False).astype(dt).tobytes()
        return [raw[i:i + 8] for i in range(0, len(raw), 8)]
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [s.encode("utf-8") for s in col.to_pylist()]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return list(col.to_pylist())
    return [repr(v).encode("utf-8") for v in col.to_pylist()]
