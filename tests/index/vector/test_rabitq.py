"""RaBitQ pieces of IVF_RQ: the fast rotation, the FastScan code packing and the blocked
extended codes, and damaged pylance IVF_RQ files refused as CorruptFileError naming the file."""
import glob
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

import lance
from lancefmt.errors import CorruptFileError
from lancefmt.index.core.store import IndexStore
from lancefmt.index.vector import _ivf, rabitq
from lancefmt.index.vector.ivf_index import IvfIndex

PERM0 = [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15]


@pytest.mark.parametrize("dim", [32, 48, 128])
def test_fast_rotation_is_orthogonal(dim):
    rng = np.random.default_rng(dim)
    signs = rng.integers(0, 256, 4 * dim // 8).astype(np.uint8)
    x = rng.standard_normal((50, dim)).astype(np.float32)
    r = rabitq.fast_rotate(x, signs, dim)
    scale = 1.0 if dim & (dim - 1) == 0 else None
    gram_in, gram_out = x @ x.T, r @ r.T
    if scale is None:   # Lance's non-power-of-two rotation is orthogonal up to a constant
        scale = float(np.median(np.diag(gram_out) / np.diag(gram_in)))
    np.testing.assert_allclose(gram_out, gram_in * scale, rtol=1e-3, atol=1e-2)
    assert not np.allclose(r, x)


def pack(rows):
    """The FastScan packing as the format describes it (blocks of 32 rows, the rest transposed)."""
    n, width = rows.shape
    out = []
    for b in range(n // 32):
        blk = rows[32 * b:32 * b + 32]
        for i in range(width):
            col = blk[:, i]
            lo, hi = col & 15, col >> 4
            out += [lo[PERM0[j]] | (lo[PERM0[j] + 16] << 4) for j in range(16)]
            out += [hi[PERM0[j]] | (hi[PERM0[j] + 16] << 4) for j in range(16)]
    rest = rows[32 * (n // 32):]
    return np.concatenate([np.array(out, np.uint8), rest.T.ravel()]).reshape(n, width)


@pytest.mark.parametrize("n", [5, 32, 70])
def test_unpack_codes_inverts_fastscan_packing(n):
    rows = np.random.default_rng(n).integers(0, 256, (n, 6)).astype(np.uint8)
    assert np.array_equal(rabitq.unpack_codes(pack(rows)), rows)


@pytest.mark.parametrize("ex_bits", [2, 4, 8])
def test_blocked_ex_codes_decode(ex_bits):
    dim = 96
    codes = np.random.default_rng(ex_bits).integers(0, 1 << ex_bits, (3, 128)).astype(np.uint8)
    codes[:, dim:] = 0
    blocked = np.zeros((3, 2, 8 * ex_bits), np.uint8)
    for g in range(2):
        c = codes[:, 64 * g:64 * g + 64]
        if ex_bits == 8:
            blocked[:, g] = c
        elif ex_bits == 4:
            for j in range(4):
                blocked[:, g, 8 * j:8 * j + 8] = c[:, 16 * j:16 * j + 8] | (c[:, 16 * j + 8:16 * j + 16] << 4)
        else:
            for k in range(4):
                blocked[:, g] |= c[:, 16 * k:16 * k + 16] << (2 * k)
    out = rabitq.decode_ex(blocked.reshape(3, -1), ex_bits, dim)
    assert np.array_equal(out, codes[:, :dim])


@pytest.fixture(scope="module")
def rq_index(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("rq") / "ds")
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 16)).astype(np.float32)
    lance.write_dataset(pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), 16)}), uri)
    lance.dataset(uri).create_index("vec", "IVF_RQ", num_partitions=2)
    return os.path.dirname(glob.glob(uri + "/_indices/*/auxiliary.idx")[0]), X


