"""Seeds of the targets that bring their own (``Target.seed`` in :mod:`fuzz.targets`): legacy
v0.1 files, manifests of old releases, an old dataset, namespace ``__manifest`` rows.

Each function is ``seed(seeds_dir, put, scratch)``: ``put(name, data)`` writes one seed of its
target, ``scratch`` is a temp dir. Old releases' files come from the compat fixtures
(``tests/compat/fixtures``, written by pylance 0.10 .. 9.0); new ones from pylance 14 and
lancefmt. Names start with who wrote them (``pylance``/``lancefmt``).
"""
from __future__ import annotations

import glob
import os
import shutil

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "compat", "fixtures")
LEGACY_FIXTURE = os.path.join(FIXTURES, "0.10", "dataset")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _small_table(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "s": pa.array([None if i % 5 == 0 else f"v{i}" for i in range(n)]),
        "l": pa.array([[i, i] if i % 3 else [] for i in range(n)], pa.list_(pa.int32())),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 2).astype(np.float32)), 2),
        "d": pa.array(["a", "b", None][i % 3] for i in range(n)).dictionary_encode(),
    })


def legacy_files(seeds_dir: str, put, scratch: str) -> None:
    """v0.1 data files: pylance 14's legacy writer, lancefmt's, and pylance 0.10's."""
    import lance

    from lancefmt.file.writer import LanceFileWriter

    t = _small_table(40)
    uri = os.path.join(scratch, "legacy-pylance")
    lance.write_dataset(t, uri, data_storage_version="legacy", max_rows_per_group=16)
    for i, f in enumerate(sorted(glob.glob(os.path.join(uri, "data", "*.lance")))):
        put(f"pylance-14-{i}", _read(f))
    p = os.path.join(scratch, "legacy-lancefmt.lance")
    with LanceFileWriter(p, t.schema, "legacy", max_rows_per_group=15) as w:
        w.write_batch(t)
    put("lancefmt-0", _read(p))
    old = sorted(glob.glob(os.path.join(LEGACY_FIXTURE, "data", "*.lance")), key=os.path.getsize)
    for i, f in enumerate(old[:2]):
        put(f"pylance-0.10-{i}", _read(f))


def old_manifests(seeds_dir: str, put, scratch: str) -> None:
    """Every manifest of the compat fixtures (pylance 0.10 .. 9.0), and lancefmt's commit on
    top of the oldest (a new manifest carrying an old table's fields)."""
    import lancefmt

    for release in sorted(os.listdir(FIXTURES)):
        versions = os.path.join(FIXTURES, release, "dataset", "_versions")
        for i, m in enumerate(sorted(glob.glob(os.path.join(versions, "*.manifest")))):
            put(f"pylance-{release}-{i}", _read(m))
    uri = os.path.join(scratch, "old-then-lancefmt")
    shutil.copytree(LEGACY_FIXTURE, uri)
    ds = lancefmt.dataset(uri)
    ds.delete(f"id = {ds.take([0]).column('id')[0].as_py()}")
    newest = max(glob.glob(os.path.join(uri, "_versions", "*.manifest")), key=os.path.getmtime)
    put("lancefmt-on-0.10", _read(newest))


def legacy_dataset(seeds_dir: str, put, scratch: str) -> None:
    """pylance 0.10's dataset (legacy files, old manifests, ``_latest.manifest``) as the
    ``dataset_legacy`` target's source; each of its files is a seed (first byte: which)."""
    src = os.path.join(seeds_dir, "dataset_legacy_source")
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(LEGACY_FIXTURE, src)
    files = sorted(os.path.relpath(os.path.join(d, n), src)
                   for d, _, names in os.walk(src) for n in names)
    for i, f in enumerate(files):
        put(f"pylance-0.10-file-{i}", bytes([i]) + _read(os.path.join(src, f)))


