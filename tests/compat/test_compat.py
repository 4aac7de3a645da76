"""Datasets written by old pylance releases (tests/compat/fixtures/<release>, made by
generate.py in a venv of each release: ``make compat``), read by lancefmt exactly as that
release read them at every version; then changed by lancefmt (delete, append, compact) and
read by pylance 14 exactly as lancefmt reads them. No old release is needed here."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance
import lancefmt

from mutations import append, values

FIXTURES = Path(__file__).parent / "fixtures"
RELEASES = sorted((p.name for p in FIXTURES.iterdir() if (p / "info.json").exists()),
                  key=lambda r: tuple(int(x) for x in r.split("-")[0].split(".")))
LEGACY = ("0.10", "0.16")  # their default data files are the legacy format (0.1)
# pylance 0.13 asked for its early 2.0 files (strings as list<u8> in two columns); it writes no
# dictionaries, large lists or nulls in them, and its compaction wrote legacy files again
EARLY_V2 = {"0.13-v2": {"dict", "large_list_str", "null"}}


def info(release: str) -> dict:
    return json.loads((FIXTURES / release / "info.json").read_text())


def expected(release: str, version: int) -> pa.Table:
    with pa.ipc.open_file(FIXTURES / release / "expected" / f"v{version}.arrow") as f:
        return f.read_all()


def assert_same(want: pa.Table, got: pa.Table):
    assert got.column_names == want.column_names
    for f, g in zip(want.schema, got.schema):
        assert f.type.equals(g.type), (f, g)
        assert f.nullable == g.nullable, (f, g)
    a, b = values(want), values(got)
    assert a.num_rows == b.num_rows
    bad = [n for n in a.column_names if not a[n].equals(b[n])]
    assert not bad, bad


CASES = [(r, v) for r in RELEASES for v in info(r)["versions"]]


def test_every_release_is_here():
    assert RELEASES == ["0.10", "0.13-v2", "0.16", "0.20", "0.25", "0.33", "0.39", "2.0", "9.0"]
    for r in RELEASES:
        meta = info(r)
        assert meta["pylance"].startswith(r.split("-")[0] + ".")
        assert set(meta["dropped_columns"]) == EARLY_V2.get(r, set())
        assert len(meta["versions"]) == 9 and all("not available" not in s for s in meta["steps"])
    assert {info(r)["data_storage_version"] for r in LEGACY} <= {None, "0.1"}


@pytest.mark.parametrize("release,version", CASES)
def test_reads_what_the_release_read(release, version):
    want = expected(release, version)
    ds = lancefmt.dataset(str(FIXTURES / release / "dataset"), version=version)
    assert_same(want, ds.to_table())
    # a projection with a filter, and a take in any order, against the same read
    cols = ["id", "string", "list_i32", "struct"]
    mask = pc.equal(pc.bit_wise_and(want["id"], 1), 1)
    assert_same(want.select(cols).filter(mask), ds.to_table(columns=cols, filter="id % 2 = 1"))
    idx = np.random.default_rng(version).integers(0, want.num_rows, 17)
    assert_same(want.take(idx), ds.take(idx))


def _copy(release: str, tmp_path) -> str:
    uri = str(tmp_path / release)
    shutil.copytree(FIXTURES / release / "dataset", uri)
    return uri


def _same_in_pylance(uri: str):
    ours = lancefmt.dataset(uri)
    theirs = lance.dataset(uri)
    assert ours.version == theirs.version
    assert_same(theirs.to_table(), ours.to_table())
    return ours


@pytest.mark.parametrize("release", RELEASES)
def test_lancefmt_changes_read_identically_in_pylance(release, tmp_path):
    uri = _copy(release, tmp_path)
    before = lancefmt.dataset(uri)
    storage = before.data_storage_version
    assert (storage == "0.1") == (release in LEGACY)
    n = before.count_rows()

    before.delete("id % 5 = 0")
    ds = _same_in_pylance(uri)
    kept = ds.count_rows()
    assert kept < n and ds.data_storage_version == storage

    extra = lance.dataset(uri).to_table().slice(0, 9)
    append(uri, extra)
    ds = _same_in_pylance(uri)
    assert ds.count_rows() == kept + 9
    assert values(ds.to_table()).slice(ds.count_rows() - 9).equals(values(extra))

    metrics = lancefmt.dataset(uri).optimize.compact_files()
    assert metrics.fragments_added >= 1
    ds = _same_in_pylance(uri)
    assert ds.data_storage_version == storage  # a legacy dataset compacts into legacy files
    lancefmt.dataset(uri).delete("id < 1010")
    _same_in_pylance(uri)


@pytest.mark.parametrize("release", LEGACY)
def test_dataset_writes_on_legacy_datasets(release, tmp_path):
    uri = _copy(release, tmp_path)
    lancefmt.write_dataset(lance.dataset(uri).to_table().slice(0, 3), uri, mode="append")
    lancefmt.dataset(uri).optimize.compact_files()
    _same_in_pylance(uri)


@pytest.mark.parametrize("release", ["0.10", "0.13-v2"])
def test_data_files_read_on_their_own(release):
    """The data files alone (their own schema and column assignment, no manifest): legacy
    files and 0.13's list-encoded strings."""
    from lancefmt.file.reader import LanceFileReader

    uri = FIXTURES / release / "dataset"
    frags = lance.dataset(str(uri), version=1).get_fragments()
    parts = [LanceFileReader(str(uri / "data" / f.metadata.files[0].path)).read_all()
             for f in frags]
    got = pa.concat_tables(parts)
    assert_same(expected(release, 1), got)