def test_scan_runs_once_per_probed_partition(rq_index, monkeypatch):
    seg, X = rq_index
    idx = IvfIndex.load(IndexStore(seg))
    calls = []
    real = _ivf.rq_scan
    monkeypatch.setattr(_ivf, "rq_scan", lambda *a: calls.append(a[2]) or real(*a))
    prepared = []
    real_prepare = _ivf.rq_prepare
    monkeypatch.setattr(_ivf, "rq_prepare", lambda *a: prepared.append(1) or real_prepare(*a))
    hits = idx.search_vectors(X[7], 5, minimum_nprobes=2, maximum_nprobes=2)
    assert len(calls) == 2 and sum(calls) == 300 and 7 in hits.ids.tolist()
    assert len(prepared) == 1   # the query is rotated and tabled once, not per partition


@pytest.mark.parametrize("dim", [8, 24, 40, 128, 136])
def test_cython_query_tables_equal_numpy_steps(dim):
    """rq_prepare's rotation, tables and u8 quantization are bit for bit the numpy steps
    (fast_rotate, subset sums, pylance's rounding), zero query included."""
    q = rabitq.RabitQuantizer.train(dim, 5, seed=dim)
    rng = np.random.default_rng(dim)
    for x in (np.zeros(dim, np.float32), (rng.standard_normal(dim) * 30).astype(np.float32)):
        rq, table, qt, qmin, step, sum_q = q.query_tables(x)
        want = rabitq.fast_rotate(x[None, :], q.signs, dim)[0]
        assert np.array_equal(rq, want)
        seg = want.reshape(-1, 4)
        t = np.zeros((seg.shape[0], 16), np.float32)
        for j in range(1, 16):
            t[:, j] = t[:, j & (j - 1)] + seg[:, (j & -j).bit_length() - 1]
        assert np.array_equal(table, t.ravel())
        lo, hi = np.float32(t.min()), np.float32(t.max())
        assert qmin == lo and step == np.float32((hi - lo) / np.float32(255))
        if hi > lo:
            f = np.float32(255) / np.float32(hi - lo)
            assert np.array_equal(qt, np.clip(np.rint((t.ravel() - lo) * f), 0, 255).astype(np.uint8))
        assert sum_q == np.cumsum(want, dtype=np.float32)[-1]


def damage(seg, tmp_path, change):
    """A copy of the segment whose auxiliary.idx has had ``change(table, meta)`` applied."""
    os.makedirs(tmp_path / "seg")
    shutil.copy(os.path.join(seg, "index.idx"), tmp_path / "seg" / "index.idx")
    src, dst = IndexStore(seg), IndexStore(str(tmp_path / "seg"))
    table = src.read_table("auxiliary.idx").replace_schema_metadata(None)
    meta = dict(src.schema_metadata("auxiliary.idx"))
    table, meta = change(table, meta)
    dst.write_table("auxiliary.idx", table, meta, [src.reader("auxiliary.idx").read_global_buffer(1)])
    return IndexStore(str(tmp_path / "seg"))


def _storage(meta, **kw):
    m = json.loads(json.loads(meta["storage_metadata"])[0])
    m.update(kw)
    return {**meta, "storage_metadata": json.dumps([json.dumps(m)])}


CHANGES = {
    "short signs": lambda t, m: (t, _storage(m, fast_rotation_signs=[1, 2, 3])),
    "small code_dim": lambda t, m: (t, _storage(m, code_dim=8)),
    "no add factors": lambda t, m: (t.drop_columns(["__add_factors"]), m),
    "int factors": lambda t, m: (t.set_column(t.schema.get_field_index("__scale_factors"), "__scale_factors",
                                              pa.array(np.zeros(t.num_rows, np.int32))), m),
    "wide codes": lambda t, m: (t.set_column(t.schema.get_field_index("_rabit_codes"), "_rabit_codes",
                                             pa.FixedSizeListArray.from_arrays(
                                                 pa.array(np.zeros(t.num_rows * 3, np.uint8)), 3)), m),
    "short ex codes": lambda t, m: (t.set_column(t.schema.get_field_index("__blocked_ex_codes"),
                                                 "__blocked_ex_codes", pa.FixedSizeListArray.from_arrays(
                                                     pa.array(np.zeros(t.num_rows * 4, np.uint8)), 4)), m),
}


