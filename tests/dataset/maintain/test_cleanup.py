"""cleanup_old_versions: what goes, and above all what never goes."""
import os
import time
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lancefmt
from lancefmt import BasePath, InvalidArgumentError


def table(n, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


def files(*dirs):
    out = set()
    for d in dirs:
        for root, _, names in os.walk(d):
            out |= {os.path.join(root, n) for n in names}
    return out


def referenced(ds):
    """Every file a version needs: manifest, data, deletion files."""
    out = {ds.manifest_file.uri}
    for f in ds.get_fragments():
        out |= set(f.data_files())
        if f.deletion_file():
            out.add(f.deletion_file())
    return out


@pytest.fixture
def history(tmp_path):
    """main: v1 create, v2 append, v3 delete, v4 overwrite (to a data base), v5 append, v6 delete,
    v7 overwrite; tag on v2, a branch from v3 with its own append, a clone of v5 (and a clone of
    that clone), and a leftover data file from a failed write."""
    root = str(tmp_path / "ds")
    b1 = str(tmp_path / "b1")
    lancefmt.write_dataset(table(10), root, max_rows_per_file=5,
                           initial_bases=[BasePath(b1, name="b1")])
    ds = lancefmt.write_dataset(table(10, 10), root, mode="append")
    ds.tags.create("keep", 2)
    ds.delete("id = 1")
    br = ds.create_branch("br")
    lancefmt.write_dataset(table(3, 50), br, mode="append")
    ds = lancefmt.write_dataset(table(10, 100), root, mode="overwrite", target_bases=["b1"],
                                max_rows_per_file=4)
    ds = lancefmt.write_dataset(table(10, 200), root, mode="append")
    clone = ds.shallow_clone(str(tmp_path / "clone"))
    clone2 = lancefmt.write_dataset(table(2, 300), clone, mode="append").shallow_clone(
        str(tmp_path / "clone2"))
    ds.delete("id = 205")
    ds = lancefmt.write_dataset(table(4, 400), root, mode="overwrite")
    leftover = os.path.join(root, "data", "0" * 24 + "f" * 26 + ".lance")
    with open(leftover, "wb") as f:
        f.write(b"partial")
    time.sleep(0.05)
    return {"root": root, "b1": b1, "ds": lancefmt.dataset(root), "clone": clone.uri,
            "clone2": clone2.uri, "leftover": leftover, "tmp": str(tmp_path)}


def test_tagged_old_version_raises(history):
    with pytest.raises(InvalidArgumentError, match="keep"):
        history["ds"].cleanup_old_versions(older_than=timedelta(0))


def test_nothing_referenced_is_deleted(history):
    h = history
    ds = h["ds"]
    needed = set()
    for v in (2, 3, 7):
        needed |= referenced(ds.checkout_version(v))
    branch = ds.checkout_branch("br")
    for v in (3, 4):
        needed |= referenced(branch.checkout_version(v))
    for c in (h["clone"], h["clone2"]):
        for v in lancefmt.dataset(c).versions():
            needed |= referenced(lancefmt.dataset(c, v["version"]))
    before = files(h["tmp"])
    sizes = {f: os.path.getsize(f) for f in before}
    dry = ds.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False,
                                  clones=[h["clone"], h["clone2"]], dry_run=True)
    assert files(h["tmp"]) == before
    stats = ds.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False,
                                    clones=[h["clone"], h["clone2"]])
    assert stats.removed == dry.removed and not stats.dry_run
    gone = before - files(h["tmp"])
    assert gone == set(stats.removed)
    assert not gone & needed
    assert h["leftover"] not in gone                       # unverified and young: kept
    assert stats.old_versions == 4                         # v1, v4, v5, v6
    kept_versions = [v["version"] for v in ds.versions()]
    assert kept_versions == [2, 3, 7]                      # tagged, forked, latest
    # v6's deletion file went; v4/v5's data (in base b1) stays: the clones reference it
    assert stats.deletion_files_removed == 1 and stats.data_files_removed == 0
    assert stats.transaction_files_removed == 4
    assert stats.bytes_removed == sum(sizes[f] for f in gone)
    # nothing outside the dataset's own root was touched: not the clones, not the branch
    assert all(f.startswith(h["root"] + os.sep) for f in gone)
    assert not any("/tree/" in f for f in gone)
    # pylance reads every retained version, the tag, the branch and the clones
    for v in kept_versions:
        assert lance.dataset(h["root"], version=v).to_table() == ds.checkout_version(v).to_table()
    assert lance.dataset(h["root"], version="keep").count_rows() == 20
    assert lance.dataset(h["root"]).checkout_version(("br", None)).count_rows() == 22
    assert lance.dataset(h["clone"]).to_table() == lancefmt.dataset(h["clone"]).to_table()
    assert lance.dataset(h["clone2"]).count_rows() == 22
    lancefmt.dataset(h["clone2"]).validate()


