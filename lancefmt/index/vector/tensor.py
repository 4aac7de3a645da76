"""Lance's ``Tensor`` message (``protos/index.proto``): a typed, shaped little-endian buffer.

Vector indices keep IVF centroids and PQ codebooks in it. Reading checks the data type, that
the shape's product matches the buffer, and that nothing is negative or absurd before any
array is made; a bad tensor is a :class:`~lancefmt.errors.CorruptFileError` naming the file.
"""
from __future__ import annotations

import numpy as np

from ..._proto import index_pb2
from ...errors import CorruptFileError

_TYPES = {
    index_pb2.Tensor.FLOAT16: np.dtype("<f2"),
    index_pb2.Tensor.FLOAT32: np.dtype("<f4"),
    index_pb2.Tensor.FLOAT64: np.dtype("<f8"),
    index_pb2.Tensor.UINT8: np.dtype("u1"),
    index_pb2.Tensor.UINT16: np.dtype("<u2"),
    index_pb2.Tensor.UINT32: np.dtype("<u4"),
    index_pb2.Tensor.UINT64: np.dtype("<u8"),
}
_CODES = {np.dtype(v).str: k for k, v in _TYPES.items()}


def to_tensor(array: np.ndarray) -> index_pb2.Tensor:
    a = np.ascontiguousarray(array)
    dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    code = _CODES.get(np.dtype(dt).str)
    if code is None:
        raise TypeError(f"no tensor type for {a.dtype}")
    out = index_pb2.Tensor()
    out.data_type = code
    out.shape.extend(int(s) for s in a.shape)
    out.data = a.astype(dt, copy=False).tobytes()
    return out


def tensor_bytes(array: np.ndarray) -> bytes:
    return to_tensor(array).SerializeToString()


def from_tensor(msg: index_pb2.Tensor, path: str | None = None, ndim: int | None = None) -> np.ndarray:
    """The array of ``msg`` (checked; see module docstring)."""
    dtype = _TYPES.get(msg.data_type)
    if dtype is None:
        raise CorruptFileError(f"tensor of unsupported data type {msg.data_type}", path)
    shape = tuple(int(s) for s in msg.shape)
    if ndim is not None and len(shape) != ndim:
        raise CorruptFileError(f"tensor of shape {list(shape)}, expected {ndim} dimensions", path)
    count, extent = 1, 1
    for s in shape:
        count *= s
        extent *= max(s, 1)
    if extent >= 1 << 31:  # an empty tensor's other dimensions: more than numpy can shape
        raise CorruptFileError(f"tensor of shape {list(shape)}", path)
    if count * dtype.itemsize != len(msg.data):
        raise CorruptFileError(f"tensor of shape {list(shape)} holds {len(msg.data)} bytes", path)
    return np.frombuffer(msg.data, dtype=dtype).reshape(shape)


def parse_tensor(raw: bytes, path: str | None = None, ndim: int | None = None) -> np.ndarray:
    msg = index_pb2.Tensor()
    try:
        msg.ParseFromString(raw)
    except Exception as e:  # noqa: BLE001 -- protobuf's DecodeError and friends
        raise CorruptFileError(f"bad tensor ({e})", path) from None
    return from_tensor(msg, path, ndim)
