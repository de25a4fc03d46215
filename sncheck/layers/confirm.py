"""Confirmation: a targeted retest of each quarantined entity, within the same run.

DESIGN.md's policy quarantines at the first anomaly. Here each suspect is retested
with known-good peers (like cluster-health-scanner's second pass) and repeated:

* a card, link or host: pairwise tests of its cards together with healthy peers from
  the same supernode (peer-to-peer pairs are the controls), ``repeats`` times, judged by
  the same connectivity rules;
* a card named by the golden layer: the card trains alone again;
* an unreachable host: its facts are read again.

The retest writes rows with ``layer: "confirm"``; a suspect is confirmed when the same
rules name it again.
"""

from __future__ import annotations

import pandas as pd

from ..health.findings import Finding, merge_findings
from ..health.metrics import DetectContext, golden_loss
from ..health.ops import golden_verdicts
from ..health.rules import evaluate
from ..plan import ConnectivityPlan, GoldenPlan, Round, solo_groups
from ..topology import Topology, host_of, round_robin, split_link
from .base import LayerContext

NAME = "confirm"
PEERS = 5


def _cards_of(f: Finding, topo: Topology) -> list[str]:
    if f.entity_kind == "card":
        return [f.entity]
    if f.entity_kind == "link":
        return list(split_link(f.entity))
    if f.entity_kind == "host":
        return topo.cards_of_host(f.entity)
    return topo.cards_of_supernode(f.entity)


def _peers(suspects: list[str], topo: Topology, avoid: set[str], n: int = PEERS) -> list[str]:
    """Known-good peers: same host first (for intra-host faults), then the same supernode."""
    sn = topo.by_id[suspects[0]].supernode
    hosts = {host_of(c) for c in suspects}
    same_host = [c for h in sorted(hosts) for c in topo.cards_of_host(h) if c not in suspects and c not in avoid]
    same_sn = [c for c in topo.cards_of_supernode(sn) if host_of(c) not in hosts and host_of(c) not in avoid
               and c not in avoid]
    # Two host mates (they share the suspect's intra-host links), the rest from other hosts.
    peers = same_host[:2] + same_sn[: n - min(2, len(same_host))]
    return peers + same_host[2: 2 + n - len(peers)]


def _emit_as(ctx: LayerContext, tag: str):
    def emit(row: dict) -> None:
        ctx.emit({**row, "layer": NAME, "confirms": tag})
    return emit


def confirm(ctx: LayerContext, findings: list[Finding], repeats: int = 2) -> dict[str, bool]:
    """Retest each suspect; return entity -> confirmed."""
    suspects = [f for f in findings if f.entity_kind in ("card", "link", "host", "supernode")]
    bad_cards = {c for f in suspects for c in _cards_of(f, ctx.topo)}
    bad_hosts = {f.entity for f in suspects if f.entity_kind == "host"}
    outcome: dict[str, bool] = {}
    for f in suspects:
        tag = f.entity
        ctx.progress(f"confirm: retesting {f.entity_kind} {f.entity}")
        emit = _emit_as(ctx, tag)
        if f.rule == "host-unreachable" or (f.entity_kind == "host" and f.rule.startswith("not-run")):
            ctx.backend.host_facts((f.entity,), emit)
        elif f.layer == "golden" and f.entity_kind == "card":
            ctx.backend.golden(GoldenPlan(groups=solo_groups([f.entity]), steps=_golden_steps(ctx)), emit)
        else:
            cards = _cards_of(f, ctx.topo)
            peers = _peers(cards, ctx.topo, bad_cards | bad_hosts)
            rounds = [Round(i, "confirm", tuple(r)) for _ in range(repeats)
                      for i, r in enumerate(round_robin(cards + peers))]
            ctx.backend.p2p(ConnectivityPlan(rounds=tuple(rounds), hosts=(), **_p2p_opts(ctx)), emit)
        outcome[f.entity] = _named_again(ctx, f, tag)
    return outcome


def _golden_steps(ctx: LayerContext) -> int:
    return len(ctx.reference["loss"]) if ctx.reference else 30


def _p2p_opts(ctx: LayerContext) -> dict:
    return dict(ctx.backend.plan_defaults("connectivity"))


def _named_again(ctx: LayerContext, f: Finding, tag: str) -> bool:
    rows = pd.DataFrame([r for r in ctx.rows if r.get("layer") == NAME and r.get("confirms") == tag])
    if rows.empty:
        return False
    dctx = DetectContext(ctx.topo, ctx.design, ctx.reference, ctx.baseline, history=ctx.history)
    if f.layer == "golden" and f.entity_kind == "card":
        verdicts = golden_verdicts(golden_loss(rows.assign(layer="golden"), dctx), ctx.reference or {"loss": [1.0]})
        return bool((~verdicts["ok"]).any()) if ctx.reference else False
    rules = [r for r in ctx.rules.rules if r.layer in ("connectivity", "any")]
    found = merge_findings(evaluate(rules, rows, dctx))
    names = {g.entity for g in found}
    if f.entity in names:
        return True
    # A link retest may show that an end is the culprit after all (and the reverse).
    return any(c in names for c in _cards_of(f, ctx.topo)) if f.entity_kind == "link" else False
