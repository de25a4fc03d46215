"""What the stress layer's first narrowing left unexplained, narrowed again.

The narrowing's suspects are where the failing groups cross (:func:`sncheck.health.suspects.suspect_cards`):
a card slow in its host group and its rail group is their crossing, and the rail group's other cards are
left out. That grid reads one fault. A second on the same rail, or on any rail a slow host crosses, slows
or fails a group the crossing card does not explain, and its other cards were never measured: a NIC at 0.4
beside a card at 0.7 on its rail, a dead NIC cable beside a dead NVLink pair of another host (the grid's
crossing was a healthy card of that host), a 0.3 link above 16 MiB beside a throttled card whose domain
group alone showed it (reviews21 #3, #8; reviews20 #9 addendum 4: each fault but one never said).

So once the first narrowing is measured, its pairs are judged by the layer's pairwise rules alone (the
explanation search over the narrowing's rows: ``health.culprits``), and each failing group holding cards
the suspects left out is read against what they named, as an earlier layer's culprits are read
(``groups.explainer``, ``groups.beyond_culprits``): a group no named culprit sits on and none of whose
suspects a named culprit is at (those were measured healthy: the grid's crossing of two faults' groups),
or one slower than their measured factors explain, is left, and its own cards are narrowed, each group alone with its host
mates, at the sizes it was slow at. A group the named culprits explain costs nothing more: one slow card
narrows as it did.
"""

from __future__ import annotations

from sncheck.health.culprits import DERIVED
from sncheck.health.groups import beyond_culprits, explainer, group_busbw, launch_spread
from sncheck.health.metrics import cards_held
from sncheck.health.rules import evaluate
from sncheck.health.within import measured_factors, out_cap
from sncheck.layers.base import LayerContext
from sncheck.model import split_link


def left_groups(ctx: LayerContext, layer: str, groups: dict[str, tuple[str, ...]], failing: dict[str, int],
                suspects: set[str], rule) -> dict[str, int]:
    """Of the ``failing`` groups (group -> the smallest size it was slow at; 0 for one that did not run)
    holding cards outside ``suspects``, those the first narrowing's culprits do not explain, each with
    the size to narrow it from."""
    wide = {g: s for g, s in failing.items() if g in groups and set(groups[g]) - suspects}
    if not wide:
        return {}
    pair_rules = [r for r in (ctx.rules.judging(layer) if ctx.rules is not None else []) if r.metric in DERIVED]
    dctx = ctx.detect_context()
    rows = ctx.frames(layer)
    named = [f for f in evaluate(pair_rules, rows, dctx) if f.names_culprit]
    known = ctx.known | {(f.entity, f.entity_kind) for f in named}
    factors = {**ctx.factors, **measured_factors(named)}
    # a group the narrowing implicated a suspect of is that suspect's (a jittery card's spikes named a link at it,
    # not the card: its rail group narrowed again around it named 20 links, 3 of them confirmed by a spike)
    touched = {c for f in named for c in _at(f.entity, f.entity_kind, ctx)} & suspects
    left = {g: s for g, s in wide.items()
            if explainer(list(groups[g]), known, ctx.topo) is None and not set(groups[g]) & touched}
    told = {g: list(groups[g]) for g in wide if g not in left and failing[g] > 0}
    if told and rule is not None:
        beyond = beyond_culprits(group_busbw(rows, dctx), told, known, factors, ctx.topo, rule,
                                 launch_spread(rows, told), out_cap(dctx))
        left |= {g: int(b["from_bytes"]) for g, b in beyond.items()}
    return left


def _at(entity: str, kind: str, ctx: LayerContext) -> list[str]:
    """The cards a named culprit is at: its own (a card, a NIC's, a host's), a link's two ends."""
    return list(split_link(entity)) if kind == "link" and "<->" in entity else cards_held(entity, kind, ctx.topo)
