"""Declared sizes set to huge values, one at a time:
``python -m fuzz.int_probe SEEDS_DIR [TARGET ...]`` (``FUZZ_PROBE_SEEDS=N``: N seeds a target).

Byte-level fuzzing rarely turns a count of 50 into 2**40 inside a protobuf (that needs a longer
varint). This probe does it on purpose: every integer field of a seed's metadata, at any depth
(the encodings packed in ``Any`` messages included), is set to a few extreme values in turn, the
file is rebuilt around it and read the way its fuzz target reads it, under the same 1 GiB
address-space cap (:mod:`fuzz.memcap`). An allocation the input cannot back, an escape other
than a LanceError, or a read that runs past ``FUZZ_PROBE_TIMEOUT`` seconds is reported.

Probed: 2.0/2.1/2.2 data files (``file_v2_0``/``file_v2_1`` seeds: column metadata and the
FileDescriptor), manifests (``manifest``/``manifest_old`` seeds: the Manifest message), and the
newest manifest of the ``dataset``/``dataset_legacy`` datasets, read with their data files,
row-id sequences and transactions.
"""
from __future__ import annotations

import json
import os
import signal
import struct
import sys
import traceback

from fuzz.memcap import cap_address_space

_INT32 = (2**31 - 1, -1, -(2**31))
_UINT32 = (2**32 - 1, 2**31)
_INT64 = (2**40, 2**62, -1)
_UINT64 = (2**40, 2**63, 2**64 - 1)


def _values(field) -> tuple:
    t = field.type
    if t in (field.TYPE_INT32, field.TYPE_SINT32, field.TYPE_SFIXED32, field.TYPE_ENUM):
        return _INT32 if t != field.TYPE_ENUM else ()
    if t in (field.TYPE_UINT32, field.TYPE_FIXED32):
        return _UINT32
    if t in (field.TYPE_INT64, field.TYPE_SINT64, field.TYPE_SFIXED64):
        return _INT64
    if t in (field.TYPE_UINT64, field.TYPE_FIXED64):
        return _UINT64
    return ()


def _any_class(type_url: str):
    from lancefmt._proto import encodings_v2_0_pb2, encodings_v2_1_pb2

    name = type_url.rsplit("/", 1)[-1]
    for module in (encodings_v2_0_pb2, encodings_v2_1_pb2):
        for cls_name in dir(module):
            cls = getattr(module, cls_name)
            if getattr(getattr(cls, "DESCRIPTOR", None), "full_name", None) == name:
                return cls
    return None


def _is_packed_any(msg, field) -> bool:
    return msg.DESCRIPTOR.full_name == "lance.file.v2.DirectEncoding" and field.name == "encoding"


def sites(msg, path=()):
    """``(path, field)`` of every integer field under ``msg`` (set or not); a path step is
    ``(name, index)`` (index None for a singular field) or ``(name, "any")`` into a packed Any."""
    from google.protobuf import any_pb2

    for f in msg.DESCRIPTOR.fields:
        repeated = f.is_repeated
        if f.type == f.TYPE_MESSAGE:
            if f.message_type.GetOptions().map_entry:
                continue
            subs = enumerate(getattr(msg, f.name)) if repeated else (
                [(None, getattr(msg, f.name))] if msg.HasField(f.name) else [])
            for i, sub in subs:
                yield from sites(sub, path + ((f.name, i),))
        elif _is_packed_any(msg, f):
            packed = any_pb2.Any.FromString(msg.encoding)
            cls = _any_class(packed.type_url)
            if cls is not None:
                yield from sites(cls.FromString(packed.value), path + ((f.name, "any"),))
        elif _values(f):
            if repeated:
                for i in range(len(getattr(msg, f.name))):
                    yield path + ((f.name, i),), f
            else:
                yield path + ((f.name, None),), f


