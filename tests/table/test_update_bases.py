"""UpdateBases in the table layer: Lance's add rules, lancefmt's relocation, the transaction
marker, conflicts, and the clone manifest."""
import pytest

from lancefmt._proto import table_pb2
from lancefmt.errors import InvalidArgumentError, InvalidPathError
from lancefmt.table.clone import build_clone_manifest, clone_base_id
from lancefmt.table.conflict import Verdict, check_conflict
from lancefmt.table.fragment import FragmentMetadata
from lancefmt.table.manifest_builder import build_manifest
from lancefmt.table.transaction import (
    RELOCATE_BASES_KEY, Append, Clone, Transaction, UpdateBases,
)

from table_factory import make_manifest


def bp(id, path, name=None, root=False):
    b = table_pb2.BasePath(id=id, path=path, is_dataset_root=root)
    if name is not None:
        b.name = name
    return b


def base_manifest():
    m = make_manifest(5, 1, bases=False)
    m.base_paths.extend([bp(1, "/b1", "b1"), bp(3, "s3://x/b3", "b3")])
    return m


def apply(m, op):
    out, _ = build_manifest(m, [], Transaction(m.version, op), version=m.version + 1,
                            transaction_file="t.txn")
    return {b.id: (b.name if b.HasField("name") else None, b.path) for b in out.base_paths}, out


def test_add_assigns_max_plus_one_and_keeps_fragments():
    m = base_manifest()
    bases, out = apply(m, UpdateBases([bp(0, "/b4", "b4")]))
    assert bases[4] == ("b4", "/b4")
    assert list(out.fragments) == list(m.fragments) and out.max_fragment_id == m.max_fragment_id
    assert out.reader_feature_flags & 16


@pytest.mark.parametrize("new", [bp(0, "/other", "b1"), bp(0, "/b1", "fresh")])
def test_add_refuses_name_or_path_in_use(new):
    with pytest.raises(InvalidArgumentError):
        apply(base_manifest(), UpdateBases([new]))


def test_two_unnamed_bases_collide_as_in_lance():
    m = base_manifest()
    _, out = apply(m, UpdateBases([bp(0, "/u1")]))
    with pytest.raises(InvalidArgumentError):
        apply(out, UpdateBases([bp(0, "/u2")]))


def test_relocate_existing_ids_including_zero():
    m = base_manifest()
    m.base_paths.add().CopyFrom(bp(0, "/src", None, True))
    bases, _ = apply(m, UpdateBases([bp(0, "/moved-src", None, True), bp(3, "s3://y/b3", "b3")],
                                    relocate=True))
    assert bases == {1: ("b1", "/b1"), 3: ("b3", "s3://y/b3"), 0: (None, "/moved-src")}
    with pytest.raises(InvalidArgumentError):
        apply(m, UpdateBases([bp(7, "/nope")], relocate=True))
    with pytest.raises(InvalidArgumentError):
        apply(m, UpdateBases([bp(1, "s3://x/b3", "b1")], relocate=True))
    with pytest.raises(InvalidPathError):
        apply(m, UpdateBases([bp(1, "/a/../b", "b1")], relocate=True))


def test_relocate_marker_round_trips():
    txn = Transaction(4, UpdateBases([bp(1, "/new", "b1")], relocate=True))
    pb = txn.to_pb()
    assert pb.transaction_properties[RELOCATE_BASES_KEY] == "true"
    back = Transaction.from_bytes(pb.SerializeToString())
    assert back.operation.relocate and back.operation.new_bases[0].id == 1
    plain = Transaction.from_pb(Transaction(4, UpdateBases([bp(0, "/n")])).to_pb())
    assert not plain.operation.relocate


def frag_in(base_id):
    f = table_pb2.DataFragment(id=0, physical_rows=1)
    f.files.add(path="a.lance", base_id=base_id)
    return FragmentMetadata(f)


def test_conflicts():
    reloc = Transaction(1, UpdateBases([bp(1, "/new", "b1")], relocate=True))
    add = Transaction(1, UpdateBases([bp(0, "/b9", "b9")]))
    reloc0 = Transaction(1, UpdateBases([bp(0, "/x", None, True)], relocate=True))
    assert check_conflict(reloc, add).verdict is Verdict.COMPATIBLE
    assert check_conflict(reloc0, Transaction(1, UpdateBases([bp(0, "/y", None, True)],
                                                             relocate=True))).verdict \
        is Verdict.INCOMPATIBLE
    assert check_conflict(add, Transaction(1, UpdateBases([bp(0, "/b9", "zz")]))).verdict \
        is Verdict.INCOMPATIBLE
    # files written into a relocated base, in either order
    assert check_conflict(Transaction(1, Append([frag_in(1)])), reloc).verdict is Verdict.RETRYABLE
    assert check_conflict(reloc, Transaction(1, Append([frag_in(1)]))).verdict is Verdict.RETRYABLE
    assert check_conflict(Transaction(1, Append([frag_in(2)])), reloc).verdict is Verdict.COMPATIBLE
    assert check_conflict(Transaction(1, Append([frag_in(1)])), add).verdict is Verdict.COMPATIBLE


def test_clone_manifest():
    src = base_manifest()
    src.fragments[0].files[0].base_id = 3
    idx = table_pb2.IndexMetadata(name="i", dataset_version=1)
    assert clone_base_id(src) == 0
    op = Clone(True, "dev", src.version, "/src", "feat")
    m, indices = build_clone_manifest(src, [idx], op, transaction_file="3-u.txn")
    assert m.version == src.version and m.branch == "feat" and m.transaction_file == "3-u.txn"
    assert m.base_paths[-1] == bp(0, "/src", "dev", True)
    assert m.fragments[0].files[0].base_id == 3
    assert all(df.base_id == 0 for f in m.fragments[1:] for df in f.files)
    assert all(f.deletion_file.base_id == 0 for f in m.fragments if f.HasField("deletion_file")
               and not src.fragments[[g.id for g in src.fragments].index(f.id)].deletion_file.HasField("base_id"))
    assert indices[0].base_id == 0
    assert m.reader_feature_flags & 16
    m.base_paths.add().CopyFrom(bp(1, "/x"))
    assert clone_base_id(m) == 2
