"""Calibration: design values measured on this machine, from a quick p2p pass over every pair."""

from __future__ import annotations

from sncheck.worker.context import Ctx
from sncheck.worker.p2p import percentile, run_pairs


# 90th percentile bandwidth, 10th percentile latency: one slow card (a few of the
# pairs) must not drag the design values down, since faults act during calibration.
CALIBRATION_BW_PCT = 90.0
CALIBRATION_LAT_PCT = 10.0


def run_calibrate(ctx: Ctx, plan: dict) -> None:
    bws: list[float] = []
    lats: list[float] = []

    def on_pair(_ridx: int, _a: str, _b: str, r: dict) -> None:
        bws.extend((r["bw"], r["bw_rev"]))
        if r["lat"] is not None:
            lats.append(r["lat"])

    run_pairs(ctx, plan, on_pair, lambda *_: None)
    if ctx.rank == 0 and bws and lats:
        ctx.write({"kind": "calibration", "layer": "connectivity", "tier": "intra_host",
                   "bandwidth_GBps": percentile(bws, CALIBRATION_BW_PCT),
                   "latency_us": percentile(lats, CALIBRATION_LAT_PCT)})
