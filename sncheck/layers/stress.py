"""Layer 2: all-reduce and all-to-all over a size sweep on host, rail, domain and cross
groups; then a pairwise narrowing pass over the cards of failing groups."""

from __future__ import annotations

import time

from sncheck.model import host_of
from sncheck.health.suspects import suspect_cards
from sncheck.probeplan import Group, StressPlan, scope_groups, size_sweep, stress_groups
from sncheck.topology import round_robin
from sncheck.layers.base import LayerContext

NAME = "stress"
NARROW_SIZES = (8 << 10, 16 << 20)  # one latency-bound and one bandwidth-bound size


def build_plan(ctx: LayerContext) -> StressPlan:
    opts = {**ctx.backend.plan_defaults(NAME), **ctx.options}
    sizes = size_sweep(opts.pop("min_bytes", 8), opts.pop("max_bytes", 1 << 30), opts.pop("step_factor", 2))
    duration = opts.pop("duration", None)
    opts.pop("narrow_sizes", None)
    if "collectives" in opts:
        opts["collectives"] = tuple(opts["collectives"])
    groups = stress_groups(ctx.topo)
    if ctx.targets:
        groups = scope_groups(groups, ctx.targets)
    return StressPlan(groups=groups, sizes=sizes, duration_s=duration, **opts)


def narrowing_plan(ctx: LayerContext, plan: StressPlan, suspects: set[str]) -> StressPlan:
    """Pairs among the suspects and their host mates.

    Host mates give every suspect at least a few same-tier peers, so a card (bad with
    all its partners) is told apart from a link (bad with one).
    """
    cards = set(suspects)
    for c in suspects:
        cards |= set(ctx.topo.cards_of_host(host_of(c)))
    if len(cards) < 3:  # one- or two-card hosts: borrow peers from the same supernode
        sn = ctx.topo.by_id[next(iter(suspects))].supernode
        cards |= set(ctx.topo.cards_of_supernode(sn)[:4])
    order = [c.id for c in ctx.topo.cards if c.id in cards]
    groups = tuple(Group(f"pair:{a}<->{b}", "pair", (a, b)) for rnd in round_robin(order) for a, b in rnd)
    sizes = ctx.backend.plan_defaults(NAME).get("narrow_sizes", NARROW_SIZES)
    return StressPlan(groups=groups, collectives=plan.collectives, sizes=tuple(sizes),
                      warmup=plan.warmup, iters=plan.iters, repeats=1)


def run(ctx: LayerContext) -> dict:
    plan = build_plan(ctx)
    started = time.monotonic()
    sweeps = 0
    while True:
        ctx.progress(f"stress: {len(plan.groups)} groups x {len(plan.collectives)} collectives x {len(plan.sizes)} sizes")
        ctx.backend.collectives(plan, ctx.emit)
        sweeps += 1
        if plan.duration_s is None or time.monotonic() - started >= plan.duration_s:
            break
    groups = {g.id: g.members for g in plan.groups}
    suspects = suspect_cards(ctx.frames(NAME), groups, ctx.topo)
    summary = {"groups": len(plan.groups), "sizes": len(plan.sizes), "sweeps": sweeps,
               "min_bytes": min(plan.sizes), "max_bytes": max(plan.sizes),
               "collectives": list(plan.collectives), "suspects": sorted(suspects)}
    if suspects:
        narrow = narrowing_plan(ctx, plan, suspects)
        ctx.progress(f"stress: narrowing over {len(narrow.groups)} pairs of {len(suspects)} suspect cards")
        ctx.backend.collectives(narrow, ctx.emit)
        summary["narrowing_pairs"] = len(narrow.groups)
    return summary