def test_clone_files_are_at_risk_without_naming_the_clone(history):
    """The dataset cannot know its clones (neither can Lance): unnamed, their files would go."""
    h = history
    dry = h["ds"].cleanup_old_versions(older_than=timedelta(0),
                                       error_if_tagged_old_versions=False, dry_run=True)
    clone_needs = referenced(lancefmt.dataset(h["clone"]))
    assert set(dry.removed) & clone_needs


def test_retain_versions_and_unverified(history):
    h = history
    ds = h["ds"]
    stats = ds.cleanup_old_versions(retain_versions=2, error_if_tagged_old_versions=False,
                                    clones=[h["clone"], h["clone2"]])
    assert [v["version"] for v in ds.versions()] == [2, 3, 6, 7]
    assert stats.old_versions == 3
    # a week later the failed write's leftover is old enough to go; delete_unverified does it now
    os.utime(h["leftover"], (time.time() - 8 * 86400,) * 2)
    stats = ds.cleanup_old_versions(retain_versions=10, clones=[h["clone"], h["clone2"]])
    assert h["leftover"] in stats.removed and stats.old_versions == 0


def test_clone_cleanup_never_touches_its_source(history):
    h = history
    src_before = files(h["root"], h["b1"])
    c = lancefmt.dataset(h["clone"])
    c = lancefmt.write_dataset(table(3), c, mode="overwrite")
    time.sleep(0.05)
    stats = c.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert stats.old_versions == 2
    assert files(h["root"], h["b1"]) == src_before
    assert all(u.startswith(h["clone"]) for u in stats.removed)
    assert lance.dataset(h["clone"]).count_rows() == 3


def test_other_bases_are_untouched_unless_owned(tmp_path):
    """A data base may be a shared bucket: by default cleanup leaves it alone (pylance 14 too);
    named in owned_bases, it loses the files removed versions referenced - never strangers,
    even with delete_unverified - and dry_run reports exactly that."""
    root, shared = str(tmp_path / "ds"), str(tmp_path / "shared")
    ds = lancefmt.write_dataset(table(4), root, initial_bases=[BasePath(shared, name="s")],
                                target_bases=["s"])
    stranger = os.path.join(shared, "1" * 24 + "a" * 26 + ".lance")
    open(stranger, "wb").write(b"someone else's")
    os.utime(stranger, (time.time() - 30 * 86400,) * 2)
    old_file = next(iter(files(shared) - {stranger}))
    ds = lancefmt.write_dataset(table(4, 10), root, mode="overwrite", target_bases=["s"])
    time.sleep(0.05)
    before = files(shared)
    stats = ds.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert stats.old_versions == 1 and files(shared) == before
    assert all(u.startswith(root + "/") for u in stats.removed)
    with pytest.raises(InvalidArgumentError):
        ds.cleanup_old_versions(older_than=timedelta(0), owned_bases=["nope"])
    lancefmt.write_dataset(table(4, 20), root, mode="overwrite", target_bases=["s"])
    ds = lancefmt.write_dataset(table(4, 30), root, mode="overwrite", target_bases=["s"])
    time.sleep(0.05)
    # v2 and v3's files go; old_file's last referencing version was removed unowned: it stays
    live = set(ds.get_fragments()[0].data_files())
    gone = files(shared) - {stranger, old_file} - live
    assert len(gone) == 2
    before = files(shared)
    plan = ds.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True,
                                   owned_bases=["s"], dry_run=True)
    assert {u for u in plan.removed if u.startswith(shared)} == gone and files(shared) == before
    stats = ds.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True,
                                    owned_bases=["s"])
    assert stats.removed == plan.removed
    assert files(shared) == {stranger, old_file} | live
    assert lance.dataset(root).to_table() == table(4, 30)


def _shared_root_pair(tmp_path):
    """Datasets A and B whose data both go to one dataset-root base (a common prefix); B's
    data file is a month old."""
    shared = str(tmp_path / "bucket")
    out = {}
    for name in ("a", "b"):
        uri = str(tmp_path / name)
        lancefmt.write_dataset(table(3), uri, target_bases=["s"], initial_bases=[
            BasePath(shared, name="s", is_dataset_root=True)])
        out[name] = uri
    b_files = set(lancefmt.dataset(out["b"]).get_fragments()[0].data_files())
    for f in b_files:
        os.utime(f, (time.time() - 30 * 86400,) * 2)
    lancefmt.write_dataset(table(3, 10), out["a"], mode="overwrite", target_bases=["s"])
    return out, b_files


