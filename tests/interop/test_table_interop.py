"""lancefmt's table metadata layer against pylance 14.0.2 (the oracle): every version of every
dataset in table_datasets, read by both, compared whole."""
import os
import random
import re

import lance
import numpy as np
import pytest

from lancefmt import LanceError
from lancefmt.table import feature_flags as ff
from lancefmt.table import naming
from lancefmt.table.base_paths import BasePathResolver
from lancefmt.table.manifest import encode_manifest_file, parse_manifest_file, read_manifest
from lancefmt.table.refs import encode_tag, list_branches, list_tags
from lancefmt.table.version_hint import encode_version_hint, read_version_hint, version_hint_uri
from lancefmt.table.versions import (latest_manifest, list_manifests, list_versions,
                                     load_manifest, locate_manifest)

from table_datasets import build_datasets

LANCE_DATA_NAME = re.compile(r"^[01]{24}[0-9a-f]{6}4[0-9a-f]{3}[89ab][0-9a-f]{15}\.lance$")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return build_datasets(tmp_path_factory.mktemp("table_interop"))


def all_versions(datasets):
    for name, uri in datasets.items():
        for v in lance.dataset(uri).versions():
            yield name, uri, v["version"]


def compare_version(uri, version):
    ds = lance.dataset(uri, version=version)
    m = load_manifest(uri, version)
    assert m.version == ds.version == version
    frags = ds.get_fragments()
    view = m.fragments
    assert len(view) == len(frags)
    assert view.ids.tolist() == [f.fragment_id for f in frags]
    assert view.physical_rows.tolist() == [f.physical_rows for f in frags]
    assert view.num_deleted_rows.tolist() == [f.num_deletions for f in frags]
    assert view.num_rows.tolist() == [f.count_rows() for f in frags]
    assert view.total_live_rows == ds.count_rows()
    assert view.total_physical_rows == sum(f.physical_rows for f in frags)

    # base paths as pylance reports them
    theirs = {b.id: (b.name, b.path, b.is_dataset_root) for b in ds.base_paths().values()}
    ours = {b.id: (b.name if b.HasField("name") else None, b.path, b.is_dataset_root)
            for b in m.header.base_paths}
    assert ours == theirs

    # data files: names, base ids, and the resolved file exists
    resolver = BasePathResolver(uri, m.header.base_paths, m.uri)
    their_files = [d for f in frags for d in f.data_files()]
    paths = view.data_file_paths().to_pylist()
    assert paths == [d.path for d in their_files]
    assert view.file_base_id.tolist() == [-1 if d.base_id is None else d.base_id for d in their_files]
    assert view.file_size_bytes.tolist() == [d.file_size_bytes for d in their_files]
    assert view.num_data_files.tolist() == [len(f.data_files()) for f in frags]
    for u in resolver.data_file_uris(paths, view.file_base_id):
        assert os.path.isfile(u), u

    # deletion files: same name as pylance's, and the file is where we resolve it
    names = view.deletion_file_names()
    for i, f in enumerate(frags):
        rel = f.deletion_file()
        if rel is None:
            assert names[i] is None and not view.has_deletion_file[i]
            continue
        assert names[i] == os.path.basename(rel)
        base = int(view.deletion_base_id[i])
        path = resolver.deletion_file_uri(names[i], None if base < 0 else base)
        assert os.path.isfile(path), path

    # flags, storage version, and Lance's own recomputation of the flags
    assert m.data_storage_version == ds.data_storage_version
    assert ff.compute_feature_flags(m.manifest) == (m.reader_feature_flags, m.writer_feature_flags)
    assert ff.compute_feature_flags(m.manifest, fragments=view) == (m.reader_feature_flags,
                                                                    m.writer_feature_flags)
    m.check_readable()
    m.check_writable()
    return m


def test_every_version_matches_pylance(datasets):
    n = 0
    for name, uri, version in all_versions(datasets):
        compare_version(uri, version)
        n += 1
    assert n >= 20


def test_versions_and_latest(datasets):
    for name, uri in datasets.items():
        ds = lance.dataset(uri)
        assert list_versions(uri) == ds.versions(), name
        assert latest_manifest(uri).version == ds.version
        assert load_manifest(uri).version == ds.version


