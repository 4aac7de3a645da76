"""What every dataset operation shares: one version of a dataset as a :class:`~.snapshot.Snapshot`
(manifest, store, base-path resolution, per-version caches), how it commits, the scan
context a Spark executor receives, and the bookkeeping of files an operation wrote.

Nothing here imports another part of ``lancefmt.dataset``.
"""
