"""The reports read a run's p2p rows a part at a time (issue 31: at 131,072 cards the rows
read whole for report.html and sncheck.prom were 2.97 GB, held through both):
``PartFrames.pieces`` gives ``kind()``'s values part by part, and the connectivity view and
the card series (and the cards' launch skew, over the rank rows) read so are what they are
over the same rows held whole, none asking the run store's view for a frame of every row
of its kind (nor leaving one kept)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

import sncheck.report.connectivity as conn
from sncheck.report.prometheus import card_p2p, render_prometheus
from sncheck.rows import p2p_row
from sncheck.store.frames import RowFrames
from sncheck.store import parts
from sncheck.store.parts import PartFrames
from sncheck.store.results import from_json
from sncheck.store.rundir import RunStore
from sncheck.topology import link_id

HOSTS = {"sn0": ["h1", "h2"], "sn1": ["h3", "h4"]}


def _record() -> object:
    return from_json({"schema": "sncheck.run/1", "run_id": "r", "playbook": "p", "backend": "mock",
                      "inventory": "i", "verdict": "pass", "gate": "critical", "seed": 0, "design": {},
                      "topology": {"supernodes": [{"name": k, "hosts": v} for k, v in HOSTS.items()]},
                      "layers": [], "findings": [], "isolation": []})


def _rows(seed: int) -> pd.DataFrame:
    """Pairs in three rounds (some repeated), every tier, a missing reverse direction,
    failed probes, rows without a tier, and a card (h4/gpu9) that only scale-out rows name."""
    rnd = random.Random(seed)
    cards = [f"h{h}/gpu{g}" for h in range(1, 5) for g in range(3)]
    rows = []
    for round_ in range(3):
        for _ in range(40):
            a, b = rnd.sample(cards, 2)
            same_sn = (a[1] in "12") == (b[1] in "12")
            tier = ("intra_host" if a.split("/")[0] == b.split("/")[0] else "scale_up" if same_sn else "scale_out")
            row = p2p_row(round_, a, b, link_id(a, b), tier, 1 << 20, bw=rnd.uniform(50, 400),
                          lat=rnd.uniform(1, 20))
            row["bw_rev_GBps"] = rnd.choice([None, rnd.uniform(50, 400)])
            row["lat_p99_us"] = rnd.uniform(2, 40)
            if rnd.random() < 0.1:
                row.update(status="timeout", bw_GBps=None, bw_rev_GBps=None, lat_us=None)
            if tier != "scale_out" and rnd.random() < 0.05:
                row["tier"] = None   # a backend that left it out: intra_host or scale_up by host
            rows.append(row)
        rows.append(p2p_row(round_, "h1/gpu0", "h4/gpu9", link_id("h1/gpu0", "h4/gpu9"), "scale_out", 1 << 20,
                            bw=rnd.uniform(10, 50), lat=5.0) | {"lat_p99_us": 9.0})
    return pd.DataFrame(rows)


def _ranks(seed: int) -> list[dict]:
    """Rank rows of collectives and of the pairwise narrowing pass (left out of the skew),
    some without a skew."""
    rnd = random.Random(seed)
    cards = [f"h{h}/gpu{g}" for h in range(1, 5) for g in range(3)]
    return [{"kind": "rank", "card": c, "group": rnd.choice(["host:h1", "rail:0", f"pair:{c}<->h1/gpu0"]),
             "skew_us": rnd.choice([None, rnd.uniform(0, 50)])} for _ in range(4) for c in cards]


def _store(tmp_path, rows: pd.DataFrame, per_part: int, seed: int = 1) -> RunStore:
    """A run store holding ``rows`` in parts of ``per_part`` rows (the first without a
    reverse bandwidth column, as an older part may be), and rank rows in parts too."""
    store = RunStore(tmp_path / "run", run_id="r-1")
    for lo in range(0, len(rows), per_part):
        part = rows.iloc[lo:lo + per_part]
        if lo == 0:
            part = part.drop(columns=["bw_rev_GBps"])
        store.emit_rows(part.astype(object).where(part.notna(), None).to_dict("records"))
        store.flush()
    ranks = _ranks(seed)
    for lo in range(0, len(ranks), per_part):
        store.emit_rows(ranks[lo:lo + per_part])
    return store


def _plain(df: pd.DataFrame) -> list[list]:
    """A frame's values row by row, missing as None, ids as their names."""
    out = df.astype(object)
    return out.where(out.notna(), None).values.tolist()