@pytest.mark.parametrize("cleaner", ["lancefmt", "pylance"])
def test_shared_base_of_two_datasets_survives_default_cleanup(tmp_path, cleaner):
    (out, b_files) = _shared_root_pair(tmp_path)
    opener = lancefmt.dataset if cleaner == "lancefmt" else lance.dataset
    opener(out["a"]).cleanup_old_versions()
    opener(out["a"]).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert all(os.path.exists(f) for f in b_files)
    assert lance.dataset(out["b"]).to_table() == table(3)
    assert lancefmt.dataset(out["a"]).to_table() == table(3, 10)


def test_owned_base_that_is_another_dataset_is_refused(history):
    """A clone's source (and every base it inherited) is never the clone's to clean."""
    c = lancefmt.dataset(history["clone"])
    with pytest.raises(InvalidArgumentError):
        c.cleanup_old_versions(older_than=timedelta(0), owned_bases=["b1"])


def test_branch_cleanup_keeps_child_branch_files_and_main(tmp_path):
    root = str(tmp_path / "ds")
    lancefmt.write_dataset(table(10), root)
    dev = lancefmt.dataset(root).create_branch("dev")
    dev = lancefmt.write_dataset(table(5, 10), dev, mode="append")      # dev v2
    child = dev.create_branch("dev/child")                              # needs dev v2's file
    dev = lancefmt.write_dataset(table(3, 50), dev, mode="overwrite")   # dev v3
    time.sleep(0.05)
    main_before = files(os.path.join(root, "data"), os.path.join(root, "_versions"))
    stats = dev.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert stats.old_versions == 1                                      # dev v1; v2 is forked
    assert all(u.startswith(dev.uri + "/") and "/child/" not in u for u in stats.removed)
    assert files(os.path.join(root, "data"), os.path.join(root, "_versions")) == main_before
    assert lance.dataset(root).checkout_version(("dev/child", None)).count_rows() == 15
    assert lance.dataset(root).checkout_version(("dev", None)).count_rows() == 3
    assert child.to_table() == table(15)


def _tree(root):
    """Relative paths of every file, and of every empty directory (with a trailing slash)."""
    out = set()
    for d, dirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        out |= {n if rel == "." else f"{rel}/{n}" for n in names}
        if not dirs and not names and rel != ".":
            out.add(rel + "/")
    return out


DEAD = "9b6d0b8e-0a5c-4a57-9a44-7f4a2b1c0d1"
# what writers killed mid-way leave: an index directory never committed (a finished file, a
# temporary of the next one, a nested part), an empty one (killed right after mkdir), and the
# temporaries of an atomic write beside a data, deletion and transaction file, a manifest,
# and a Spark job's staging records
KILLED_LEFTOVERS = [
    f"_indices/{DEAD}0/page_data.lance", f"_indices/{DEAD}0/.tmp_page_lookup.lance_{'a' * 32}",
    f"_indices/{DEAD}1/part/x.lance", f"_indices/{DEAD}2/",
    f"data/.tmp_{'0' * 24 + 'f' * 26}.lance_{'b' * 32}",
    f"_deletions/.tmp_0-3-123.arrow_{'c' * 32}", f"_transactions/.tmp_3-abc.txn_{'d' * 32}",
    f"_versions/.tmp_conditional_put_probe-{'e' * 32}",
    f"_lancefmt_staging/{'f' * 32}/OPEN", f"_lancefmt_staging/{'f' * 32}/{'1' * 32}.live",
]


def _leave(root, rels):
    for rel in rels:
        p = os.path.join(root, rel)
        if rel.endswith("/"):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(b"partial")


def _indexed(tmp_path):
    root = str(tmp_path / "ds")
    ds = lancefmt.write_dataset(table(100), root, max_rows_per_file=40)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id < 5")
    return root


@pytest.mark.parametrize("cleaner", ["lancefmt", "pylance"])
def test_what_killed_writers_leave_is_removed_whole(tmp_path, cleaner):
    """Index directories no version references go whole (files, nested and empty
    directories, as pylance 14 removes them), and so do lancefmt's write temporaries (pylance
    removes those in data/, _indices/ and _versions/); nothing the dataset uses is touched."""
    root = _indexed(tmp_path)
    _leave(root, KILLED_LEFTOVERS)
    time.sleep(0.05)
    ds = lancefmt.write_dataset(table(5, 500), root, mode="append")  # the leftovers predate it
    needed = {os.path.relpath(u, root) for u in referenced(ds)} | {
        f"_indices/{s.uuid}/{n}" for d in ds.describe_indices() for s in d.segments
        for n in os.listdir(os.path.join(root, "_indices", s.uuid))}
    opener = lancefmt.dataset if cleaner == "lancefmt" else lance.dataset
    opener(root).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    left = {p for p in _tree(root) if not p.startswith("_transactions/") or ".tmp" in p}
    left -= {"_versions/latest_version_hint.json", "_indices/", "_deletions/"}
    temps = {f"_deletions/.tmp_0-3-123.arrow_{'c' * 32}", f"_transactions/.tmp_3-abc.txn_{'d' * 32}",
             f"_lancefmt_staging/{'f' * 32}/OPEN", f"_lancefmt_staging/{'f' * 32}/{'1' * 32}.live"}
    if cleaner == "pylance":  # pylance does not know these lancefmt temporaries
        assert left - needed == temps
    else:
        assert left - needed <= {"_lancefmt_staging/"} and needed <= left
    assert lance.dataset(root).to_table(filter="id = 7") == table(1, 7)
    lance.dataset(root).validate()


