"""Layer 3: a small model trains; its loss curve must stay in the golden band.

Stage 1 trains one data-parallel replica per host. A replica out of band is narrowed in
stage 2 by training each of its cards alone, which names the card.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from sncheck.errors import ConfigError
from sncheck.config.jsonio import GoldenCurve, read_json, validate
from sncheck.config.shipped import resolve
from sncheck.health.metrics import DetectContext, golden_loss
from sncheck.health.ops import golden_verdicts
from sncheck.probeplan import GoldenPlan, golden_groups, scope_groups, solo_groups
from sncheck.layers.base import LayerContext

NAME = "golden"
SCHEMA = "sncheck.golden/1"


def find_reference(ref: str) -> Path | None:
    """A golden curve named by path, or a shipped name: see :func:`sncheck.config.shipped.resolve`."""
    return resolve(ref, "fixtures", "golden", (".json",))


def load_reference(ref: str) -> dict:
    path = find_reference(ref)
    if path is None:
        raise ConfigError(f"no golden curve named {ref!r}; record one with "
                          f"'sncheck golden record --out fixtures/golden/{Path(ref).stem}.json'", ref)
    data = read_json(path, "golden curve")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ConfigError(f"not a golden curve (expected a JSON object with schema {SCHEMA!r})", str(path))
    validate(GoldenCurve, data, path, "golden curve")  # types, finite positive losses, band
    data["_path"] = str(path)
    return data


def build_plan(ctx: LayerContext) -> GoldenPlan:
    opts = {**ctx.backend.plan_defaults(NAME), **ctx.options}
    steps = opts.get("steps") or (len(ctx.reference["loss"]) if ctx.reference else 60)
    groups = golden_groups(ctx.topo)
    if ctx.targets:
        groups = scope_groups(groups, ctx.targets)
    return GoldenPlan(groups=groups, steps=steps)


def run(ctx: LayerContext) -> dict:
    """Run the golden layer; ``ctx.reference`` (resolved by the caller) enables stage 2."""
    reference = ctx.reference
    plan = build_plan(ctx)
    steps = plan.steps
    ctx.progress(f"golden: {len(plan.groups)} replicas x {steps} steps")
    ctx.backend.golden(plan, ctx.emit)
    summary: dict = {"groups": len(plan.groups), "steps": steps}
    if reference:
        summary["reference"] = {"name": reference.get("name"), "loss": reference["loss"],
                                "band": reference.get("band", {}),
                                "step_time_s": reference.get("step_time_s")}
        curves = golden_loss(ctx.frames(NAME), DetectContext(ctx.topo, ctx.design))
        verdicts = golden_verdicts(curves, reference)
        failing = [v.group for v in verdicts.itertuples() if not v.ok and v.stage == "group"]
        members = {g.id: g.members for g in plan.groups}
        cards = [c for g in failing for c in members.get(g, ())]
        if cards:
            ctx.progress(f"golden: {len(failing)} replicas out of band; training {len(cards)} cards alone")
            ctx.backend.golden(GoldenPlan(groups=solo_groups(cards), steps=steps), ctx.emit)
            summary["solo_runs"] = len(cards)
        summary["out_of_band"] = failing
    g = ctx.frame("golden", NAME, stage="group")
    if not g.empty:
        summary["step_time_s"] = float(g["step_time_s"].median())
        summary["comm_share"] = float(g["comm_share"].median())
        summary["forecast"] = forecast_share(ctx, g, {grp.id: grp.members for grp in plan.groups})
    return summary


def forecast_share(ctx: LayerContext, golden, members: dict[str, tuple[str, ...]]) -> dict:
    """The ledger's forecast of each replica's communication share on this run's measured
    tiers (:mod:`sncheck.ledger.golden`), summed up over the replicas. Replicas off by more
    than the margin make one info finding about the ledger (``ctx.own_findings``), naming
    the worst; a run that measured none of the replicas' tiers says so instead."""
    from sncheck.config.inventory import tier_design
    from sncheck.health.findings import Finding
    from sncheck.ledger.golden import MARGIN, forecast
    from sncheck.ledger.tiers import frames_figures

    frames = ctx.frames()
    hosts = {h: ctx.topo.supernode_of_host(h) for h in ctx.topo.hosts}
    figs = frames_figures(frames.kind("p2p"), frames.kind("collective"), hosts, "measured (this run)")
    groups = {gid: (len(m), ctx.topo.group_tier(m)) for gid, m in members.items()}
    tiers = {tier for n, tier in groups.values() if n > 1}
    missing = sorted(t for t in tiers if tier_design(figs.tiers, t) is None)
    if missing:  # nothing to compare with: said in the summary, not a finding about the hardware
        return {"not_forecast": f"this run measured no {', '.join(missing)} traffic (no connectivity or stress "
                                "rows there): the ledger's forecast needs the run's own figures"}
    out = forecast(golden, figs, (ctx.backend.golden_gradients(),), groups)
    if not out:
        return {}
    off = [f for f in out if not f.within]
    worst = max(out, key=lambda f: abs(math.log(f.ratio)) if 0 < f.ratio < math.inf else math.inf)
    if off:
        host = worst.group.removeprefix("host:")
        where = ctx.topo.supernode_of_host(host) if host in ctx.topo.inventory.hosts else ctx.topo.supernode_names[0]
        ctx.own_findings.append(Finding(
            where, "supernode", NAME,
            "golden-share-forecast-off", "info",
            f"{len(off)} of {len(out)} golden replicas: the ledger's forecast of the gradient all-reduce is off by "
            f"more than {MARGIN:g}x; {worst.group}: forecast {worst.forecast_comm_s * 1e3:.2f} ms a step (share "
            f"{worst.forecast_share:.1%}), measured {worst.measured_comm_s * 1e3:.2f} ms ({worst.measured_share:.1%}): "
            f"the {worst.tier} figures ({worst.source}) do not hold for this traffic",
            {"measured": worst.measured_comm_s, "expected": worst.forecast_comm_s, "unit": "s", **worst.to_dict(),
             "replicas_off": [f.group for f in off][:20]}, about="check"))
    ratios = [f.ratio for f in out]
    return {"replicas": len(out), "within": len(out) - len(off), "margin": MARGIN,
            "forecast_share": statistics.median(f.forecast_share for f in out),
            "measured_share": statistics.median(f.measured_share for f in out),
            "share_with_wait": statistics.median(f.share_with_wait for f in out),
            "ratio": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
            "worst": worst.to_dict()}