def test_naming_schemes(datasets):
    assert latest_manifest(datasets["v1_naming"]).scheme == "v1"
    assert latest_manifest(datasets["v20"]).scheme == "v2"
    loc = locate_manifest(datasets["v1_naming"], 2)
    assert loc.uri.endswith("/_versions/2.manifest")
    for name, uri in datasets.items():
        listed = os.listdir(os.path.join(uri, "_versions"))
        scheme = naming.listing_scheme(listed)
        assert scheme == ("v1" if name == "v1_naming" else "v2")
        for loc in list_manifests(uri):
            assert naming.manifest_file_name(loc.version, scheme) == os.path.basename(loc.uri)


def test_manifest_layout_is_reproduced_byte_for_byte(datasets):
    checked = 0
    for name, uri in datasets.items():
        for loc in list_manifests(uri):
            raw = open(loc.uri, "rb").read()
            m = read_manifest(loc.uri)
            again = encode_manifest_file(m.manifest, m.transaction(), m.index_section())
            if len(m.manifest.config) > 1 or len(m.manifest.table_metadata) > 1:
                # map entries come in hash order from Rust: compare decoded instead
                assert parse_manifest_file(again).manifest == m.manifest
            else:
                assert again == raw, loc.uri
                checked += 1
            t = m.transaction()
            assert t is not None
            if name not in ("clone", "branch"):
                assert t.read_version == m.version - 1
    assert checked >= 15


def test_inline_transaction_matches_pylance(datasets):
    uri = datasets["v20"]
    ds = lance.dataset(uri)
    for v in ds.versions():
        t = load_manifest(uri, v["version"]).transaction()
        theirs = ds.read_transaction(v["version"])
        assert t.uuid == theirs.uuid
        assert t.read_version == theirs.read_version
    ops = [load_manifest(uri, v["version"]).transaction().WhichOneof("operation")
           for v in ds.versions()]
    assert ops == ["overwrite", "delete", "append", "delete", "delete"]


def test_index_section(datasets):
    uri = datasets["indexed"]
    m = load_manifest(uri)
    (idx,) = m.indices
    (theirs,) = lance.dataset(uri).describe_indices()
    assert idx.name == theirs.name == "x_idx"
    assert list(idx.fields) == list(theirs.fields) == [0]
    assert dict(m.header.config) == lance.dataset(uri).config()
    assert m.writer_feature_flags == ff.FLAG_TABLE_CONFIG and m.reader_feature_flags == 0


def test_data_file_names_look_like_pylance_names(datasets):
    seen = 0
    for name, uri in datasets.items():
        for root, _, files in os.walk(os.path.dirname(uri)):
            if "_indices" in root:
                continue  # index files have their own names
            for f in files:
                if f.endswith(".lance"):
                    assert LANCE_DATA_NAME.match(f), f
                    assert naming.is_data_file_name(f)
                    raw = int(f[:24], 2).to_bytes(3, "big") + bytes.fromhex(f[24:50])
                    assert naming.data_file_name(raw) == f
                    seen += 1
    assert seen > 20
    for f in naming.data_file_names(1000):
        assert LANCE_DATA_NAME.match(f)


def test_deletion_and_transaction_names(datasets):
    for name, uri in datasets.items():
        for f in os.listdir(os.path.join(uri, "_transactions")):
            assert naming.parse_transaction_file_name(f) is not None, f
        ddir = os.path.join(uri, "_deletions")
        for f in os.listdir(ddir) if os.path.isdir(ddir) else ():
            frag, rv, i, kind = naming.parse_deletion_file_name(f)
            assert naming.deletion_file_name(frag, rv, i, kind) == f
    kinds = {f.rsplit(".", 1)[1] for f in os.listdir(os.path.join(datasets["bitmap_deletions"], "_deletions"))}
    assert kinds == {"bin"}


def test_multibase_resolution(datasets):
    uri = datasets["v22_multibase"]
    m = load_manifest(uri)
    view = m.fragments
    root = os.path.dirname(uri)
    resolver = BasePathResolver(uri, m.header.base_paths, m.uri)
    dirs = {os.path.dirname(u) for u in resolver.data_file_uris(view.data_file_paths().to_pylist(),
                                                                  view.file_base_id)}
    assert dirs == {os.path.join(root, "bucket1"), os.path.join(root, "bucket2", "data"),
                    os.path.join(uri, "data")}
    assert m.reader_feature_flags & ff.FLAG_BASE_PATHS


