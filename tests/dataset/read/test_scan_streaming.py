"""Scans stream: tasks hand their windows over through bounded queues, so a scan holds a few
windows per running task whatever the dataset's size; a scan started while another one's
producers hold every thread still finishes."""
import threading

import pyarrow as pa

import lancefmt
from lancefmt.dataset.read import scan as scan_mod
from lancefmt.dataset.read import window_shape


def _dataset(tmp_path, rows=40_000, per_file=2_000):
    uri = str(tmp_path / "ds")
    return lancefmt.write_dataset(pa.table({"id": range(rows)}), uri, max_rows_per_file=per_file)


def test_windows_read_ahead_stay_bounded(tmp_path, monkeypatch):
    ds = _dataset(tmp_path)
    monkeypatch.setattr(scan_mod, "WINDOW_ROWS", 500)  # 4 windows per fragment
    monkeypatch.setattr(window_shape, "WINDOW_BYTES", 0)  # not grown for narrow rows
    lock = threading.Lock()
    state = {"produced": 0, "consumed": 0, "most_ahead": 0}
    real = scan_mod.FragmentScan.windows

    def counting(self, start=0, stop=None):
        for table in real(self, start, stop):
            with lock:
                state["produced"] += table.num_rows
                state["most_ahead"] = max(state["most_ahead"],
                                          state["produced"] - state["consumed"])
            yield table

    monkeypatch.setattr(scan_mod.FragmentScan, "windows", counting)
    spec = scan_mod.ScanSpec.build(ds.schema, batch_size=500)
    snap = ds.snapshot
    total = 0
    for batch in scan_mod.scan_batches(snap.ctx, snap.fragment_pbs(), spec, threads=2,
                                       readahead=4):
        with lock:
            state["consumed"] += batch.num_rows
        total += batch.num_rows
    assert total == 40_000
    # read ahead: at most 4 started tasks, each with its queue (2 windows) and one window being
    # handed over, plus the batch in the consumer's hand: far below the 20 fragments' 40,000 rows
    assert state["most_ahead"] <= 4 * (2 + 1) * 500 + 500, state


def test_a_scan_inside_a_scan_finishes_with_every_thread_busy(tmp_path):
    ds = _dataset(tmp_path, rows=8_000, per_file=500)
    snap = ds.snapshot
    spec = scan_mod.ScanSpec.build(ds.schema)
    outer = inner_total = 0
    for batch in scan_mod.scan_batches(snap.ctx, snap.fragment_pbs(), spec, threads=2,
                                       readahead=8):
        outer += batch.num_rows
        inner = scan_mod.scan_batches(snap.ctx, snap.fragment_pbs(), spec, threads=2,
                                      readahead=8)
        inner_total += sum(b.num_rows for b in inner)
    assert outer == 8_000 and inner_total == 8_000 * 16


def test_an_abandoned_scan_stops_its_producers(tmp_path):
    ds = _dataset(tmp_path)
    snap = ds.snapshot
    spec = scan_mod.ScanSpec.build(ds.schema, batch_size=100)
    it = scan_mod.scan_batches(snap.ctx, snap.fragment_pbs(), spec, threads=2, readahead=4)
    first = next(it)
    it.close()  # e.g. a consumer that stops early
    assert first.num_rows == 100
    # the producers saw the close: nothing is left running in the pool
    assert scan_mod.scan_pool(2).submit(lambda: 7).result(timeout=5) == 7


def test_limit_and_offset_across_streamed_tasks(tmp_path):
    ds = _dataset(tmp_path)
    got = ds.to_table(offset=1_999, limit=3)["id"].to_pylist()
    assert got == [1_999, 2_000, 2_001]


def test_narrow_rows_of_a_local_scan_come_in_few_windows(tmp_path):
    rows = 300_000  # > WINDOW_ROWS
    t = pa.table({"id": pa.array(range(rows), pa.int64()), "s": pa.array(["x"] * rows)})
    ds = lancefmt.write_dataset(t, str(tmp_path / "ds"))
    snap = ds.snapshot
    (pb,) = snap.fragment_pbs()

    def windows(columns):
        spec = scan_mod.ScanSpec.build(ds.schema, columns)
        return [w.num_rows for w in scan_mod.FragmentScan(snap.ctx, pb, spec).windows()]

    # 8 bytes a row: one 8 MiB window holds the fragment; a string's width is not known up
    # front, so its rows keep the row window
    assert windows(["id"]) == [rows]
    assert windows(["id", "s"]) == [scan_mod.WINDOW_ROWS, scan_mod.WINDOW_ROWS,
                                    rows - 2 * scan_mod.WINDOW_ROWS]