@pytest.mark.parametrize("piece_rows", [1, 60])
def test_pieces_are_the_kind_a_part_at_a_time(tmp_path, monkeypatch, piece_rows) -> None:
    rows = _rows(1)
    store = _store(tmp_path, rows, 25)
    monkeypatch.setattr(parts, "PIECE_ROWS", piece_rows)   # a part a piece, or parts up to 60 rows and more
    cols = ["src", "dst", "tier", "status", "bw_GBps", "bw_rev_GBps", "lat_p99_us"]
    view = store.frames()
    got = list(view.pieces("p2p", cols))
    sizes = [min(25, len(rows) - lo) for lo in range(0, len(rows), 25)]
    assert [len(p) for p in got] == (sizes if piece_rows == 1 else [75] * (len(rows) // 75) + [len(rows) % 75])
    assert [r for p in got for r in _plain(p)] == _plain(store.frames().kind("p2p", cols))
    picked = store.frames().where(round=1)   # a selection: each part's rows of it
    assert [r for p in picked.pieces("p2p", cols) for r in _plain(p)] == _plain(picked.kind("p2p", cols))
    view.kind("p2p", cols)   # a frame the view keeps with those columns is the one piece
    assert len(list(view.pieces("p2p", cols[:3]))) == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reports_read_the_pairs_a_part_at_a_time(tmp_path, monkeypatch, seed) -> None:
    monkeypatch.setattr(parts, "PIECE_ROWS", 10 * seed)   # (pieces of 2, 3 and 5 parts of 7 rows)
    record = _record()
    design = {"intra_host": {"bandwidth_GBps": 300.0, "latency_us": 1.0}} if seed == 1 else {}
    store = _store(tmp_path, _rows(seed), 7, seed)
    held = RowFrames({k: store.frames().kind(k) for k in ("p2p", "rank")})   # the same rows, one frame a kind
    whole_view = conn.connectivity_view(record, held, design)
    whole_cards = card_p2p(held, {h: sn for sn, hs in HOSTS.items() for h in hs})
    whole_text = render_prometheus(record, held)
    assert whole_view["heatmaps"] and whole_view["worst_pairs"] and len(whole_cards) > 20
    assert "sncheck_card_launch_skew_seconds{" in whole_text
    # the card only scale-out rows name is one of its supernode's measured cards
    assert whole_view["fleet"]["supernodes"][1]["cards"] == 7

    def no_frame(self, kind, columns=None):
        if kind in ("p2p", "rank"):
            raise AssertionError(f"a frame of every {kind} row asked for")
        return real_kind(self, kind, columns)

    real_kind = PartFrames.kind
    monkeypatch.setattr(PartFrames, "kind", no_frame)
    monkeypatch.setattr(PartFrames, "read", no_frame)
    view = store.frames()
    assert conn.connectivity_view(record, view, design) == whole_view
    pd.testing.assert_frame_equal(card_p2p(view, {h: sn for sn, hs in HOSTS.items() for h in hs}), whole_cards)
    assert render_prometheus(record, view) == whole_text
    store.close()


def test_view_keeps_no_scale_out_row(tmp_path, monkeypatch) -> None:
    """The view keeps the rows a map can draw: the scale-out ones are counted for their
    cards, never kept (33 M of a 131,072-card fleet's 50.2 M p2p rows)."""
    rows = _rows(1)
    kept = []
    real = conn._Domains.__init__

    def spy(self, record, drawn):
        kept.append(len(drawn.src))
        real(self, record, drawn)

    monkeypatch.setattr(conn._Domains, "__init__", spy)
    conn.connectivity_view(_record(), RowFrames({"p2p": rows}), {})
    assert kept == [int((rows["tier"] != "scale_out").sum())] and kept[0] < len(rows)
    assert np.isin(["scale_out"], rows["tier"]).all()


def test_a_missing_tier_is_one_tier_whichever_type_each_piece_reads_it_as(monkeypatch):
    """A piece whose tier column is categorical names a missing tier "nan", a plain one named it
    "": the same pairs over two such pieces made two series of identical labels (an invalid
    exposition; reviewr). One tier, one series a card."""
    import sncheck.report.p2pstats as p2pstats   # (the reports' reader of the p2p pieces)

    frame = pd.DataFrame({"src": ["h1/gpu0", "h1/gpu1"], "dst": ["h1/gpu1", "h1/gpu2"], "tier": [None, None],
                          "status": "ok", "bw_GBps": [100.0, 90.0], "bw_rev_GBps": [100.0, 90.0],
                          "lat_p99_us": [5.0, 6.0]})
    categorical = frame.assign(tier=frame["tier"].astype("category"))
    monkeypatch.setattr(p2pstats, "tables", lambda rows, kind, columns: iter([categorical, frame.copy()]))
    out = card_p2p(pd.DataFrame(), {})
    assert not out.duplicated(["card", "tier"]).any(), out
    assert sorted(out["card"]) == ["h1/gpu0", "h1/gpu1", "h1/gpu2"] and set(out["tier"]) == {""}
