"""A view of the run store reads each column of a kind once (issue 31, reads31): the
columns a reader adds to a kind are read beside those kept, never the kept ones again; a
selection every part's values already satisfy reads no selecting column; rank_skew reads
only its own columns of the rank rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sncheck.health.invariants import stress_coverage
from sncheck.health.metrics import RANK_SKEW, DetectContext, rank_skew
from sncheck.config.inventory import Inventory
from sncheck.run.inputs import load_inventory
from sncheck.store import parts
from sncheck.store.rundir import RunStore, read_frames
from sncheck.topology import Topology

DEMO = Path(__file__).resolve().parents[1] / "fixtures/inventories/demo-2sn.yaml"


def _store(tmp_path) -> RunStore:
    store = RunStore(tmp_path, run_id="r-1")
    for n in range(3):  # three parts of the connectivity layer
        store.batch("p2p", {"round": n, "src": [f"a/gpu{n}", "b/gpu0"], "dst": ["b/gpu1", f"c/gpu{n}"],
                            "bw_GBps": [1.0 + n, 2.0 + n], "lat_us": [3.0, 4.0 + n], "status": "ok",
                            "tier": "scale_out"})
        store.flush()
    store.tagged(layer="confirm", confirms="a/gpu0").batch("p2p", {"round": [9], "src": ["z/gpu0"],
                                                                     "dst": ["a/gpu0"], "bw_GBps": [9.0],
                                                                     "status": ["ok"]})
    store.flush()
    return store


def _reads(monkeypatch) -> list[tuple[str, ...] | None]:
    """The columns of every part read from now on."""
    seen: list[tuple[str, ...] | None] = []
    read = parts.Part.read

    def recorded(self, columns):
        seen.append(None if columns is None else tuple(columns))
        return read(self, columns)

    monkeypatch.setattr(parts.Part, "read", recorded)
    return seen


def test_a_column_added_to_a_kind_is_read_alone(tmp_path, monkeypatch):
    store = _store(tmp_path)
    view = store.frames("connectivity")
    whole = store.frames("connectivity").kind("p2p", ["src", "dst", "bw_GBps", "lat_us"])
    seen = _reads(monkeypatch)
    assert view.kind("p2p", ["bw_GBps"])["bw_GBps"].tolist() == whole["bw_GBps"].tolist()
    # the three connectivity parts, the selecting column 'layer' never read (their values say
    # every row is of the layer); the retest's part never opened
    assert seen == [("bw_GBps",)] * 3
    seen.clear()
    both = view.kind("p2p", ["lat_us", "bw_GBps"])
    assert seen == [("lat_us",)] * 3  # bw_GBps is kept: not read again
    pd.testing.assert_frame_equal(both, whole[["lat_us", "bw_GBps"]])
    seen.clear()
    ends = view.kind("p2p", ["src"])
    assert seen == [("src",)] * 3
    seen.clear()
    # dst joins src's categories: src is read again beside it, one category set for both
    got = view.kind("p2p", ["dst", "src", "bw_GBps"])
    assert seen == [("dst", "src")] * 3
    assert got["src"].dtype == got["dst"].dtype
    pd.testing.assert_frame_equal(got, whole[["dst", "src", "bw_GBps"]])
    assert ends["src"].tolist() == whole["src"].tolist()
    seen.clear()
    assert view.kind("p2p", ["lat_us", "dst"]).equals(whole[["lat_us", "dst"]]) and seen == []
    # every column: one read of each part, whole
    assert len(view.kind("p2p")) == 6 and seen == [None] * 3


def test_a_selection_the_parts_cannot_vouch_for_is_read_and_applied(tmp_path, monkeypatch):
    store = _store(tmp_path)
    store.close()
    view = read_frames(tmp_path).where(layer="connectivity")  # a run directory's parts: values unknown
    seen = _reads(monkeypatch)
    got = view.kind("p2p", ["bw_GBps"])
    assert got["bw_GBps"].tolist() == [1.0, 2.0, 2.0, 3.0, 3.0, 4.0]  # the retest's row left out
    assert seen == [("bw_GBps", "layer")] * 4
    seen.clear()
    retest = store.frames("confirm", confirms="a/gpu0")
    assert retest.kind("p2p", ["src"])["src"].tolist() == ["z/gpu0"] and seen == [("src",)]


def test_rank_skew_reads_only_its_columns_of_the_rank_rows(tmp_path, monkeypatch):
    store = RunStore(tmp_path, run_id="r-1")
    store.batch("rank", {"group": ["host:a", "host:a", "pair:a/gpu0<->a/gpu1"], "collective": "all_reduce",
                         "size_bytes": 8, "repeat": 0, "card": ["a/gpu0", "a/gpu1", "a/gpu0"],
                         "skew_us": [1.0, 3.0, 50.0], "op_us": 2.0, "wrong": 0})
    store.flush()
    seen = _reads(monkeypatch)
    ctx = DetectContext(topo=Topology(Inventory("t", (), {})), design={})
    out = rank_skew(store.frames("stress"), ctx)
    assert dict(zip(out["entity"], out["value"])) == {"a/gpu0": 1.0, "a/gpu1": 3.0}
    assert [sorted(c) for c in seen if c is not None] == [sorted(RANK_SKEW)] and None not in seen


def test_the_stress_evaluation_reads_the_rank_rows_once_with_three_columns(tmp_path, monkeypatch):
    store = RunStore(tmp_path, run_id="r-1")
    store.batch("rank", {"group": "host:h01", "collective": "all_reduce", "size_bytes": 8, "repeat": 0,
                         "card": ["h01/gpu0", "h01/gpu1"], "skew_us": [1.0, 3.0], "op_us": 2.0, "wrong": 0})
    store.flush()
    topo = Topology(load_inventory(str(DEMO)))
    seen = _reads(monkeypatch)
    view = store.frames("stress")
    rank_skew(view, DetectContext(topo=topo, design={}))
    assert stress_coverage(view, topo)  # (no collective ran: findings)
    # the coverage asks for two of the columns rank_skew read: the kept frame gives them
    ranks = [c for c in seen if c is None or "group" in c]  # (the collective and not_run reads aside)
    assert [sorted(c) for c in ranks if c is not None] == [sorted(RANK_SKEW)] and None not in ranks, seen


def test_the_launch_spread_reads_the_rank_rows_a_piece_at_a_time_for_the_groups_asked(tmp_path, monkeypatch):
    """The stress layer's launch spread (groups.launch_spread, read for the groups a culprit explains)
    keeps no frame of every rank row: at 131,072 cards those were 29 M rows held at once over the
    stress layer (a cross group a rail). Each piece is reduced to its rows' latest and earliest launch,
    the pieces' to their extremes: one (group, collective, size, repeat) split over two parts reads
    as it does whole."""
    from sncheck.health.groups import launch_spread

    store = RunStore(tmp_path, run_id="r-1")
    # cross:gpu0 at 8 bytes, repeat 0: ranks 1.0 and 7.0 in one part, 4.0 in the next (range 6);
    # repeat 1: 2.0 .. 5.0 (range 3); median over the repeats: 4.5. host:a: range 9, not asked.
    for skews, cards, group, repeat in (([1.0, 7.0], ["a/gpu0", "b/gpu0"], "cross:gpu0", 0),
                                        ([4.0], ["c/gpu0"], "cross:gpu0", 0),
                                        ([2.0, 5.0, 3.0], ["a/gpu0", "b/gpu0", "c/gpu0"], "cross:gpu0", 1),
                                        ([0.0, 9.0], ["a/gpu0", "a/gpu1"], "host:a", 0)):
        store.batch("rank", {"group": group, "collective": "all_reduce", "size_bytes": 8, "repeat": repeat,
                             "card": cards, "skew_us": skews, "op_us": 2.0, "wrong": 0})
        store.flush()
    monkeypatch.setattr(parts, "PIECE_ROWS", 1)   # a part a piece
    seen = _reads(monkeypatch)
    view = store.frames("stress")
    spread = launch_spread(view, {"cross:gpu0"})
    assert spread.to_dict() == {("cross:gpu0", "all_reduce", 8): 4.5}
    assert view._read == {} and len(seen) == 4 and None not in seen, seen
    # every group's, as before (host:a: its one repeat's range)
    assert launch_spread(view).to_dict() == {("cross:gpu0", "all_reduce", 8): 4.5, ("host:a", "all_reduce", 8): 9.0}


def test_the_stress_judging_reads_the_rank_rows_a_piece_at_a_time_as_codes_and_values(tmp_path, monkeypatch):
    """rank_skew, the straggler rule's sides (ops._Sides), stress coverage and the history's card
    summaries read the rank rows a piece at a time into cell codes and skews (health.rankrows), once
    for the view, which keeps no frame of them (at 131,072 cards 29 M rows, the stress layer's judging
    3,809 MiB, grouped whole). A card's rows in one group split over parts, a missing skew and the
    pairwise pass's rows read as the one frame of every row does."""
    from sncheck.health import summaries
    from sncheck.health.lateness import lateness
    from sncheck.health.rankrows import rank_rows

    store = RunStore(tmp_path, run_id="r-1")
    rows = [("host:node001", ["node001/gpu0", "node001/gpu1"], [1.0, 3.0]), ("host:node001", ["node001/gpu0", "node001/gpu1"], [2.0, None]),
            ("rail:sn0:gpu0", ["node001/gpu0", "node002/gpu0"], [0.5, 4.0]), ("pair:node001/gpu0<->node002/gpu0", ["node001/gpu0"], [90.0]),
            ("rail:sn0:gpu0", ["node002/gpu0", "node001/gpu0"], [6.0, 1.5]), ("host:node002", ["node002/gpu1", "node002/gpu0"], [2.5, 7.0])]
    for group, cards, skews in rows:
        store.batch("rank", {"group": group, "collective": "all_reduce", "size_bytes": 8, "repeat": 0,
                             "card": cards, "skew_us": skews, "op_us": 2.0, "wrong": 0})
        store.flush()
    store.batch("collective", {"group": ["host:node001", "rail:sn0:gpu0"], "collective": "all_reduce", "size_bytes": 8,
                               "status": "ok", "busbw_GBps": 1.0, "time_us": 2.0})
    store.flush()
    monkeypatch.setattr(parts, "PIECE_ROWS", 2)
    topo = Topology(load_inventory(str(DEMO)))
    seen = _reads(monkeypatch)
    view = store.frames("stress")
    got = rank_skew(view, DetectContext(topo=topo, design={}))
    assert len([c for c in seen if c is not None and "group" in c]) == len(rows) and view._read == {}, seen
    whole = view.kind("rank", RANK_SKEW).astype({"group": str, "card": str})
    view.forget("rank")
    coll = ~whole["group"].str.startswith("pair:")
    late, spread = lateness(whole["group"][coll], whole["card"][coll], whole["skew_us"][coll])
    assert got["entity"].tolist() == ["node001/gpu0", "node001/gpu1", "node002/gpu0", "node002/gpu1"] == late.index.tolist()
    assert got["value"].tolist() == late.tolist() and got["spread"].tolist() == spread.tolist()
    seen.clear()
    coverage = stress_coverage(view, topo)
    gaps = {f.entity for f in coverage}
    assert {"node001/gpu2", "node002/gpu1"} <= gaps and not {"node001/gpu0", "node001/gpu1", "node002/gpu0"} & gaps
    assert not [c for c in seen if c is not None and "skew_us" in c] and view._read.keys() <= {"collective", "not_run"}
    assert rank_rows(view) is rank_rows(view)
    card = summaries._ranks(view)
    assert [(s.entity, s.value, s.n) for s in card] == [("node001/gpu0", 1.25, 4), ("node001/gpu1", 3.0, 1),
                                                        ("node002/gpu0", 6.0, 3), ("node002/gpu1", 2.5, 1)]