def test_young_leftovers_wait_for_a_week_or_delete_unverified(tmp_path):
    """A leftover younger than the version kept may belong to a write in progress, and one
    nothing ever referenced waits a week: an empty index directory too (by its own time)."""
    root = _indexed(tmp_path)
    ds = lancefmt.write_dataset(table(5, 500), root, mode="append")
    time.sleep(0.05)
    _leave(root, KILLED_LEFTOVERS)          # newer than every version: maybe in progress
    before = _tree(root)
    ds.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert {p for p in before if "tmp" in p or DEAD in p or "staging" in p} <= _tree(root)
    lancefmt.write_dataset(table(5, 600), root, mode="append")
    ds = lancefmt.dataset(root)
    ds.cleanup_old_versions(older_than=timedelta(0))  # unverified and young: still kept
    assert f"_indices/{DEAD}2/" in _tree(root) and f"_indices/{DEAD}0/page_data.lance" in _tree(root)
    week_ago = time.time() - 8 * 86400
    for d, dirs, names in os.walk(root):
        for n in names + dirs:
            if DEAD in os.path.join(d, n) or n.startswith(".tmp") or "staging" in d:
                os.utime(os.path.join(d, n), (week_ago, week_ago))
    os.utime(os.path.join(root, "_indices", DEAD + "2"), (week_ago, week_ago))
    ds.cleanup_old_versions(older_than=timedelta(0))
    assert not [p for p in _tree(root) if DEAD in p or ".tmp" in p or "/OPEN" in p]
    assert lance.dataset(root).count_rows("id = 7") == 1


def test_referenced_index_directories_are_never_pruned(tmp_path):
    root = _indexed(tmp_path)
    ds = lancefmt.dataset(root)
    (seg,) = ds.describe_indices()[0].segments
    os.makedirs(os.path.join(root, "_indices", seg.uuid, "empty"))
    before = set(os.listdir(os.path.join(root, "_indices", seg.uuid)))
    ds.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert set(os.listdir(os.path.join(root, "_indices", seg.uuid))) == before
    assert lance.dataset(root).count_rows("id = 50") == 1


def test_multipart_uploads_killed_writers_began_are_aborted_on_s3(s3_uri):
    """A writer killed mid-upload leaves a multipart upload begun and never completed
    (invisible, billed): cleanup aborts those below the dataset's data, deletion, index and
    transaction directories begun before the bar of unverified files, and no other."""
    import boto3

    from lancefmt.io import open_store

    uri, opts = s3_uri
    bucket, prefix = uri[len("s3://"):].split("/", 1)
    client = boto3.client("s3", endpoint_url=opts["endpoint_url"], aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    ds = lancefmt.write_dataset(table(10), uri, storage_options=opts)
    dead = [f"{prefix}/data/dead.lance", f"{prefix}/_indices/0b0e/page_data.lance"]
    for key in dead + ["other/data/alive.lance", f"{prefix}x/data/alive.lance"]:
        client.create_multipart_upload(Bucket=bucket, Key=key)

    def pending():
        return sorted(u["Key"] for u in client.list_multipart_uploads(Bucket=bucket).get("Uploads", []))

    everything = pending()
    began = min(u["Initiated"] for u in client.list_multipart_uploads(Bucket=bucket)["Uploads"])
    store = open_store(uri, opts)  # moto dates every upload alike (2010): the bar is the store's
    assert store.abort_stale_uploads(uri + "/data", began.timestamp()) == []
    want = sorted(f"s3://{bucket}/{d}" for d in dead)
    assert sorted(ds.cleanup_old_versions(older_than=timedelta(0), dry_run=True).aborted_uploads) == want
    assert pending() == everything
    assert sorted(ds.cleanup_old_versions(older_than=timedelta(0)).aborted_uploads) == want
    assert pending() == sorted(set(everything) - set(dead))
    assert ds.count_rows() == 10