def apply(msg, path, value) -> None:
    """Set the integer at ``path`` (from :func:`sites`) under ``msg`` to ``value``."""
    from google.protobuf import any_pb2

    (name, index), rest = path[0], path[1:]
    if index == "any":
        packed = any_pb2.Any.FromString(getattr(msg, name))
        inner = _any_class(packed.type_url).FromString(packed.value)
        apply(inner, rest, value)
        packed.value = inner.SerializeToString()
        setattr(msg, name, packed.SerializeToString())
    elif rest:
        apply(getattr(msg, name)[index] if index is not None else getattr(msg, name), rest, value)
    elif index is None:
        setattr(msg, name, value)
    else:
        getattr(msg, name)[index] = value


class DataFile:
    """A 2.x data file as its FileDescriptor and column metadata messages, rebuilt after an
    edit (pages and other global buffers stay where they are)."""

    def __init__(self, data: bytes):
        from lancefmt._proto import file2_pb2, file_pb2
        from lancefmt.file.format import FOOTER_SIZE, Footer, parse_offset_table

        self.data, self.footer = data, Footer.parse(data, len(data))
        f = self.footer
        self.gbo = [tuple(map(int, e)) for e in zip(*parse_offset_table(
            data[f.gbo_offset:len(data) - FOOTER_SIZE], f.num_global_buffers, f.gbo_offset,
            "global buffer"))]
        cmo = zip(*parse_offset_table(data[f.cmo_offset:f.gbo_offset], f.num_columns,
                                      f.cmo_offset, "column metadata"))
        fd_pos, fd_size = self.gbo[0]
        self.parts = [file_pb2.FileDescriptor.FromString(data[fd_pos:fd_pos + fd_size])]
        self.parts += [file2_pb2.ColumnMetadata.FromString(data[int(p):int(p) + int(s)])
                       for p, s in cmo]

    def rebuild(self, parts) -> bytes:
        from lancefmt.file.format import Footer, offset_table_bytes

        out = bytearray(self.data[:self.gbo[0][0]])
        blobs = [p.SerializeToString() for p in parts]
        fd = (len(out), len(blobs[0]))
        out += blobs[0]
        column_start, cmo = len(out), []
        for b in blobs[1:]:
            cmo.append((len(out), len(b)))
            out += b
        cmo_offset = len(out)
        out += offset_table_bytes(cmo)
        gbo_offset = len(out)
        out += offset_table_bytes([fd] + self.gbo[1:])
        f = self.footer
        out += Footer(column_start, cmo_offset, gbo_offset, f.num_global_buffers,
                      f.num_columns, f.major, f.minor).to_bytes()
        return bytes(out)

    def mutations(self):
        for k, part in enumerate(self.parts):
            for path, field in sites(part):
                for value in _values(field):
                    parts = [type(p).FromString(p.SerializeToString()) for p in self.parts]
                    try:
                        apply(parts[k], path, value)
                    except (ValueError, TypeError, OverflowError):
                        continue
                    yield f"part {k} {_name(path)}={value}", self.rebuild(parts)


class ManifestFile:
    """A manifest file's Manifest message, re-encoded after an edit (its transaction and
    index sections kept)."""

    def __init__(self, data: bytes):
        from lancefmt.table.manifest import parse_manifest_file

        self.mf = parse_manifest_file(data, "probe.manifest")
        self.data = data

    def mutations(self):
        from lancefmt._proto import table_pb2

        start = self.mf._msg_start - 4
        for path, field in sites(self.mf.manifest):
            for value in _values(field):
                m = table_pb2.Manifest()
                m.CopyFrom(self.mf.manifest)
                try:
                    apply(m, path, value)
                except (ValueError, TypeError, OverflowError):
                    continue
                body = m.SerializeToString()
                yield (f"manifest {_name(path)}={value}",
                       self.data[:start] + struct.pack("<I", len(body)) + body + self.data[-16:])


