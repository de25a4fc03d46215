"""The columnar row pipeline: batches in, columns kept, Parquet parts on disk as they
arrive, pandas frames out; findings as before it; a killed run keeps its batches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from findings_record import findings_of

from sncheck.store.frames import RowFrames, kind_rows
from sncheck.rows import as_sink, columns_of, p2p_row
from sncheck.store.rundir import RunStore, read_frames, read_rows

ROOT = Path(__file__).resolve().parent.parent
BEFORE = json.loads((Path(__file__).parent / "data/findings-before-pipeline.json").read_text())


@pytest.mark.parametrize("seed", ["100", "101", "102", "1003", "1017"])
def test_findings_as_before_the_pipeline(tmp_path, seed):
    """The same fault lines and seed give the findings main gave before the change
    (all 70 recorded scenarios: tests/bench/bench_pipeline_findings.py)."""
    recorded = BEFORE[seed]
    assert findings_of(recorded["faults"], int(seed), tmp_path) == recorded["findings"]


def test_batches_and_single_rows_meet_in_one_table_per_kind(tmp_path):
    store = RunStore(tmp_path, run_id="r-1")
    store.emit(p2p_row(0, "n1/gpu0", "n1/gpu1", "n1/gpu0<->n1/gpu1", "intra_host", 64, bw=400.0, lat=3.0,
                       checksum_ok=True))
    cards = np.array(["n1/gpu0", "n1/gpu1", "n2/gpu0"])
    store.emit_batch("p2p", {"round": 1, "src": pd.Categorical.from_codes([0, 1], cards),
                             "dst": cards[[2, 2]], "bw_GBps": np.array([50.0, np.nan]), "status": ["ok", "timeout"],
                             "tier": "scale_up"})
    store.tagged(layer="confirm", confirms="n2/gpu0").batch("p2p", {"round": [0], "src": ["n2/gpu0"],
                                                                     "status": ["ok"]})
    store.emit({"kind": "host_fact", "layer": "connectivity", "host": "n1", "fact": "gpus",
                "value": [1, "x"], "expected": 8, "ok": False, "status": "ok", "message": "", "tool": None})
    p2p = store.frame("p2p")
    assert len(p2p) == 4 and list(p2p.columns[:len(columns_of("p2p"))]) == [c for c, _ in columns_of("p2p")]
    assert isinstance(p2p["src"].dtype, pd.CategoricalDtype)  # names are dictionary-encoded
    assert p2p["bw_GBps"].isna().tolist() == [False, False, True, True]  # NaN is a missing value
    assert (p2p["run_id"] == "r-1").all()
    assert store.frame("p2p", layer="confirm")["confirms"].tolist() == ["n2/gpu0"]
    assert len(store.frames("connectivity").kind("p2p")) == 3
    assert store.frame("host_fact")["value"].tolist() == [[1, "x"]]  # JSON values come back as values
    store.close()
    on_disk = read_frames(tmp_path)
    assert sorted(on_disk.kinds) == ["host_fact", "p2p"] and len(on_disk.kind("p2p")) == 4
    assert len(pd.read_parquet(tmp_path / "rows/p2p")) == 4  # one pandas call per kind
    assert {r["kind"] for r in read_rows(tmp_path)} == {"p2p", "host_fact"}


def test_single_rows_are_written_without_waiting_for_more(tmp_path):
    store = RunStore(tmp_path)
    store.emit(p2p_row(0, "a/gpu0", "a/gpu1", "a/gpu0<->a/gpu1", "intra_host", 8, bw=1.0))
    deadline = time.monotonic() + 5
    while not list((tmp_path / "rows").glob("p2p/part-*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pd.read_parquet(tmp_path / "rows/p2p")) == 1  # written by the store's timer
    store.close()


def test_a_plain_callable_is_a_sink_and_batches_become_rows():
    rows: list[dict] = []
    sink = as_sink(rows.append).tagged(layer="confirm")
    sink.batch("rank", {"card": np.array(["a/gpu0", "a/gpu1"]), "skew_us": np.array([1.5, 0.0]), "repeat": 0})
    assert rows == [{"kind": "rank", "layer": "confirm", "card": "a/gpu0", "skew_us": 1.5, "repeat": 0},
                    {"kind": "rank", "layer": "confirm", "card": "a/gpu1", "skew_us": 0.0, "repeat": 0}]
    frames = RowFrames({"rank": pd.DataFrame(rows)})
    assert len(kind_rows(frames, "rank")) == 2 and kind_rows(frames, "p2p").empty
    assert len(kind_rows(pd.DataFrame(rows), "rank")) == 2  # one frame with a kind column still works


def test_a_row_that_does_not_fit_its_column_is_a_clear_error(tmp_path):
    from sncheck.store.frames import RowTypeError

    store = RunStore(tmp_path)
    with pytest.raises(RowTypeError, match="p2p rows: column 'bw_GBps'"):
        store.emit_batch("p2p", {"bw_GBps": ["fast"]})


KILL_PLAYBOOK = """
name: soak
layers:
  - connectivity
  - stress: {duration: 60, max_bytes: 1MiB}
