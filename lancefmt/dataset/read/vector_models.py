"""pylance's trained vector models, ``lance.indices.IvfModel`` and ``PqModel``: what the steps
of :class:`lancefmt.indices.IndicesBuilder` pass between them, and what checkpoints them.

``save`` writes one Lance file as pylance does (one fixed-size-list column, ``centroids`` or
``codebook``, and the model's other fields as schema metadata), so a model saved by either
library loads in the other.
"""
from __future__ import annotations

import pyarrow as pa

from ...errors import CorruptFileError
from ...file import LanceFileReader, LanceFileWriter


def _read_column(uri: str, name: str, storage_options):
    reader = LanceFileReader(uri, storage_options=storage_options)
    meta = reader.metadata()
    table = reader.read_all(batch_size=max(1, meta.num_rows)).to_table()
    if name not in table.column_names or not pa.types.is_fixed_size_list(table.schema.field(name).type):
        raise CorruptFileError(f"a model file needs a fixed-size-list column {name!r}", uri)
    return table.column(name).combine_chunks(), meta.schema.metadata or {}


class IvfModel:
    """Centroids (fixed-size lists) and the ``distance_type`` they were trained with."""

    def __init__(self, centroids, distance_type: str):
        self.centroids = centroids
        self.distance_type = distance_type

    @property
    def num_partitions(self) -> int:
        return len(self.centroids)

    def save(self, uri: str, *, storage_options: dict | None = None) -> None:
        schema = pa.schema([pa.field("centroids", self.centroids.type)],
                           metadata={b"distance_type": self.distance_type.encode()})
        with LanceFileWriter(uri, schema, storage_options=storage_options) as writer:
            writer.write_batch(pa.table([self.centroids], schema=schema))

    @classmethod
    def load(cls, uri: str, *, storage_options: dict | None = None) -> "IvfModel":
        centroids, meta = _read_column(uri, "centroids", storage_options)
        if b"distance_type" not in meta:
            raise CorruptFileError("an IVF model file without distance_type metadata", uri)
        return cls(centroids, meta[b"distance_type"].decode())

    def __repr__(self):
        return f"IvfModel(num_partitions={self.num_partitions}, distance_type={self.distance_type!r})"


class PqModel:
    """A PQ codebook: ``2^num_bits`` rows of ``dimension`` values, sub-vector major (the flat
    layout of Lance's ``[num_subvectors][2^num_bits][dimension / num_subvectors]`` tensor)."""

    def __init__(self, num_subvectors: int, codebook, *, num_bits: int = 8):
        self.num_subvectors = num_subvectors
        self.num_bits = num_bits
        self.codebook = codebook

    @property
    def dimension(self) -> int:
        return self.codebook.type.list_size

    def save(self, uri: str, *, storage_options: dict | None = None) -> None:
        schema = pa.schema([pa.field("codebook", self.codebook.type)],
                           metadata={b"num_subvectors": str(self.num_subvectors).encode(),
                                     b"num_bits": str(self.num_bits).encode()})
        with LanceFileWriter(uri, schema, storage_options=storage_options) as writer:
            writer.write_batch(pa.table([self.codebook], schema=schema))

    @classmethod
    def load(cls, uri: str, *, storage_options: dict | None = None) -> "PqModel":
        codebook, meta = _read_column(uri, "codebook", storage_options)
        try:
            m = int(meta[b"num_subvectors"].decode())
            bits = int(meta.get(b"num_bits", b"8").decode())
        except (KeyError, ValueError) as e:
            raise CorruptFileError(f"a PQ model file with bad metadata ({e})", uri) from None
        return cls(m, codebook, num_bits=bits)

    def __repr__(self):
        return (f"PqModel(num_subvectors={self.num_subvectors}, num_bits={self.num_bits}, "
                f"dimension={self.dimension})")
