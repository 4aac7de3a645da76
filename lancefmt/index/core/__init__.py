"""The index framework: metadata, storage, registry, row sets, planning (see :mod:`lancefmt.index`)."""