def namespace_rows(seeds_dir: str, put, scratch: str) -> None:
    """The ``__manifest`` rows of namespace roots pylance and lancefmt built (nested
    namespaces, tables, declared tables, properties), encoded for the target."""
    import lance
    import lance.namespace as pyns
    import lance_namespace as ln

    from fuzz.targets import encode_namespace_rows
    from lancefmt.namespace import DirectoryNamespace

    t = pa.table({"id": [1, 2]})
    for who in ("lancefmt", "pylance"):
        root = os.path.join(scratch, f"ns-{who}")
        if who == "lancefmt":
            ns = DirectoryNamespace(root=root)
            ns.create_namespace(["a"], properties={"owner": "x", "n": "1"})
            ns.create_namespace(["a", "b"])
            ns.create_table(["a", "b", "t"], t)
            ns.create_table(["root_t"], t)
            ns.declare_table(["a", "declared"])
        else:
            ns = pyns.DirectoryNamespace(root=root)
            ns.create_namespace(ln.CreateNamespaceRequest(id=["a"], properties={"owner": "y"}))
            ns.create_namespace(ln.CreateNamespaceRequest(id=["a", "c"]))
            ns.declare_table(ln.DeclareTableRequest(id=["a", "c", "t"]))
        rows = lance.dataset(os.path.join(root, "__manifest")).to_table().to_pylist()
        rows = [(r["object_id"], r["object_type"], r["location"], r["metadata"]) for r in rows]
        put(f"{who}-all", encode_namespace_rows(rows))
        for i, r in enumerate(rows):
            put(f"{who}-row-{i}", encode_namespace_rows([r]))


# The index targets: per type, the columns it indexes and the filters that make a read use it.
INDEX_KINDS = {
    "btree": ("int", ["{c} = 7", "{c} BETWEEN 3 AND 30", "{c} IN (1, 50)", "{c} IS NULL",
                      "NOT {c} = 2"]),
    "bitmap": ("str", ["{c} = 'v3'", "{c} IS NULL", "{c} IN ('v1', 'v2')", "{c} > 'v5'"]),
    "label_list": ("list", ["array_has_any({c}, ['a'])", "array_has_all({c}, ['a', 'b'])"]),
    "zonemap": ("int", ["{c} > 10", "{c} = 5", "{c} IS NULL"]),
    "bloomfilter": ("int", ["{c} = 5", "{c} IN (3, 9)", "{c} IS NULL"]),
    "ngram": ("str", ["contains({c}, 'v12')", "{c} LIKE '%v1%'"]),
}


def _index_columns(kind: str, n: int) -> pa.Array:
    shape = INDEX_KINDS[kind][0]
    if shape == "int":
        return pa.array([None if i % 7 == 0 else i % 40 for i in range(n)], pa.int64())
    if shape == "str":
        return pa.array([None if i % 7 == 0 else f"v{i % 23}" for i in range(n)])
    return pa.array([None if i % 7 == 0 else [["a", "b", "c"][i % 3], "b"][: 1 + i % 2]
                     for i in range(n)], pa.list_(pa.string()))


def index_dataset(kind: str):
    """The seeding function of target ``index_<kind>``: a dataset whose column ``a`` pylance
    indexed and whose column ``b`` (the same values) lancefmt indexed, copied to
    ``index_<kind>_source``; each index file is a seed (first byte: which)."""
    def seed(seeds_dir: str, put, scratch: str) -> None:
        import lance

        import lancefmt

        n = 3000
        col = _index_columns(kind, n)
        src = os.path.join(seeds_dir, f"index_{kind}_source")
        shutil.rmtree(src, ignore_errors=True)
        lance.write_dataset(pa.table({"id": np.arange(n), "a": col, "b": col}), src,
                            max_rows_per_file=1200)
        lance.dataset(src).create_scalar_index("a", kind.upper(), name="a_idx")
        lancefmt.dataset(src).create_scalar_index("b", kind.upper(), name="b_idx")
        who = {d.segments[0].uuid: ("pylance" if d.name == "a_idx" else "lancefmt")
               for d in lancefmt.dataset(src).describe_indices()}
        for i, f in enumerate(index_files(src)):
            put(f"{who[f.split('/')[1]]}-{i}", bytes([i]) + _read(os.path.join(src, f)))
    return seed


def index_files(root: str) -> list:
    """The index files of a dataset, relative to it, in a fixed order."""
    base = os.path.join(root, "_indices")
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, _, names in os.walk(base) for n in names)


# The vector index targets: per type, pylance's and lancefmt's build parameters (small: 300
# rows of 16 dims, 2 partitions), and whether pylance's legacy single-file layout is seeded too.
VECTOR_DIM = 16
VECTOR_KINDS = {
    "ivf_flat": ("IVF_FLAT", {}, False),
    "ivf_pq": ("IVF_PQ", {"num_sub_vectors": 4}, True),
    "ivf_sq": ("IVF_SQ", {}, False),
    "ivf_hnsw_sq": ("IVF_HNSW_SQ", {"m": 8, "ef_construction": 40}, False),
    "ivf_rq": ("IVF_RQ", {"num_bits": 1}, False),
}


