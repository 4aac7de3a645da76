"""Listing a V2 directory namespace of 10,000 tables: lancefmt's DirectoryNamespace vs pylance's.

Fixture (built once by ``setup_cache``): lancefmt writes a root whose ``__manifest`` holds the
namespace ``bench`` and 10,000 table rows (``<8 hex>_bench$tNNNNN`` locations) in one commit,
then pylance adds one table through its own DirectoryNamespace and lists the namespace, so both
sides read a manifest both accept. (Child namespaces are V2-only: listing reads only the
manifest, no table directory.)

Timed: ``list_tables(ListTablesRequest(id=["bench"]))``
* ``*_cold``: a new namespace object per call (nothing cached in either library);
* ``*_warm``: one namespace object reused (lancefmt re-reads only when the manifest version
  changed; pylance keeps its own state).
Target: ratio >= 1.0 (``track_ratio_list_*``; above 1 means lancefmt is faster).
"""
import os
import secrets
import shutil

from .common import scratch_dir, speedup

N_TABLES = 10_000


def build_root(root, n=N_TABLES):
    import lance.namespace as pyns
    import lance_namespace as ln
    import pyarrow as pa

    import lancefmt
    from lancefmt.namespace.manifest import NAMESPACE, TABLE, Row, rows_table

    if os.path.exists(root):
        shutil.rmtree(root)
    rows = [Row("bench", NAMESPACE, properties={"purpose": "benchmark"})]
    rows += [Row(f"bench$t{i:05d}", TABLE, f"{secrets.randbits(32):08x}_bench$t{i:05d}")
             for i in range(n)]
    lancefmt.write_dataset(rows_table(rows), os.path.join(root, "__manifest"))
    theirs = pyns.DirectoryNamespace(root=root)
    t = pa.table({"x": [1]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    theirs.create_table(ln.CreateTableRequest(id=["bench", "zz_pylance"]), sink.getvalue().to_pybytes())
    return root


def ours_cold(root):
    from lancefmt.namespace import DirectoryNamespace
    import lance_namespace as ln

    return DirectoryNamespace(root=root).list_tables(ln.ListTablesRequest(id=["bench"])).tables


def theirs_cold(root):
    import lance.namespace as pyns
    import lance_namespace as ln

    return pyns.DirectoryNamespace(root=root).list_tables(ln.ListTablesRequest(id=["bench"])).tables


class NamespaceList:
    timeout = 900

    def setup_cache(self):
        return build_root(os.path.join(scratch_dir("namespace_list"), "root"))

    def setup(self, root):
        import lance.namespace as pyns

        from lancefmt.namespace import DirectoryNamespace

        self.ours = DirectoryNamespace(root=root)
        self.theirs = pyns.DirectoryNamespace(root=root)
        a, b = ours_cold(root), theirs_cold(root)
        assert a == b and len(a) == N_TABLES + 1, (len(a), len(b))

    def _ours_warm(self):
        import lance_namespace as ln

        return self.ours.list_tables(ln.ListTablesRequest(id=["bench"]))

    def _theirs_warm(self):
        import lance_namespace as ln

        return self.theirs.list_tables(ln.ListTablesRequest(id=["bench"]))

    def time_list_cold_lancefmt(self, root):
        ours_cold(root)

    def time_list_cold_pylance(self, root):
        theirs_cold(root)

    def time_list_warm_lancefmt(self, root):
        self._ours_warm()

    def time_list_warm_pylance(self, root):
        self._theirs_warm()

    def track_ratio_list_cold(self, root):
        return speedup(lambda: ours_cold(root), lambda: theirs_cold(root), repeat=7)

    def track_ratio_list_warm(self, root):
        return speedup(self._ours_warm, self._theirs_warm, repeat=7)

    track_ratio_list_cold.unit = "x"
    track_ratio_list_warm.unit = "x"


if __name__ == "__main__":  # python -m benchmarks.namespace_list (from asv_bench/)
    import time

    bench = NamespaceList()
    t0 = time.perf_counter()
    root = bench.setup_cache()
    print(f"fixture: {time.perf_counter() - t0:.1f}s")
    bench.setup(root)
    print(f"cold ratio (pylance/lancefmt): {bench.track_ratio_list_cold(root):.2f}")
    print(f"warm ratio (pylance/lancefmt): {bench.track_ratio_list_warm(root):.2f}")
