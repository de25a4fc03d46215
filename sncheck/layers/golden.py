"""Layer 3: a small model trains; its loss curve must stay in the golden band.

Stage 1 trains one data-parallel replica per host. A replica out of band is narrowed in
stage 2 by training each of its cards alone, which names the card.
"""

from __future__ import annotations

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
    return summary
