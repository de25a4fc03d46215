"""Layer 1: host facts, then every card pair at its design bandwidth and latency."""

from __future__ import annotations

import pandas as pd

from ..health.detect import detect_host_facts, detect_not_run, detect_p2p
from ..health.findings import Finding
from ..plan import connectivity_plan
from .base import LayerContext

NAME = "connectivity"


def run(ctx: LayerContext) -> dict:
    opts = {**ctx.backend.plan_defaults(NAME), **ctx.options}
    plan = connectivity_plan(ctx.topo, **opts)
    ctx.progress(f"connectivity: host facts on {len(plan.hosts)} hosts")
    ctx.backend.host_facts(plan.hosts, ctx.emit)
    ctx.progress(f"connectivity: {plan.pair_count} pairs in {len(plan.rounds)} rounds")
    ctx.backend.p2p(plan, ctx.emit)
    return {"pairs": plan.pair_count, "rounds": len(plan.rounds), "hosts": len(plan.hosts),
            "bw_bytes": plan.bw_bytes}


def detect(rows: pd.DataFrame, ctx: LayerContext) -> list[Finding]:
    mine = rows[rows["layer"] == NAME] if not rows.empty else rows
    return (detect_host_facts(mine) + detect_not_run(mine, ctx.topo)
            + detect_p2p(mine, ctx.topo, ctx.design, ctx.thresholds))