def vector_columns(kind: str) -> list:
    """The indexed columns of target ``index_<kind>``'s dataset: ``a`` pylance's index, ``b``
    lancefmt's, and for IVF_PQ ``c``/``d`` the same in the legacy single-file layout."""
    return ["a", "b", "c", "d"] if VECTOR_KINDS[kind][2] else ["a", "b"]


def vector_query(n: int = VECTOR_DIM) -> np.ndarray:
    return np.linspace(-1.0, 1.0, n, dtype=np.float32)


def vector_dataset(kind: str):
    """The seeding function of target ``index_<kind>`` (a vector type): 300 rows whose vector
    columns hold the same values, each indexed by pylance or lancefmt (:func:`vector_columns`),
    copied to ``index_<kind>_source``; each index file is a seed (first byte: which)."""
    def seed(seeds_dir: str, put, scratch: str) -> None:
        import lance

        import lancefmt

        index_type, params, legacy = VECTOR_KINDS[kind]
        n, cols = 300, vector_columns(kind)
        rng = np.random.default_rng(38)
        vec = pa.FixedSizeListArray.from_arrays(
            pa.array(rng.standard_normal(n * VECTOR_DIM).astype(np.float32)), VECTOR_DIM)
        src = os.path.join(seeds_dir, f"index_{kind}_source")
        shutil.rmtree(src, ignore_errors=True)
        lance.write_dataset(pa.table({"id": np.arange(n), **{c: vec for c in cols}}), src,
                            max_rows_per_file=200)
        for c, lib, extra in (("a", lance, {}), ("b", lancefmt, {}),
                              ("c", lance, {"index_file_version": "Legacy"}),
                              ("d", lancefmt, {"index_file_version": "Legacy"}))[:len(cols)]:
            lib.dataset(src).create_index(c, index_type, name=f"{c}_idx", num_partitions=2,
                                          **params, **extra)
        _put_index_files(src, put, {"a_idx": "pylance", "b_idx": "lancefmt",
                                    "c_idx": "pylance-legacy", "d_idx": "lancefmt-legacy"})
    return seed


FTS_WORDS = ["lance", "format", "vector", "index", "query", "column", "fragment", "manifest",
             "arrow", "rust", "python", "spark", "search", "token", "phrase", "file"]


def inverted_dataset(seeds_dir: str, put, scratch: str) -> None:
    """The seeding function of target ``index_inverted``: 300 short texts (a few nulls), ``a``
    indexed by pylance and ``b`` by lancefmt, both with positions (phrase queries); ``c`` by
    pylance and ``d`` by lancefmt without; copied to ``index_inverted_source``."""
    import lance

    import lancefmt

    n = 300
    rng = np.random.default_rng(38)
    text = pa.array([None if i % 29 == 0 else " ".join(rng.choice(FTS_WORDS, 3 + i % 5))
                     for i in range(n)])
    src = os.path.join(seeds_dir, "index_inverted_source")
    shutil.rmtree(src, ignore_errors=True)
    lance.write_dataset(pa.table({"id": np.arange(n), **{c: text for c in "abcd"}}), src,
                        max_rows_per_file=200)
    for c, lib, pos in (("a", lance, True), ("b", lancefmt, True),
                        ("c", lance, False), ("d", lancefmt, False)):
        lib.dataset(src).create_scalar_index(c, "INVERTED", name=f"{c}_idx", with_position=pos)
    _put_index_files(src, put, {"a_idx": "pylance", "b_idx": "lancefmt",
                                "c_idx": "pylance-nopos", "d_idx": "lancefmt-nopos"})


def _put_index_files(src: str, put, who_by_name: dict) -> None:
    """Each index file of ``src`` as a seed (first byte: its place in :func:`index_files`),
    named after who wrote it."""
    import lancefmt

    who = {d.segments[0].uuid: who_by_name[d.name] for d in lancefmt.dataset(src).describe_indices()}
    for i, f in enumerate(index_files(src)):
        put(f"{who[f.split('/')[1]]}-{i}", bytes([i]) + _read(os.path.join(src, f)))
