"""The legacy (pre-V3) IVF_PQ index file, read into the same :class:`IvfIndex` a V3 segment
loads into.

One file, ``index.idx``: every partition's rows (row-major PQ codes, ``length * code width``
bytes, then ``length`` little-endian u64 row ids) at the byte offset the IVF stage records,
then an ``Index`` protobuf (u32 length first; stages IVF and PQ, the metric), then a 16-byte footer (the
message's position, version 0.1, ``LANC``). pylance 14 writes it for IndicesBuilder's
``load_shuffled_vectors``; older releases wrote every IVF_PQ index this way.
"""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from ..._proto import index_pb2
from ...errors import CorruptFileError, NotSupportedError
from ..core.store import IndexStore
from .distance import metric_from_code
from .ivf import IvfModel
from .ivf_index import IvfIndex
from .layout import INDEX_FILE
from .quantizers import ProductQuantizer
from .tensor import from_tensor

_FOOTER = struct.Struct("<QHH4s")


def read_legacy(store: IndexStore):
    """The ``Index`` message and file bytes of a legacy ``index.idx``, or None when the file
    is not one (a V3 file)."""
    uri = store.uri(INDEX_FILE)
    io = store.store
    size = io.size(uri)
    if size < _FOOTER.size:
        return None
    pos, major, minor, magic = _FOOTER.unpack(io.read_range(uri, size - _FOOTER.size, _FOOTER.size))
    if magic != b"LANC" or (major, minor) != (0, 1):
        return None
    data = io.read_range(uri, 0, size - _FOOTER.size)
    if pos + 4 > len(data) or pos + 4 + struct.unpack_from("<I", data, pos)[0] > len(data):
        raise CorruptFileError(f"index message at {pos} past the footer", uri)
    msg = index_pb2.Index()
    try:
        msg.ParseFromString(data[pos + 4:pos + 4 + struct.unpack_from("<I", data, pos)[0]])
    except Exception as e:  # noqa: BLE001 -- protobuf's DecodeError and friends
        raise CorruptFileError(f"bad legacy index message ({e})", uri) from None
    if not msg.HasField("vector_index"):
        raise CorruptFileError("a legacy index file without a vector index", uri)
    return msg, memoryview(data)[:pos]


def load_legacy(store: IndexStore, msg, data, details=None) -> IvfIndex:
    """An :class:`IvfIndex` of the legacy file's IVF and PQ stages (see module docstring)."""
    uri = store.uri(INDEX_FILE)
    vi = msg.vector_index
    stages = [s.WhichOneof("stage") for s in vi.stages]
    if "transform" in stages:
        raise NotSupportedError(f"lancefmt does not read legacy OPQ indices ({uri})")
    if stages != ["ivf", "pq"]:
        raise NotSupportedError(f"lancefmt reads legacy IVF_PQ indices only, not stages {stages} ({uri})")
    if len(vi.stages[0].ivf.offsets) != len(vi.stages[0].ivf.lengths):
        raise CorruptFileError("legacy IVF stage with unequal offsets and lengths", uri)
    ivf = IvfModel.from_proto(vi.stages[0].ivf, uri)
    pqm = vi.stages[1].pq
    m, bits, dim = int(pqm.num_sub_vectors), int(pqm.num_bits) or 8, int(pqm.dimension)
    if bits not in (4, 8) or m <= 0 or dim % m or dim != ivf.dim:
        raise CorruptFileError(f"bad legacy PQ stage (m={m}, bits={bits}, dim={dim}, "
                               f"centroids of {ivf.dim})", uri)
    book = from_tensor(pqm.codebook_tensor, uri) if pqm.HasField("codebook_tensor") else \
        np.asarray(pqm.codebook, np.float32)
    if book.size != (1 << bits) * dim:
        raise CorruptFileError(f"legacy PQ codebook of {book.size} values for dim {dim}", uri)
    q = ProductQuantizer(dim, m, bits, book.astype(np.float32).reshape(-1))
    w = q.width
    lengths = ivf.lengths
    total = int(lengths.sum())
    if total * (w + 8) > len(data):  # before allocating: the partitions must fit the file
        raise CorruptFileError(f"partitions of {total} rows in all, {total * (w + 8)} bytes, "
                               f"past the data ({len(data)} bytes)", uri)
    codes = np.empty((total, w), np.uint8)
    row_ids = np.empty(total, np.uint64)
    at = 0
    for off, n in zip(ivf.offsets.tolist(), lengths.tolist()):
        if n < 0 or off < 0 or off + n * (w + 8) > len(data):
            raise CorruptFileError(f"a partition of {n} rows at byte {off} past the data "
                                   f"({len(data)} bytes)", uri)
        if n:
            codes[at:at + n] = np.frombuffer(data, np.uint8, n * w, off).reshape(n, w)
            row_ids[at:at + n] = np.frombuffer(data, "<u8", n, off + n * w)
        at += n
    ivf = IvfModel(ivf.centroids, np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64),
                   lengths, ivf.loss)
    metric = metric_from_code(int(vi.metric_type))
    stored = q.transpose(codes, ivf.offsets, ivf.lengths)
    out = IvfIndex("IVF_PQ", metric, ivf, q, row_ids, stored, pa.float32(), details)
    out.uri = uri
    out.file_version = "Legacy"
    out.uuid = store.dir_uri.rstrip("/").rsplit("/", 1)[-1]
    return out
