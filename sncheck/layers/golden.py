"""Layer 3: a small model trains; its loss curve must stay in the golden band.

Stage 1 trains one data-parallel replica per host. A replica out of band is narrowed in
stage 2 by training each of its cards alone, which names the card. Last, the ledger
forecasts each replica's gradient all-reduce on the run's measured tiers and sets it beside
what the replica measured (:func:`forecast_share`).
"""

from __future__ import annotations

import math
from pathlib import Path

from sncheck.errors import ConfigError
from sncheck.config.inventory import MAX_CARDS_PER_HOST, tier_design
from sncheck.ledger.golden import MARGIN, forecast
from sncheck.ledger.tiers import view_figures
from sncheck.model import About, EntityKind, Finding, Severity
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
    config = data.get("config")
    ranks = config.get("ranks") if isinstance(config, dict) else None
    # the replica size it is the curve of: said as a count, or not said (every size); 'two' was read as
    # not said and -1 made every replica 'not judged' (hostile round 26, H26-02)
    if ranks is not None and (not isinstance(ranks, int) or isinstance(ranks, bool)):
        raise ConfigError(f"golden curve {ref!r}: config.ranks is {ranks!r}, not a count of ranks per replica",
                          str(path))
    if ranks is not None and not 1 <= ranks <= MAX_CARDS_PER_HOST:  # a replica is a host's cards
        raise ConfigError(f"golden curve {ref!r} is for replicas of {ranks} ranks (config.ranks): a replica is "
                          f"a host's cards, 1 to {MAX_CARDS_PER_HOST}", str(path))
    return data


def check_steps(curve: dict | None, steps: int | None) -> None:
    """Refuse (exit 2, before anything runs) a golden curve, or one of a list, that holds fewer
    steps than the playbook trains: the steps past its end were compared with nothing, and a loss
    that diverged there passed (hostile round 26, H26-01)."""
    if not curve or not steps:
        return
    for c in (curve.get("sizes") or {0: curve}).values():
        if len(c["loss"]) < steps:
            raise ConfigError(f"golden curve {c.get('name')!r} holds {len(c['loss'])} steps; the playbook trains "
                              f"{steps}: steps {len(c['loss']) + 1}-{steps} would be judged against nothing (give "
                              f"steps: {len(c['loss'])}, or a curve of {steps} steps)", c["_path"])


def reference_set(refs: list[str], sizes: set[int]) -> dict:
    """Golden curves named as a list, one per replica size (each says its ``config.ranks``), as
    one reference: the curve of the size with the most ranks this cluster has a curve for (its
    steps and band head the layer's summary and report), with ``sizes``: ranks -> curve, the
    curves of the sizes this cluster's replicas have. A replica is judged by its size's curve
    (``health.metrics.reference_of``); a size with none is "not judged" on its hosts. A list
    none of whose sizes this cluster has is kept whole, and the runner ignores it saying so."""
    by_ranks: dict[int, dict] = {}
    for ref in refs:
        curve = load_reference(ref)
        ranks = (curve.get("config") or {}).get("ranks")
        if ranks is None:  # (a count it is, in bounds: load_reference)
            raise ConfigError(f"golden curve {ref!r} does not say its ranks per replica (config.ranks): a list "
                              "of golden references is one per replica size", curve["_path"])
        if ranks in by_ranks:
            raise ConfigError(f"golden curves {by_ranks[ranks].get('name')!r} and {curve.get('name')!r} are both "
                              f"for replicas of {ranks} ranks: a list of golden references is one per replica size",
                              curve["_path"])
        by_ranks[ranks] = curve
    fit = {r: c for r, c in by_ranks.items() if r in sizes} or by_ranks
    return {**fit[max(fit)], "sizes": fit}


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
        if reference.get("sizes") is not None:
            summary["references"] = {str(r): c.get("name") for r, c in sorted(reference["sizes"].items())}
            summary.update(_per_size(reference["sizes"], plan.groups))
        curves = golden_loss(ctx.frames(NAME), DetectContext(ctx.topo, ctx.design))
        verdicts = golden_verdicts(curves, reference, ctx.topo)
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


