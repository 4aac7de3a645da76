"""``update_bases`` on a 100,000-fragment multi-base dataset: one new manifest, no data touched.

Fixture (``setup_cache``): lancefmt writes 4 real data files of 10 rows into a non-root base
``b1``; then commits (as an Overwrite with ``initial_bases``) version 1 whose 100,000 fragments
each point at one of those 4 files in base 1 - a real Lance dataset that pylance opens.

Timed:
* ``time_update_bases``: lancefmt relocates base ``b1`` (alternating between two paths that
  hold the same files): list ``_versions/``, read the latest manifest, build the next one,
  write the transaction and the manifest.
* ``time_pylance_add_bases``: the nearest pylance operation (pylance has no relocation API),
  ``add_bases`` of one new base: the same kind of commit (an UpdateBases) on the same manifest.
* ``track_speedup_update_bases``: pylance add_bases time / lancefmt update_bases time.
* ``track_bytes_written``: bytes one update_bases writes (manifest + transaction file); that
  no data file is touched is asserted in tests/dataset/test_bases.py.
"""
import os
import shutil
import uuid

import pyarrow as pa

from .common import scratch_dir, speedup

N_FRAGMENTS = 100_000


def build_dataset(root, n_fragments=N_FRAGMENTS):
    import lancefmt
    from lancefmt import BasePath, FragmentMetadata, Operation

    parent = os.path.dirname(root)
    for d in ("ds", "b1", "b1-copy"):
        shutil.rmtree(os.path.join(parent, d), ignore_errors=True)
    b1 = os.path.join(parent, "b1")
    t = pa.table({"id": pa.array(range(40), pa.int64())})
    seed = lancefmt.write_dataset(t, root, max_rows_per_file=10,
                                  initial_bases=[BasePath(b1, name="b1")], target_bases=["b1"])
    files = [f.files[0] for f in seed.manifest.fragments]
    frags = []
    for i in range(n_fragments):
        meta = FragmentMetadata.new([files[i % len(files)]], 10)
        frags.append(meta)
    shutil.rmtree(os.path.join(root, "_versions"))
    shutil.rmtree(os.path.join(root, "_transactions"))
    op = Operation.Overwrite(list(seed.manifest.fields), frags,
                             [BasePath(b1, name="b1", id=1)])
    lancefmt.commit(root, op, 0)
    shutil.copytree(b1, os.path.join(parent, "b1-copy"))


def _bytes_of_latest_commit(root):
    from lancefmt.table.versions import latest_manifest, load_manifest

    loc = latest_manifest(root)
    mf = load_manifest(root, loc.version)
    txn = os.path.join(root, "_transactions", mf.header.transaction_file)
    return loc.size + os.path.getsize(txn)


class UpdateBases:
    timeout = 900
    number = 1
    repeat = 3

    def setup_cache(self):
        root = os.path.join(scratch_dir("update_bases"), "ds")
        build_dataset(root)
        return root

    def setup(self, root):
        import lancefmt

        self.root = root
        parent = os.path.dirname(root)
        self.paths = [os.path.join(parent, "b1"), os.path.join(parent, "b1-copy")]
        self.flip = 0
        ds = lancefmt.dataset(root)
        assert len(ds.manifest.fragments) == N_FRAGMENTS

    def _relocate(self):
        import lancefmt

        self.flip ^= 1
        lancefmt.dataset(self.root).update_bases({"b1": self.paths[self.flip]})

    def _pylance_add(self):
        import lance
        from lance import DatasetBasePath

        name = uuid.uuid4().hex[:12]
        lance.dataset(self.root).add_bases(
            [DatasetBasePath(os.path.join(os.path.dirname(self.root), "extra", name), name=name)])

    def time_update_bases(self, root):
        self._relocate()

    def time_pylance_add_bases(self, root):
        self._pylance_add()

    def track_speedup_update_bases(self, root):
        return speedup(self._relocate, self._pylance_add, repeat=3, warmup=1)

    def track_bytes_written(self, root):
        self._relocate()
        return _bytes_of_latest_commit(self.root)

    track_bytes_written.unit = "bytes"