def test_shallow_clone(datasets):
    uri = datasets["clone"]
    m = load_manifest(uri)
    (base,) = m.header.base_paths
    assert base.id == 0 and base.is_dataset_root and base.path == datasets["v20"]
    view = m.fragments
    # inherited fragments point at the source through base 0, new ones live in the clone
    assert set(view.base_id.tolist()) == {0, -1}
    resolver = BasePathResolver(uri, m.header.base_paths, m.uri)
    for u, b in zip(resolver.data_file_uris(view.data_file_paths().to_pylist(), view.file_base_id),
                    view.file_base_id):
        assert u.startswith(datasets["v20"] if b == 0 else uri)
    first = list_manifests(uri)[0]
    assert first.version == 2  # a clone keeps the source version number
    assert read_manifest(first.uri).transaction().WhichOneof("operation") == "clone"


def test_relative_base_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = str(tmp_path / "ds")
    os.makedirs(tmp_path / "relb")
    lance.write_dataset(pa_table(10), uri, initial_bases=[lance.DatasetBasePath("relb", name="r")],
                        target_bases=["r"])
    m = load_manifest(uri)
    assert m.header.base_paths[0].path == "relb"  # stored exactly as given
    resolver = BasePathResolver(uri, m.header.base_paths, m.uri)
    (u,) = resolver.data_file_uris(m.fragments.data_file_paths().to_pylist(), m.fragments.file_base_id)
    assert u.startswith(str(tmp_path / "relb") + "/") and os.path.isfile(u)


def pa_table(n):
    from table_datasets import table

    return table(n)


def test_tags_and_branches(datasets):
    uri = datasets["v20"]
    ours = list_tags(uri)
    theirs = lance.dataset(uri).tags.list()
    assert set(ours) == set(theirs)
    for name, t in ours.items():
        assert t.version == theirs[name]["version"]
        assert t.manifest_size == theirs[name]["manifest_size"]
        assert load_manifest(uri, name).version == t.version
        raw = open(os.path.join(uri, "_refs", "tags", name + ".json"), "rb").read()
        assert encode_tag(t) == raw
    branches = list_branches(uri)
    assert list(branches) == ["feat/x"]
    assert branches["feat/x"].parent_version == 2
    b = load_manifest(datasets["branch"])
    assert b.version == 2 and b.header.branch == "feat/x"
    assert b.fragments.total_live_rows == lance.dataset(datasets["branch"]).count_rows()


def test_version_hint_bytes_and_staleness(datasets, tmp_path):
    for name, uri in datasets.items():
        if name == "branch":
            continue
        ds = lance.dataset(uri)
        assert open(version_hint_uri(uri), "rb").read() == encode_version_hint(ds.version)
        assert read_version_hint(uri) == ds.version
    import shutil

    uri = str(tmp_path / "hinted")
    shutil.copytree(datasets["v20"], uri)
    truth = lance.dataset(uri).version
    for hint in (b'{"version":1}', b'{"version":999}', b"garbage", None):
        if hint is None:
            os.remove(version_hint_uri(uri))
        else:
            with open(version_hint_uri(uri), "wb") as f:
                f.write(hint)
        assert lance.dataset(uri).version == truth
        assert latest_manifest(uri).version == truth


def test_real_manifests_fuzzed(datasets):
    rng = random.Random(99)
    corpus = [open(loc.uri, "rb").read() for name in ("v21_rowids", "v22_multibase", "indexed", "clone")
              for loc in list_manifests(datasets[name])[-1:]]
    for base in corpus:
        for _ in range(800):
            data = bytearray(base)
            r = rng.random()
            if r < 0.35:
                data = data[:rng.randrange(len(data))]
            else:
                for _ in range(rng.randint(1, 3)):
                    i = rng.randrange(len(data))
                    data[i] ^= 1 << rng.randrange(8)
            try:
                f = parse_manifest_file(bytes(data), "fuzz")
                f.manifest
                f.transaction()
                f.index_section()
                f.fragments.data_file_paths()
                f.fragments.deletion_file_names()
            except LanceError:
                pass


def test_fragment_columns_dtypes(datasets):
    view = load_manifest(datasets["v21_rowids"]).fragments
    assert view.ids.dtype == np.uint64 and view.num_deleted_rows.dtype == np.uint64
    assert view.has_row_ids.all()
