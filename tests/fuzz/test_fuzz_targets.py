"""The fuzz harness in the suite: every target fuzzed a few seconds with a fixed seed (a
finding fails the test), every kept finding replayed (``fuzz/regressions``), and the whole
corpus replayed under a 1 GiB address-space cap (an allocation the input cannot back fails)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from fuzz.targets import TARGETS, make_target  # noqa: E402

SECONDS = int(os.environ.get("LANCEFMT_FUZZ_SECONDS", "40"))  # all targets together
REGRESSIONS = os.path.join(ROOT, "fuzz", "regressions")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    from fuzz.seeds import make_seeds

    out = str(tmp_path_factory.mktemp("seeds"))
    make_seeds(out)
    return out


def test_every_target_has_pylance_and_lancefmt_seeds(seeds):
    for name in TARGETS:
        files = os.listdir(os.path.join(seeds, name))
        assert files, name
        if name not in ("file_v2_1", "dataset", "dataset_legacy"):  # pylance-only writers
            assert any(f.startswith("lancefmt") for f in files), name
        if name not in ("deletion_bin", "metadata"):  # metadata: edits of pylance's dataset
            assert any(f.startswith(("pylance", "file-")) for f in files), name


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seeds_run_clean(seeds, name):
    """Every unmodified seed goes through its target without a finding."""
    target = make_target(name, seeds)
    d = os.path.join(seeds, name)
    for f in sorted(os.listdir(d)):
        with open(os.path.join(d, f), "rb") as fh:
            target(fh.read())


def test_every_target_fuzzed_briefly(seeds, tmp_path):
    """One process (one instrumentation of lancefmt) fuzzes every target from a fixed seed:
    every seed through its target first, then mutations of them; a finding fails the test."""
    pytest.importorskip("atheris")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    marks = tmp_path / "marks"
    out = subprocess.run(
        [sys.executable, "-m", "fuzz.smoke", seeds, str(marks), f"-max_total_time={SECONDS}",
         "-seed=20261122", "-len_control=0", f"-artifact_prefix={tmp_path}/"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=SECONDS + 300)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    assert sorted(os.listdir(marks)) == sorted(TARGETS), log[-2000:]
    seeded = sum(len(os.listdir(os.path.join(seeds, n))) for n in TARGETS)
    runs = re.search(r"Done (\d+) runs", log)
    assert runs and int(runs.group(1)) > seeded, log[-2000:]  # mutations ran, not only the seeds


def _regressions():
    if not os.path.isdir(REGRESSIONS):
        return []
    return [(t, f) for t in sorted(os.listdir(REGRESSIONS))
            for f in sorted(os.listdir(os.path.join(REGRESSIONS, t)))]


@pytest.mark.parametrize("name,case", _regressions())
def test_kept_findings_stay_fixed(seeds, name, case):
    with open(os.path.join(REGRESSIONS, name, case), "rb") as fh:
        make_target(name, seeds)(fh.read())


def test_metadata_oracle_catches_a_changed_answer(seeds):
    """The metadata target's equality check is live: against a different expected table, the
    same metadata-only edit is a finding (an AssertionError, which the runner reports)."""
    target = make_target("metadata", seeds)
    from fuzz.targets import _MetadataEditor, edit_record

    editor = next(c.cell_contents for c in target.__closure__
                  if isinstance(c.cell_contents, _MetadataEditor))
    record = edit_record(0, b"owner", b"team-a")
    target(record)
    editor.expected = editor.expected.slice(1)
    with pytest.raises(AssertionError):
        target(record)


def test_whole_corpus_replays_under_a_1gib_address_space_cap(seeds):
    """Every seed of every target and every kept finding, in one child capped at 1 GiB of
    address space (pyarrow and lancefmt take ~0.6 of it to start): no input may hit the cap,
    whether a MemoryError escapes or hides under a LanceError, and the child must not die."""
    import json

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        "FUZZ_MEM_MB": "1024"}
    out = subprocess.run([sys.executable, "-m", "fuzz.replay", seeds], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-6000:]
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["findings"] == [] and summary["cap_mb"] == 1024
    assert set(summary["inputs"]) == set(TARGETS)
    expected = {name: len(os.listdir(os.path.join(seeds, name)))
                + len(os.listdir(os.path.join(REGRESSIONS, name)))
                if os.path.isdir(os.path.join(REGRESSIONS, name))
                else len(os.listdir(os.path.join(seeds, name))) for name in TARGETS}
    assert summary["inputs"] == expected
    assert summary["peak_vm_mb"] <= 1024


def test_a_cap_hit_under_a_lance_error_is_a_finding(monkeypatch):
    """A reader that converts a failed allocation into CorruptFileError still reports it."""
    from fuzz import targets
    from lancefmt.errors import CorruptFileError

    def converts(data):
        try:
            raise MemoryError("the cap")
        except MemoryError:
            raise CorruptFileError("undecodable", "f.lance") from None

    def plain(data):
        raise CorruptFileError("undecodable", "f.lance")

    monkeypatch.setitem(targets.TARGETS, "converts", targets.Target(lambda d: converts))
    monkeypatch.setitem(targets.TARGETS, "plain", targets.Target(lambda d: plain))
    with pytest.raises(targets.AllocationCapHit):
        make_target("converts")(b"x")
    make_target("plain")(b"x")  # an honest CorruptFileError is the expected answer


def test_makefile_fuzzes_every_target():
    out = subprocess.run([sys.executable, "-m", "fuzz.targets"], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.stdout.split() == list(TARGETS)
    with open(os.path.join(ROOT, "Makefile")) as f:
        assert "FUZZ_TARGETS ?= $(shell $(PY) -m fuzz.targets)" in f.read()


def test_declared_sizes_set_to_extremes_are_refused_under_the_cap(seeds):
    """fuzz.int_probe on one 2.1 file and the dataset's newest manifest: every integer of their
    metadata set to 2**31..2**64 in turn, read under the 1 GiB cap (``make fuzz`` probes every
    seed). It found a manifest's file_size_bytes of 2**64 - 1 escaping as an OverflowError."""
    import json

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        "FUZZ_PROBE_SEEDS": "1"}
    out = subprocess.run([sys.executable, "-m", "fuzz.int_probe", seeds, "file_v2_1", "dataset"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-6000:]
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["findings"] == [] and summary["runs"] > 500
