"""Layer 1: host facts, then every card pair at its design bandwidth and latency."""

from __future__ import annotations

from sncheck.probeplan import ConnectivityPlan, connectivity_plan, scope_connectivity
from sncheck.vendors.registry import pair_tools
from sncheck.rows import not_run_row
from sncheck.layers.base import LayerContext

NAME = "connectivity"


def build_plan(ctx: LayerContext) -> ConnectivityPlan:
    opts = {**ctx.backend.plan_defaults(NAME), **ctx.options}
    plan = connectivity_plan(ctx.topo, **opts)
    return scope_connectivity(plan, ctx.targets) if ctx.targets else plan


def run(ctx: LayerContext) -> dict:
    plan = ctx.take_plan()
    plan = build_plan(ctx) if plan is None else plan
    ctx.progress(f"connectivity: host facts on {len(plan.hosts)} hosts")
    ctx.backend.host_facts(plan.hosts, ctx.emit)
    ctx.progress(f"connectivity: {plan.pair_count} pairs in {len(plan.rounds)} rounds")
    ctx.backend.p2p(plan, ctx.emit)
    summary = {**plan.summary(), "hosts": len(plan.hosts), "bw_bytes": plan.bw_bytes}
    if plan.tools:
        ctx.progress(f"connectivity: {', '.join(plan.tools)}")
        ran = ctx.backend.scale_out(plan, ctx.emit)
        why = f"the {ctx.backend.name} backend has no NICs or GPUs to run them on"
        summary["tools"] = list(plan.tools) if ran else f"not run: {why}"
        if ran and set(plan.tools) & set(pair_tools()):
            # perftest's rail pairs: how many ran of the plan's, each NIC's peers (tools_coverage)
            sched = plan.perftest
            summary["perftest"] = sched.summary()
            summary["perftest_plan"] = sched.describe()  # the report shows strings, not objects
        if not ran:  # asked for and not run: a finding about the check, never a pass
            for sn in ctx.topo.supernode_names:
                ctx.emit(not_run_row(NAME, sn, "supernode", "missing_tool",
                                     f"{sn}: {', '.join(plan.tools)} not run: {why}"))
    ctx.backend.fabric_counters(plan.hosts, ctx.emit)  # after the traffic: the error counters' growth
    return summary
