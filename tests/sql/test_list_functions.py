"""array_has / array_has_any / array_has_all kernels against a plain-Python reference."""
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

from lancefmt.sql.list_functions import list_function

LISTS = pa.array([["a", "b"], [], None, ["c", None], ["a", "a", "c"], ["b"]], pa.list_(pa.string()))


def reference(kind, needles):
    out = []
    for lst in LISTS.to_pylist():
        if lst is None:
            out.append(None)
        elif kind == "any":
            out.append(any(n in lst for n in needles))
        else:
            out.append(all(n in lst for n in needles))
    return out


@pytest.mark.parametrize("kind,needles", [("any", ["a"]), ("any", ["c", "b"]), ("any", ["z"]),
                                          ("all", ["a", "c"]), ("all", ["b"]), ("all", ["a", "z"])])
def test_matches_reference(kind, needles):
    arg = pa.scalar(needles, pa.list_(pa.string()))
    name = list_function(kind, LISTS.type, arg.type)
    expr = pc.Expression._call(name, [pc.field("l"), pc.scalar(arg)])
    out = pads.dataset(pa.table({"l": LISTS})).to_table(columns={"r": expr})
    assert out["r"].to_pylist() == reference(kind, needles)


def test_registration_is_idempotent():
    t = pa.list_(pa.int64())
    assert list_function("any", t, t) == list_function("any", t, t)