gate: warning
"""


def test_sigkill_in_the_stress_layer_keeps_every_completed_batch(tmp_path):
    (tmp_path / "soak.yaml").write_text(KILL_PLAYBOOK)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "sncheck", "run", str(tmp_path / "soak.yaml"), "-i",
                             str(ROOT / "fixtures/inventories/demo-2sn.yaml"), "--backend", "mock",
                             "--out", str(out), "-q"], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while len(list(out.glob("rows/rank/part-*.parquet"))) < 3:  # in the middle of the soak
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the stress layer never started"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    # A write cut by the kill is a dot-file, which readers skip; make sure of it.
    (out / "rows/collective/.part-999999.parquet.tmp").write_bytes(b"PAR1 cut short")
    coll = pd.read_parquet(out / "rows/collective")  # one pandas call
    ranks = pd.read_parquet(out / "rows/rank")
    p2p = pd.read_parquet(out / "rows/p2p")
    assert len(p2p) and (p2p["layer"] == "connectivity").all()  # the layer before is all there
    assert len(coll) and len(ranks)
    # Every batch is a group's whole sweep: complete sweeps only, and every rank of each row.
    per_sweep = coll.groupby("group", observed=True)["size_bytes"].nunique()  # sizes in one sweep
    rows = coll.groupby(["group", "collective", "repeat"], observed=True).size()  # sweeps x sizes
    assert (rows % per_sweep.reindex(rows.index.get_level_values(0)).to_numpy() == 0).all(), rows.value_counts()
    key = ["group", "collective", "repeat", "size_bytes"]
    have = ranks.astype({k: str for k in key}).groupby(key).size()
    want = coll[coll["status"] == "ok"].astype({k: str for k in key}).groupby(key)["ranks"].sum()
    # Every rank of each row (a sweep's rank rows are one part, written just after its
    # collective rows: the kill may fall between the two parts, so a sweep may lack them).
    group_ranks = coll.astype({"group": str}).groupby("group")["ranks"].first()
    per_rank = group_ranks.reindex(have.index.get_level_values(0)).to_numpy()
    assert (have.to_numpy() % per_rank == 0).all() and (have.to_numpy() <= want.reindex(have.index).to_numpy()).all()
    assert not (out / "results.json").exists() or json.loads((out / "results.json").read_text())["verdict"] == "error"


def test_a_kind_asked_for_then_grown_equals_one_conversion_of_all_its_batches(tmp_path):
    """The store converts a kind once and lets its Arrow tables go; later batches join
    that frame. The result is what converting every part at once gives, and a retest's
    rows (chosen in Arrow) are only its own."""
    store = RunStore(tmp_path, run_id="r-2")
    cards = np.array(["n1/gpu0", "n1/gpu1", "n2/gpu0", "n2/gpu1"])
    store.emit_batch("p2p", {"round": 0, "src": cards[[0, 2]], "dst": cards[[1, 3]], "link": ["a", "b"],
                             "bw_GBps": np.array([1.0, np.nan]), "checksum_ok": np.array([True, None]),
                             "status": ["ok", "unreachable"], "tier": "intra_host"})
    store.emit_batch("p2p", {"round": 1, "src": cards[[0]], "dst": cards[[2]], "link": ["c"],
                             "bw_GBps": np.array([2.0]), "checksum_ok": np.array([True]),
                             "status": ["ok"], "tier": "scale_up"})
    assert len(store.frame("p2p", layer="connectivity")) == 3  # every row: the kind is converted now
    retest = store.tagged(layer="confirm", confirms="n2/gpu1")
    retest.batch("p2p", {"round": 0, "src": cards[[3]], "dst": cards[[1]], "link": ["d"], "bw_GBps": [3.0],
                         "checksum_ok": [False], "status": ["timeout"], "tier": "scale_up", "error": ["late"]})
    store.emit({"kind": "host_fact", "layer": "connectivity", "host": "n1", "fact": "gpus", "value": 8,
                "expected": 8, "ok": True, "status": "ok", "message": "", "tool": None})
    mine = store.frame("p2p", layer="confirm", confirms="n2/gpu1")
    assert mine["link"].tolist() == ["d"] and mine["error"].tolist() == ["late"]
    assert store.frame("p2p", layer="confirm", confirms="n1/gpu0").empty
    assert store.frame("p2p", layer="connectivity")["link"].tolist() == ["a", "b", "c"]
    assert store.counts() == {"p2p": 4, "host_fact": 1}
    grown = store.frame("p2p")
    store.close()
    at_once = read_frames(tmp_path).kind("p2p")
    pd.testing.assert_frame_equal(grown.astype({c: str for c in ("kind", "layer", "confirms", "src", "dst", "tier",
                                                                 "status", "run_id")}),
                                  at_once.astype({c: str for c in ("kind", "layer", "confirms", "src", "dst",
                                                                   "tier", "status", "run_id")}))
    for col in ("src", "dst", "tier", "status", "confirms"):
        assert isinstance(grown[col].dtype, pd.CategoricalDtype), col
        assert set(grown[col].cat.categories) == set(at_once[col].cat.categories), col