@pytest.mark.parametrize("what", list(CHANGES))
def test_damaged_rq_files_are_corrupt_and_named(rq_index, tmp_path, what):
    seg, _ = rq_index
    store = damage(seg, tmp_path, CHANGES[what])
    with pytest.raises(CorruptFileError, match="auxiliary.idx"):
        IvfIndex.load(store)


def test_truncated_rq_file_is_corrupt_and_named(rq_index, tmp_path):
    seg, _ = rq_index
    os.makedirs(tmp_path / "seg")
    shutil.copy(os.path.join(seg, "index.idx"), tmp_path / "seg" / "index.idx")
    data = open(os.path.join(seg, "auxiliary.idx"), "rb").read()
    (tmp_path / "seg" / "auxiliary.idx").write_bytes(data[:len(data) // 2])
    with pytest.raises(CorruptFileError, match="auxiliary.idx"):
        IvfIndex.load(IndexStore(str(tmp_path / "seg")))


@pytest.mark.parametrize("n", [5, 32, 70])
def test_pack_codes_inverts_unpack(n):
    rows = np.random.default_rng(n).integers(0, 256, (n, 4)).astype(np.uint8)
    assert np.array_equal(rabitq.pack_codes(rows), pack(rows))


@pytest.mark.parametrize("ex_bits", range(1, 9))
def test_encode_ex_inverts_decode(ex_bits):
    codes = np.random.default_rng(ex_bits).integers(0, 1 << ex_bits, (4, 80)).astype(np.uint8)
    assert np.array_equal(rabitq.decode_ex(rabitq.encode_ex(codes, ex_bits), ex_bits, 80), codes)


@pytest.mark.parametrize("metric", ["l2", "dot"])
@pytest.mark.parametrize("num_bits,tolerance", [(1, 0.15), (5, 0.01)])
def test_encoded_rows_estimate_distances(num_bits, tolerance, metric):
    """Factors written by the encoder make Lance's raw-query estimator (add factor weight 1,
    query term |q - c|^2 for L2, -q.c for dot) come out near the true distance."""
    rng = np.random.default_rng(num_bits)
    dim = 64
    q = rabitq.RabitQuantizer.train(dim, num_bits, seed=3)
    centroid = rng.standard_normal(dim).astype(np.float32)
    centroid /= np.linalg.norm(centroid)
    X = centroid + rng.standard_normal((200, dim)).astype(np.float32)
    rows = rabitq.encode_rows(q, X - centroid, q.rotated(centroid[None, :]).repeat(200, 0), metric)
    table = rabitq.rows_table(q, np.arange(200, dtype=np.uint64), rows, [0], [200])
    stored = q.stored_from_table(table, [0], [200], "mem")
    assert np.array_equal(rabitq.stored_rows(stored, q.ex_bits), rows)
    query = centroid + rng.standard_normal(dim).astype(np.float32)
    rq, tab, qt, qmin, step, sum_q = q.query_tables(query)
    top = _ivf.TopK(200)
    if metric == "l2":
        qf = float(((query - centroid) ** 2).sum())
        true_of = lambda V: ((V - query) ** 2).sum(1)  # noqa: E731
    else:
        qf = -float(query @ centroid)
        true_of = lambda V: 1 - V @ query  # noqa: E731
    _ivf.rq_scan(stored.codes, 0, 200, qt, qmin, step, tab, sum_q, stored.add, stored.scale,
                 stored.error, stored.ex, stored.ex_add, stored.ex_scale, q.ex_bits, rq, 1.0, qf,
                 0.0, False, np.arange(200, dtype=np.uint64), np.zeros(0, np.uint8), False,
                 -np.inf, np.inf, top)
    ids, est, _ = top.result()
    true = true_of(X[ids.astype(int)])
    # dot: the estimated term is (q - c).r, so its error is relative to |q - c| |r|
    scale = np.abs(true).mean() if metric == "l2" else \
        np.linalg.norm(query - centroid) * np.linalg.norm(X - centroid, axis=1).mean()
    err = np.abs(est - true).mean() / scale
    assert err < tolerance


def test_dot_terms_are_pylances_estimate():
    """pylance 14's dot score ``(bip - sum_q/2) * scale + q.c * add + 1 - 2 q.c`` differs from
    Lance's published ``... + add - q.c`` by ``(q.c - 1)(add - 1)``; the gate's query error
    is the query's part orthogonal to the (unit) centroid."""
    rng = np.random.default_rng(4)
    c = rng.standard_normal(16).astype(np.float32)
    c /= np.linalg.norm(c)
    q = rng.standard_normal(16).astype(np.float32) * 3
    am, qf, qerr = (float(v[0]) for v in rabitq._dot_terms(q, c[None, :], True))
    qc = float(q @ c)
    assert am == pytest.approx(qc, rel=1e-5) and qf == pytest.approx(1 - 2 * qc, rel=1e-5)
    assert qerr == pytest.approx(np.linalg.norm(q - qc * c), rel=1e-5)
    assert rabitq._dot_terms(q, c[None, :], False)[2][0] == 0.0


def _numpy_rows(q, r, pc, dot):
    """The row matrix by numpy (the encoder's maths spelled out): sign bits, extended codes
    from the levels, float32 factors."""
    pr = r.astype(np.float64) @ q.rotation_matrix()[:r.shape[1]]
    bits = pr > 0
    s = np.where(bits, 1.0, -1.0)
    r2 = (r.astype(np.float64) ** 2).sum(1)
    ip = (s * pr).sum(1)
    w = 1.0 if dot else 2.0
    base = 1.0 - (pr * pc).sum(1) if dot else r2
    scale = -2.0 * w * r2 / ip
    a = ip / (np.sqrt(q.code_dim) * np.sqrt(r2))
    err = w * rabitq.ERROR_BOUND * np.sqrt(r2) * np.sqrt(1 - a * a) / np.abs(a) / np.sqrt(q.code_dim - 1)
    add = base - 0.5 * scale * (s * pc).sum(1)
    parts = [np.packbits(bits, axis=1, bitorder="little")]
    ex_add = ex_scale = np.zeros(r.shape[0])
    if q.ex_bits:
        o = np.abs(pr)
        unit = np.ascontiguousarray(o / o.max(1, keepdims=True), np.float32)
        k = np.zeros(unit.shape, np.uint8)
        _ivf.rq_best_levels(unit, q.ex_bits, 4 << q.ex_bits, k)
        top = (1 << q.ex_bits) - 1
        parts.append(np.where(bits, k, top - k).astype(np.uint8))
        u = np.where(bits, k + 0.5, -(k + 0.5))
        ex_scale = -w * r2 / (u * pr).sum(1)
        ex_add = base - ex_scale * (u * pc).sum(1)
    f = np.stack([add, scale, err, ex_add, ex_scale], axis=1).astype(np.float32)
    return np.concatenate(parts, axis=1), f


@pytest.mark.parametrize("metric", ["l2", "dot"])
@pytest.mark.parametrize("num_bits", [1, 3, 5])
def test_cython_encoder_equals_numpy_maths(num_bits, metric):
    rng = np.random.default_rng(num_bits)
    q = rabitq.RabitQuantizer.train(32, num_bits, seed=2)
    c = rng.standard_normal((3, 32)).astype(np.float32)
    lab = rng.integers(0, 3, 300)
    r = rng.standard_normal((300, 32)).astype(np.float32)
    pc = q.rotated(c).astype(np.float64)[lab]
    rows = rabitq.encode_rows(q, r, q.rotated(c)[lab], metric)
    codes, factors = _numpy_rows(q, r, pc, metric == "dot")
    assert np.array_equal(rows[:, :-20], codes)
    np.testing.assert_allclose(rows[:, -20:].copy().view(np.float32), factors, rtol=1e-5, atol=1e-6)