class ProtoSeed:
    """A seed that is one protobuf message after ``skip`` bytes (kept as they are)."""

    def __init__(self, cls, data: bytes, skip: int = 0):
        self.msg, self.head = cls.FromString(data[skip:]), data[:skip]

    def mutations(self):
        for path, field in sites(self.msg):
            for value in _values(field):
                m = type(self.msg).FromString(self.msg.SerializeToString())
                try:
                    apply(m, path, value)
                except (ValueError, TypeError, OverflowError):
                    continue
                yield f"{_name(path)}={value}", self.head + m.SerializeToString()


def _row_ids(data: bytes) -> ProtoSeed:
    from lancefmt._proto import rowids_pb2

    # (a version sequence parses as one too: both keep their repeated runs/segments in field 1,
    # and the target decodes the mutated bytes both ways)
    return ProtoSeed(rowids_pb2.RowIdSequence, data, 2)


def _transaction(data: bytes) -> ProtoSeed:
    from lancefmt._proto import transaction_pb2

    return ProtoSeed(transaction_pb2.Transaction, data)


def dataset_manifest_inputs(seeds: str, source: str = "dataset_source"):
    """``(what, input)`` of the ``dataset`` target: the newest manifest of its dataset with one
    integer set to an extreme value (physical rows, file sizes, deletion counts, row ids...),
    read with the dataset's real data and deletion files."""
    root = os.path.join(seeds, source)
    files = sorted(os.path.relpath(os.path.join(d, n), root)
                   for d, _, names in os.walk(root) for n in names)
    from lancefmt.table.versions import latest_manifest

    newest = os.path.relpath(latest_manifest(root).uri, root)
    with open(os.path.join(root, newest), "rb") as f:
        data = f.read()
    for what, mutated in ManifestFile(data).mutations():
        yield what, bytes([files.index(newest)]) + mutated


def _name(path) -> str:
    return ".".join(n if i is None else f"{n}[{i}]" for n, i in path)


def _inputs(seeds: str, plan):
    """``(target, [(seed, mutations)])`` for each probed target."""
    for name, kind in plan:
        d = os.path.join(seeds, name)
        per_seed = []
        for seed in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            with open(os.path.join(d, seed), "rb") as f:
                data = f.read()
            try:
                per_seed.append((seed, kind(data).mutations()))
            except Exception:  # noqa: BLE001 - a seed this probe cannot take apart
                continue
        yield name, per_seed
    for name, source in (("dataset", "dataset_source"), ("dataset_legacy", "dataset_legacy_source")):
        if os.path.isdir(os.path.join(seeds, source)):
            yield name, [(source, dataset_manifest_inputs(seeds, source))]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.exit("usage: python -m fuzz.int_probe SEEDS_DIR [TARGET ...]")
    mem = cap_address_space(1024, "fuzz.int_probe")
    from fuzz.targets import make_target

    seeds, timeout = argv[1], int(os.environ.get("FUZZ_PROBE_TIMEOUT", "20"))
    only = set(argv[2:])
    most = int(os.environ.get("FUZZ_PROBE_SEEDS", "0")) or None
    signal.signal(signal.SIGALRM, _alarm)
    plan = [("file_v2_0", DataFile), ("file_v2_1", DataFile),
            ("manifest", ManifestFile), ("manifest_old", ManifestFile),
            ("rowids", _row_ids), ("transaction", _transaction)]
    runs, findings = 0, []
    for name, inputs in _inputs(seeds, plan):
        if only and name not in only:
            continue
        target = make_target(name, seeds)
        for seed, mutations in inputs[:most]:
            for what, mutated in mutations:
                runs += 1
                signal.alarm(timeout)
                try:
                    target(mutated)
                except _Timeout:
                    findings.append(f"{name}/{seed}: {what}: over {timeout} s")
                    print(f"FINDING {findings[-1]}", flush=True)
                except Exception:  # noqa: BLE001 - every escape is a finding
                    findings.append(f"{name}/{seed}: {what}")
                    print(f"FINDING {findings[-1]}\n{traceback.format_exc()}", flush=True)
                finally:
                    signal.alarm(0)
    print(json.dumps({"runs": runs, "findings": findings, "cap_mb": mem >> 20}), flush=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
