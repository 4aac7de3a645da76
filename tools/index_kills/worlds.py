"""The datasets a campaign works on ("worlds"): where they live (a local directory, or a bucket
of a moto S3 server on loopback), how they start (file version, stable row ids, indices built
by pylance or lancefmt) and the mutations between two kills, with the ids that must be there."""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field

import numpy as np

from .checks import Target
from .data import INDICES, rows

VERSIONS = ("2.0", "2.1", "2.2")


class S3Env:
    """A moto S3 server on loopback (port chosen by the OS), in this process."""

    def __init__(self):
        import logging

        import moto.s3.models
        from moto.server import ThreadedMotoServer

        moto.s3.models.S3_UPLOAD_PART_MIN_SIZE = 1024  # the writers' small parts (kills.py)

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request

        os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.boto = {"endpoint_url": self.endpoint, "aws_access_key_id": "testing",
                     "aws_secret_access_key": "testing", "region_name": "us-east-1"}

    def target(self, name: str) -> Target:
        import boto3

        bucket = f"kills-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", **self.boto).create_bucket(Bucket=bucket)
        lf = {"key": "testing", "secret": "testing", "endpoint_url": self.endpoint,
              "client_kwargs": {"region_name": "us-east-1"}}
        pl = {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1",
              "endpoint": self.endpoint, "allow_http": "true"}
        return Target(f"s3://{bucket}/{name}", lf, pl, self.boto)

    def stop(self) -> None:
        self.server.stop()


@dataclass
class World:
    """One dataset and what must be in it."""

    target: Target
    lib_rows: int  # rows written at creation
    stable: bool
    version: str
    ids: set = field(default_factory=set)
    next_id: int = 0
    label: str = ""

    # -- mutations (made by the campaign itself, with either library) ---------------------------
    def append(self, rng: np.random.Generator, n: int | None = None, lib: str | None = None) -> None:
        n = int(n or rng.integers(200, 1200))
        data = rows(self.next_id, n)
        lib = lib or ("pylance" if rng.random() < 0.5 else "lancefmt")
        if lib == "pylance":
            import lance

            lance.write_dataset(data, self.target.uri, mode="append",
                                storage_options=self.target.pl_options)
        else:
            import lancefmt

            lancefmt.write_dataset(data, self.target.uri, mode="append",
                                   storage_options=self.target.lf_options)
        self.ids |= set(range(self.next_id, self.next_id + n))
        self.next_id += n

    def delete(self, rng: np.random.Generator) -> None:
        """Delete ``id % m = r`` below a random bound (a deletion file per touched fragment),
        or now and then a whole initial fragment."""
        if rng.random() < 0.2:
            k = int(rng.integers(0, self.lib_rows // 1000))
            pred = f"id >= {k * 1000} AND id < {k * 1000 + 1000}"
            self._delete(rng, pred)
            self.ids = {i for i in self.ids if not k * 1000 <= i < k * 1000 + 1000}
            return
        m, r = int(rng.integers(5, 12)), int(rng.integers(0, 5))
        hi = int(rng.integers(self.next_id // 4, self.next_id + 1))
        pred = f"id % {m} = {r} AND id < {hi}"
        self._delete(rng, pred)
        self.ids = {i for i in self.ids if not (i % m == r and i < hi)}

    def _delete(self, rng: np.random.Generator, pred: str) -> None:
        if rng.random() < 0.5:
            self.target.pylance().delete(pred)
        else:
            self.target.lancefmt().delete(pred)

    def expected(self) -> np.ndarray:
        return np.fromiter(self.ids, np.int64, len(self.ids))


def new_world(target: Target, rng: np.random.Generator, n_rows: int = 6000,
              n_indices: int | None = None) -> World:
    """A dataset of ``n_rows`` in fragments of 1,000 (random file version, stable row ids on or
    off), with some of :data:`INDICES` built by pylance or lancefmt."""
    import lance

    import lancefmt

    version = VERSIONS[int(rng.integers(0, 3))]
    stable = bool(rng.random() < 0.5)
    data = rows(0, n_rows)
    if rng.random() < 0.5:
        lance.write_dataset(data, target.uri, max_rows_per_file=1000, data_storage_version=version,
                            enable_stable_row_ids=stable, storage_options=target.pl_options)
    else:
        lancefmt.write_dataset(data, target.uri, max_rows_per_file=1000,
                               data_storage_version=version, enable_stable_row_ids=stable,
                               storage_options=target.lf_options)
    names = list(INDICES)
    k = len(names) if n_indices is None else n_indices
    for name in rng.permutation(names)[:k].tolist():
        column, itype = INDICES[name]
        ds = target.pylance() if rng.random() < 0.5 else target.lancefmt()
        ds.create_scalar_index(column, itype, name=name)
    w = World(target, n_rows, stable, version, set(range(n_rows)), n_rows)
    w.label = f"{'s3' if target.s3 else 'local'} v{version}{' stable' if stable else ''}"
    return w
