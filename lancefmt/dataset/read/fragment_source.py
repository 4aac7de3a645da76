"""FragmentSource: one fragment as a scan source, so a fragment's scanner is a
:class:`~.scanner.LanceScanner` taking the same projections, SQL filters, limits and metadata
columns as a dataset's.
"""
from __future__ import annotations

from ...errors import InvalidArgumentError
from ..core.context import ScanContext


class FragmentSource:
    """What a LanceScanner needs of its source (a snapshot has the same members), for one
    fragment: ``ctx``, ``schema``, ``uri``, ``version``, ``fragment_pbs()``,
    ``select_fragments()``."""

    def __init__(self, ctx: ScanContext, pb, snapshot=None):
        self.ctx = ctx
        self._pb = pb
        self._snapshot = snapshot

    def index_snapshot(self):
        """The dataset version whose indices may answer this fragment's filters: the one the
        fragment was taken from (None for a fragment unpickled alone, e.g. on an executor)."""
        return self._snapshot

    @property
    def schema(self):
        return self.ctx.schema

    @property
    def uri(self):
        return self.ctx.uri

    @property
    def version(self):
        return self.ctx.version

    def fragment_pbs(self):
        return [self._pb]

    def select_fragments(self, fragments):
        if fragments is not None:
            raise InvalidArgumentError("a fragment scanner scans its own fragment")
        return [self._pb]

    def __repr__(self):
        return f"Fragment({self._pb.id} of {self.uri!r} v{self.version})"