def _per_size(curves: dict[int, dict], groups) -> dict:
    """What the report needs to draw each replica against its own size's band, where the
    replicas differ in size: ``reference_curves`` (ranks -> name, loss, band of each size's
    curve) and ``replica_ranks`` (ranks -> the groups of that size; a size with no curve is
    drawn without a band). Replicas of one size add nothing: ``reference`` is theirs."""
    by_ranks: dict[str, list[str]] = {}
    for g in groups:
        by_ranks.setdefault(str(len(g.members)), []).append(g.id)
    if len(by_ranks) < 2:
        return {}
    return {"reference_curves": {str(r): {"name": c.get("name"), "loss": c["loss"], "band": c.get("band", {})}
                                 for r, c in sorted(curves.items())},
            "replica_ranks": dict(sorted(by_ranks.items(), key=lambda kv: int(kv[0])))}


def forecast_share(ctx: LayerContext, golden, members: dict[str, tuple[str, ...]]) -> dict:
    """The ledger's forecast of each replica's communication share on this run's measured
    tiers (:mod:`sncheck.ledger.golden`), summed up over the replicas by the typical one
    (the median ratio). Off by more than the margin, it is an info finding about the
    ledger (``ctx.own_findings``); a run that measured none of the replicas' tiers says so
    instead."""
    frames = ctx.frames()
    hosts = {h: ctx.topo.supernode_of_host(h) for h in ctx.topo.hosts}
    figs = view_figures(frames, hosts, "measured (this run)")   # (the store reads only the columns they read)
    groups = {gid: (len(m), ctx.topo.group_tier(m)) for gid, m in members.items()}
    tiers = {tier for n, tier in groups.values() if n > 1}
    missing = sorted(t for t in tiers if tier_design(figs.tiers, t) is None)
    if missing:  # nothing to compare with: said in the summary, not a finding about the hardware
        return {"not_forecast": f"this run measured no {', '.join(missing)} traffic (no connectivity or stress "
                                "rows there): the ledger's forecast needs the run's own figures"}
    out = forecast(golden, figs, (ctx.backend.golden_gradients(),), groups)
    if not out:
        return {}
    # The ledger forecasts the typical replica (the golden layer's share is the replicas'
    # median too); one replica far off with the rest on the forecast is that replica's
    # hardware, which the layer's rules judge, not the ledger.
    by_ratio = sorted(out, key=lambda f: f.ratio)
    typical = by_ratio[(len(by_ratio) - 1) // 2]
    worst = max(out, key=lambda f: abs(math.log(f.ratio)) if 0 < f.ratio < math.inf else math.inf)
    if not typical.within:
        ctx.own_findings.append(Finding(
            ctx.topo.supernode_names[0], EntityKind.SUPERNODE, NAME, "golden-share-forecast-off", Severity.INFO,
            f"the ledger's forecast of the golden model's gradient all-reduce is off by {typical.ratio:.2f}x, beyond "
            f"its {MARGIN:g}x margin (the median of {len(out)} replicas, {typical.group}): forecast "
            f"{typical.forecast_comm_s * 1e3:.2f} ms a step (share {typical.forecast_share:.1%}), measured "
            f"{typical.measured_comm_s * 1e3:.2f} ms ({typical.measured_share:.1%}); the {typical.tier} figures "
            f"({typical.source}) do not hold for this traffic",
            {"measured": typical.measured_comm_s, "expected": typical.forecast_comm_s, "unit": "s",
             **typical.to_dict()}, about=About.CHECK))
    return {"replicas": len(out), "within": typical.within, "margin": MARGIN,
            "replicas_within": sum(f.within for f in out), "forecast_share": typical.forecast_share,
            "measured_share": typical.measured_share, "share_with_wait": typical.share_with_wait,
            "ratio": {"median": typical.ratio, "min": by_ratio[0].ratio, "max": by_ratio[-1].ratio},
            "typical": typical.to_dict(), "worst": worst.to_dict()}

