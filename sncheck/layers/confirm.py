"""Confirmation: retest each quarantined entity with the measurement that found it, and
judge it with the rules that fired, within the same run.

DESIGN.md's policy quarantines at the first anomaly. Each suspect is then retested by
the kind of measurement its finding came from:

* a host-fact finding: that host's facts are read again, with the same commands;
* a peer-to-peer finding: pair tests of its cards with known-good peers (host mates
  first, then the same supernode), ``repeats`` times;
* a collective finding (wrong results, busbw below the bar, a straggler): the same
  collectives at the sizes of the narrowing pass, over pairs of the suspect's cards with
  known-good peers and a small group of them together; and once over a control group of
  the peers alone;
* a golden finding: the golden model trains again on the suspect's card (alone) or host.

The retest writes rows with ``layer: "confirm"`` and ``confirms: <entity>``. Its verdict
is three-valued (:class:`Retest`):

* confirmed: the rules that fired name anything within the suspect's scope again (its
  cards, a link touching them, its host): a link whose retest points at its host is
  still confirmed;
* not confirmed: the retest ran with known-good peers, measured the symptom's metric on
  the suspect, and the rules stay quiet;
* None (cannot say): no peers, nothing measured, the control group shows the symptom
  too, or the retest could not run. The suspect stays quarantined and the gate fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from sncheck.errors import HarnessError
from sncheck.health.findings import Finding, merge_findings
from sncheck.health.invariants import is_not_measured
from sncheck.health.metrics import METRICS, DetectContext, golden_loss
from sncheck.health.ops import golden_verdicts
from sncheck.health.rules import Rule, evaluate
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Group, Round, StressPlan, solo_groups
from sncheck.model import card_of
from sncheck.topology import Topology, host_of, round_robin, split_link
from sncheck.layers import stress
from sncheck.layers.base import LayerContext

NAME = "confirm"
PEERS = 5
FACTS, P2P, COLLECTIVES, GOLDEN = "host facts", "peer-to-peer pairs", "collectives", "golden model"
# Metrics read from host facts: their retest reads the host's facts again.
FACT_METRICS = ("host_fact_failures", "host_fact_warnings", "fabric_counters", "kernel_events")


@dataclass(frozen=True)
class Retest:
    confirmed: bool | None  # None: the retest cannot say (stays quarantined)
    how: str  # the measurement that was repeated
    note: str  # what it showed, for the finding's evidence

    def to_dict(self) -> dict:
        return {"confirmed": self.confirmed, "how": self.how, "note": self.note}


def cards_of(f: Finding | str, topo: Topology, kind: str | None = None) -> list[str]:
    entity, kind = (f.entity, f.entity_kind) if isinstance(f, Finding) else (f, kind)
    if kind == "card":
        return [entity]
    if kind == "link":
        return list(split_link(entity))
    if kind == "nic":
        return [card_of(entity)]
    if kind == "host":
        return topo.cards_of_host(entity)
    return topo.cards_of_supernode(entity)


def _peers(suspects: list[str], topo: Topology, avoid: set[str], n: int = PEERS) -> list[str]:
    """Known-good peers: same host first (for intra-host faults), then the same supernode."""
    sn = topo.by_id[suspects[0]].supernode
    hosts = {host_of(c) for c in suspects}
    same_host = [c for h in sorted(hosts) for c in topo.cards_of_host(h) if c not in suspects and c not in avoid]
    same_sn = [c for c in topo.cards_of_supernode(sn) if host_of(c) not in hosts and host_of(c) not in avoid
               and c not in avoid]
    # Two host mates (they share the suspect's intra-host links), the rest from other hosts.
    peers = same_host[:2] + same_sn[: n - min(2, len(same_host))]
    peers += same_host[2: 2 + n - len(peers)]
    if not peers:  # a whole domain under suspicion: peers across the scale-out network
        peers = [c.id for c in topo.cards if c.supernode != sn and c.id not in avoid
                 and host_of(c.id) not in avoid][:n]
    return peers


def _rail_peers(suspects: list[str], topo: Topology, avoid: set[str], n: int = PEERS) -> list[str]:
    """A NIC's known-good peers: the same rail's cards of other hosts, from other
    supernodes and its own by turns, so the peers' own pairs cross the scale-out network
    too (the suspect's pairs are judged against theirs)."""
    card = topo.by_id[suspects[0]]
    rail = [c for c in topo.cards if c.index == card.index and c.host != card.host
            and c.id not in avoid and c.host not in avoid]
    away = [c.id for c in rail if c.supernode != card.supernode]
    home = [c.id for c in rail if c.supernode == card.supernode]
    mixed = [c for pair in zip(away, home) for c in pair] + away[len(home):] + home[len(away):]
    return mixed[:n] if away else []


def fired_rules(ctx: LayerContext, f: Finding) -> list[Rule]:
    """The rules that named this entity: the finding's own and those folded into it."""
    if ctx.rules is None:
        return []
    by_name = {r.name: r for r in ctx.rules.rules}
    names = [f.rule] + [r["rule"] for r in f.evidence.get("related", []) if r.get("layer") == f.layer]
    out: list[Rule] = []
    for n in names:
        if n in by_name and by_name[n] not in out and by_name[n].op != "missing":
            out.append(by_name[n])
    return out


def measurement(f: Finding, rules: list[Rule]) -> str:
    """Which measurement found it: the metric of the rule that fired, else the layer."""
    metric = rules[0].metric if rules else None
    if metric in FACT_METRICS or (metric is None and "fact" in f.evidence):
        return FACTS
    layer = METRICS[metric].layer if metric else f.layer
    return {"connectivity": P2P, "stress": COLLECTIVES, "golden": GOLDEN}.get(layer, P2P)


def _emit_as(ctx: LayerContext, tag: str):
    """The run's sink, marking every row as a retest of ``tag``."""
    return ctx.sink(layer=NAME, confirms=tag)


def confirm(ctx: LayerContext, findings: list[Finding], repeats: int = 2) -> dict[str, Retest]:
    """Retest each suspect; return entity -> :class:`Retest`."""
    suspects = [f for f in findings if f.entity_kind in ("card", "nic", "link", "host", "supernode")]
    bad_cards = {c for f in suspects for c in cards_of(f, ctx.topo)}
    bad_hosts = {f.entity for f in suspects if f.entity_kind == "host"}
    outcome: dict[str, Retest] = {}
    for f in suspects:
        rules = fired_rules(ctx, f)
        how = measurement(f, rules)
        ctx.progress(f"confirm: retesting {f.entity_kind} {f.entity} ({how})")
        try:
            if is_not_measured(f):
                outcome[f.entity] = _retest_reach(ctx, f)
            elif how == FACTS:
                outcome[f.entity] = _retest_facts(ctx, f, rules)
            elif how == GOLDEN:
                outcome[f.entity] = _retest_golden(ctx, f, rules)
            else:
                cards = cards_of(f, ctx.topo)
                peers = (_rail_peers if f.entity_kind == "nic" else _peers)(cards, ctx.topo, bad_cards | bad_hosts)
                if not peers:
                    outcome[f.entity] = Retest(None, how, "no known-good peers to retest against")
                elif how == P2P:
                    outcome[f.entity] = _retest_p2p(ctx, f, rules, cards, peers, repeats)
                else:
                    outcome[f.entity] = _retest_collectives(ctx, f, rules, cards, peers)
        except HarnessError as e:  # this retest could not run: the suspect stays quarantined
            outcome[f.entity] = Retest(None, how, f"the retest could not run: {e}")
    return outcome


def _rows(ctx: LayerContext, tag: str) -> pd.DataFrame:
    """The retest's rows of ``tag``, all kinds in one small frame (a ``kind`` column)."""
    return ctx.frames(NAME, confirms=tag).frame()


def _dctx(ctx: LayerContext) -> DetectContext:
    return DetectContext(ctx.topo, ctx.design, ctx.reference, ctx.baseline, history=ctx.history)


def _named(ctx: LayerContext, rules: list[Rule], rows: pd.DataFrame) -> list[Finding]:
    if rows.empty or not rules:
        return []
    return merge_findings(evaluate(rules, rows, _dctx(ctx)), ctx.topo.cards_of_host)


def _in_scope(found: list[Finding], scope: set[str], ctx: LayerContext) -> list[Finding]:
    return [g for g in found if set(cards_of(g, ctx.topo)) & scope]


def _verdict(ctx: LayerContext, f: Finding, how: str, rules: list[Rule], rows: pd.DataFrame,
             measured: bool, what: str) -> Retest:
    scope = set(cards_of(f, ctx.topo))
    hits = _in_scope(_named(ctx, rules, rows), scope, ctx)
    if hits:
        named = ", ".join(f"{g.entity_kind} {g.entity} ({g.rule})" for g in hits[:4])
        return Retest(True, how, f"reproduced: {named}")
    if not rules:
        return Retest(None, how, "no rule to judge the retest with")
    if not measured:
        return Retest(None, how, f"the retest did not measure {what}")
    return Retest(False, how, f"not reproduced: {what} measured again and within bounds")


def _retest_reach(ctx: LayerContext, f: Finding) -> Retest:
    """Something not measured: read its host's facts again. Still down confirms it;
    answering now does not make it measured (its cards were not re-measured), so it can
    never be released here."""
    hosts = sorted({host_of(c) for c in cards_of(f, ctx.topo)})
    ctx.backend.host_facts(tuple(hosts), _emit_as(ctx, f.entity))
    rows = _rows(ctx, f.entity)
    facts = rows[rows["kind"] == "host_fact"] if not rows.empty and "kind" in rows else pd.DataFrame()
    down = sorted(set(facts.loc[facts["status"].isin(["unreachable", "timeout", "error"]), "host"])) \
        if not facts.empty else []
    if down:
        return Retest(True, "reachability", f"still not answering at the retest: {', '.join(down)}")
    return Retest(None, "reachability", "answered at the retest, but its cards were not re-measured in this run: "
                  "stays not measured")


# Facts measured between two hosts (perftest on one rail): the retest runs that pair again.
PAIR_FACT_TOOLS = {"ib_bw": "ib_write_bw", "ib_lat": "ib_write_lat"}


def _retest_facts(ctx: LayerContext, f: Finding, rules: list[Rule]) -> Retest:
    fact = f.evidence.get("fact")
    if f.entity_kind == "link" and fact in PAIR_FACT_TOOLS:
        a, b = split_link(f.entity)
        plan = ConnectivityPlan(rounds=(Round(0, "scale_out", ((a, b),)),), hosts=(), tools=(PAIR_FACT_TOOLS[fact],),
                                tools_coverage="all")
        ctx.backend.scale_out(plan, _emit_as(ctx, f.entity))
    else:
        hosts = sorted({host_of(c) for c in cards_of(f, ctx.topo)}) if f.entity_kind != "host" else [f.entity]
        ctx.backend.host_facts(tuple(hosts), _emit_as(ctx, f.entity))
    rows = _rows(ctx, f.entity)
    facts = rows[rows["kind"] == "host_fact"] if not rows.empty and "kind" in rows else pd.DataFrame()
    wanted = {f.evidence["fact"]} if isinstance(f.evidence.get("fact"), str) else None
    read = facts[facts["status"] == "ok"] if not facts.empty else facts
    if wanted is not None and not read.empty:
        read = read[read["fact"].isin(wanted)]
    return _verdict(ctx, f, FACTS, rules, rows, not read.empty,
                    f"the fact {next(iter(wanted))}" if wanted else "the host's facts")


def _retest_p2p(ctx: LayerContext, f: Finding, rules: list[Rule], cards: list[str], peers: list[str],
                repeats: int) -> Retest:
    rounds = [Round(i, "confirm", tuple(r)) for _ in range(repeats) for i, r in enumerate(round_robin(cards + peers))]
    ctx.backend.p2p(ConnectivityPlan(rounds=tuple(rounds), hosts=(), **ctx.backend.plan_defaults("connectivity")),
                    _emit_as(ctx, f.entity))
    rows = _rows(ctx, f.entity)
    return _verdict(ctx, f, P2P, rules, rows, _pairs_measured(rows, set(cards)), "the suspect's pairs")


def _pairs_measured(rows: pd.DataFrame, scope: set[str]) -> bool:
    if rows.empty or "kind" not in rows:
        return False
    p = rows[(rows["kind"] == "p2p") & (rows["status"] != "unreachable")]
    return bool((p["src"].isin(scope) | p["dst"].isin(scope)).any()) if not p.empty else False


def _retest_collectives(ctx: LayerContext, f: Finding, rules: list[Rule], cards: list[str],
                        peers: list[str]) -> Retest:
    base = stress.build_plan(LayerContext(ctx.topo, ctx.backend, ctx.emit, ctx.design))
    sizes = tuple(ctx.backend.plan_defaults("stress").get("narrow_sizes", stress.NARROW_SIZES))
    order = [c.id for c in ctx.topo.cards if c.id in set(cards) | set(peers)]
    tag = f.entity
    groups = [Group(f"pair:{a}<->{b}", "pair", (a, b)) for rnd in round_robin(order) for a, b in rnd]
    groups.append(Group(f"confirm:{tag}", "confirm", tuple(order)))
    control = Group(f"control:{tag}", "confirm", tuple(peers))
    plan = StressPlan(groups=tuple(groups) + ((control,) if len(peers) >= 2 else ()),
                      collectives=base.collectives, sizes=sizes, warmup=base.warmup, iters=base.iters, repeats=1)
    ctx.backend.collectives(plan, _emit_as(ctx, tag))
    rows = _rows(ctx, tag)
    if rows.empty or "group" not in rows:
        return Retest(None, COLLECTIVES, "the retest did not measure the suspect's collectives")
    in_control = rows["group"].eq(control.id) | rows["group"].map(
        lambda g: isinstance(g, str) and g.startswith("pair:") and not (set(g[5:].split("<->")) & set(cards)))
    scope = set(cards)
    suspect_rows = rows[~rows["group"].eq(control.id)]
    verdict = _verdict(ctx, f, COLLECTIVES, rules, suspect_rows, _collectives_measured(suspect_rows, scope),
                       "the suspect's collectives")
    control_hits = _named(ctx, rules, rows[in_control])
    if control_hits and verdict.confirmed is not True:
        named = ", ".join(g.entity for g in control_hits[:4])
        return Retest(None, COLLECTIVES, f"the control group without the suspect shows the symptom too ({named})")
    return verdict


def _collectives_measured(rows: pd.DataFrame, scope: set[str]) -> bool:
    coll = rows[(rows["kind"] == "collective") & (rows["status"] == "ok")] if "kind" in rows else rows.iloc[0:0]
    for g in coll["group"].unique() if not coll.empty else ():
        members = set(g[5:].split("<->")) if g.startswith("pair:") else None
        if members is None or members & scope:
            return True
    return False


def _retest_golden(ctx: LayerContext, f: Finding, rules: list[Rule]) -> Retest:
    steps = len(ctx.reference["loss"]) if ctx.reference else 30
    if f.entity_kind == "card":
        groups = solo_groups([f.entity])
    else:
        hosts = sorted({host_of(c) for c in cards_of(f, ctx.topo)})
        groups = tuple(Group(f"host:{h}", "host", tuple(ctx.topo.cards_of_host(h))) for h in hosts)
    ctx.backend.golden(GoldenPlan(groups=groups, steps=steps), _emit_as(ctx, f.entity))
    rows = _rows(ctx, f.entity)
    curves = golden_loss(rows, _dctx(ctx)) if not rows.empty else pd.DataFrame()
    if curves.empty:
        return Retest(None, GOLDEN, "the golden retest produced no loss curve")
    for c in curves.itertuples():
        if not all(map(math.isfinite, c.loss)):
            return Retest(True, GOLDEN, f"reproduced: {c.group}: the loss became non-finite")
    timing = [r for r in rules if r.op != "golden_band"]
    if timing:
        by_time = _verdict(ctx, f, GOLDEN, timing, rows, True, "the golden step time")
        if by_time.confirmed or not ctx.reference:
            return by_time
    if not ctx.reference:
        return Retest(None, GOLDEN, "no golden reference to judge the retest with")
    verdicts = golden_verdicts(curves, ctx.reference)
    if (~verdicts["ok"]).any():
        bad = verdicts[~verdicts["ok"]].iloc[0]
        return Retest(True, GOLDEN, f"reproduced: {bad['group']}: {bad['reason']}")
    return Retest(False, GOLDEN, "not reproduced: the golden model trained within the band again")
