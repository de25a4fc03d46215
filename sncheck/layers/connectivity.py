"""Layer 1: host facts, then every card pair at its design bandwidth and latency."""

from __future__ import annotations

from ..plan import connectivity_plan, scope_connectivity
from .base import LayerContext

NAME = "connectivity"


def run(ctx: LayerContext) -> dict:
    opts = {**ctx.backend.plan_defaults(NAME), **ctx.options}
    plan = connectivity_plan(ctx.topo, **opts)
    if ctx.targets:
        plan = scope_connectivity(plan, ctx.targets)
    ctx.progress(f"connectivity: host facts on {len(plan.hosts)} hosts")
    ctx.backend.host_facts(plan.hosts, ctx.emit)
    ctx.progress(f"connectivity: {plan.pair_count} pairs in {len(plan.rounds)} rounds")
    ctx.backend.p2p(plan, ctx.emit)
    return {**plan.summary(), "hosts": len(plan.hosts), "bw_bytes": plan.bw_bytes}
