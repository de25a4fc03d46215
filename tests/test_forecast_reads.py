"""The golden forecast's tier figures from a run's view (issue 31): the pair rows read a
column at a time (the choosing columns and tiers once, then each number alone), never a
frame of every pair's six columns, and the same figures as from the whole frame."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from sncheck.ledger.tiers import frames_figures, view_figures
from sncheck.store.frames import RowFrames

INF = float("inf")


class Recording(RowFrames):
    def __init__(self, frames: dict[str, pd.DataFrame]) -> None:
        super().__init__(frames)
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def kind(self, kind: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        self.asked.append((kind, tuple(columns or ("*",))))
        return super().kind(kind, columns)


def _p2p() -> pd.DataFrame:
    rows = [("connectivity", None, "ok", "scale_up", bw, lat) for bw, lat in ((400, 2.0), (420, 3.0), (INF, 4.0))]
    rows += [("connectivity", None, "ok", "scale_out", 50.0, 15.0), ("connectivity", None, "ok", "scale_out", None, 16.0),
             ("connectivity", None, "timeout", "scale_up", 1.0, 1e6),            # did not run: left out
             ("confirm", "a/gpu0", "ok", "scale_up", 1.0, 1e6),                  # a retest's: left out
             ("connectivity", None, "ok", "no_such_tier", 1.0, 1.0),
             ("connectivity", None, "ok", "intra_host", 450.0, 3.0)]
    return pd.DataFrame([{"kind": "p2p", "layer": layer, "confirms": c, "status": st, "tier": t, "bw_GBps": bw,
                          "lat_us": lat, "src": "a/gpu0", "dst": "b/gpu0"} for layer, c, st, t, bw, lat in rows])


def _coll() -> pd.DataFrame:
    return pd.DataFrame([{"kind": "collective", "layer": "stress", "confirms": None, "status": "ok", "group": "host:a",
                          "group_kind": "host", "ranks": 4, "collective": "all_reduce", "size_bytes": 1 << 20,
                          "time_us": t, "wrong": 0} for t in (50.0, 70.0)])


def test_a_views_figures_are_the_frames_and_read_one_number_at_a_time() -> None:
    view = Recording({"p2p": _p2p(), "collective": _coll()})
    got = view_figures(view, {"a": "sn0", "b": "sn1"}, "rows")
    assert got.to_dict() == frames_figures(_p2p(), _coll(), {"a": "sn0", "b": "sn1"}, "rows").to_dict()
    assert got.get("scale_up").p2p_GBps == 410 and got.get("scale_out").p2p_GBps == 50
    reads = [cols for kind, cols in view.asked if kind == "p2p"]
    assert reads and all(len({"lat_us", "bw_GBps", "*"} & set(cols)) <= 1 for cols in reads)   # never two at once
    assert not any({"src", "dst"} & set(cols) for cols in reads)


def test_a_view_without_pair_rows_has_only_the_collectives_figures() -> None:
    got = view_figures(Recording({"collective": _coll()}), {}, "rows")
    assert set(got.tiers) == {"intra_host"} and got.get("intra_host").p2p_GBps is None
