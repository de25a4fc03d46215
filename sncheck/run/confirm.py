"""Confirmation: retest each quarantined entity with the measurements that found it, and judge the retest with
every rule, within the same run. DESIGN.md's policy quarantines at the first anomaly. A finding may carry folded
findings (``evidence.related``: other symptoms of the same culprit). Each symptom is retested by its measurement,
at the tier it was seen on:

* a host-fact symptom: that host's facts are read again, with the same commands;
* a peer-to-peer symptom: pair tests of its cards with known-good controls measured in the same window,
  ``repeats`` times. The controls are of the symptom's tier: host mates and the same supernode for scale-up,
  same-rail cards of other supernodes for a scale-out symptom (a NIC); a whole supernode re-measures its own
  domain's pairs (one card per host), with another domain as the control where there is one; a host, a switch or
  a link with no known-good control left re-measures its own pairs against the design bar (a bar judged against
  controls then has too few partners: never a release);
* a collective symptom: the same collectives at the narrowing sizes, over pairs of the
  suspect's cards with known-good peers, them together and the peers alone; a slow group
  itself where it showed, beside its peers (:mod:`sncheck.run.groupretest`);
* a golden symptom: the golden model trains again on the suspect's card or host;
* a not-measured symptom: the host is asked again; answering never makes it measured.

Every rule of the rules file judges what the retest re-read (not only the rules that
fired), so a new fault seen during the retest is a finding. The verdict
(:class:`Retest`) is three-valued:

* confirmed: a symptom's own rule names the suspect again, or is still within the measured noise of its bar, or
  another rule names the suspect now (a folded host's or domain's symptom confirms nothing about one link);
* not confirmed (released): every symptom was re-measured by its own test, judged by
  its own rule, and is inside the bar by more than the retest's measured noise;
* None (cannot say, stays quarantined): a symptom not re-measured, not judged (its
  rule is not in the rules file) or not measured in the first place, a retest too
  noisy to judge, controls that show the symptom too, a retest that could not run, or
  a host of the suspect that lists other devices than at its first read
  (``devices_changed``: a finding of its own, whatever the symptom's severity).
  On a backend that shares one machine (local), a reproduced symptom while the machine
  is busy or the controls are degraded alike is ``busy``: "inconclusive", not a pass
  and not an isolation.

The order of the rules never matters: every symptom is retested and judged.
"""

from __future__ import annotations

import math
from collections.abc import Set
from dataclasses import dataclass, replace

import pandas as pd

from sncheck.backends.load import busy_reason as _busy_reason, window
from sncheck.errors import HarnessError
from sncheck.model import Finding
from sncheck.health.invariants import NON_FINITE
from sncheck.health.metrics import METRICS, PAIRS, DetectContext, golden_loss
from sncheck.health.ops import golden_verdicts
from sncheck.health.rules import Rule, evaluate
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Group, Round, StressPlan, solo_groups
from sncheck.run.scope import cards_of, switchlike
from sncheck.run.controls import (PEERS, domain_sample, fair_mates, peers_for, stand_ins,
                                  switch_sample)
from sncheck.run.nearbar import BESIDE, NO_CONTROL_PAIRS, NearClock, at_bound, batch_repeats, decided, \
    later_batches, look
from sncheck.run.batches import retests
from sncheck.run.pairrounds import NO_PEERS, pair_rounds
from sncheck.run.groupretest import OP, outcome, rerun, split
from sncheck.run.retest import COLLECTIVES, FACTS, GOLDEN, P2P, REACH, Retest
from sncheck.run.retestbar import explained, has_bound, inward, pair_repeats, rare_repeats, retest_noise, \
    ALIKE, of_known, failed_own, known_ends, holders, no_longer, of_another_kind, only_beside, retest_tag, tied, \
    seen_in_retest as _seen, through_known, too_few_partners
from sncheck.topology import Topology, round_robin
from sncheck.model import host_of, on_fabric, split_link
from sncheck.layers import stress
from sncheck.layers.base import LayerContext
from sncheck.vendors.registry import pair_tools

NAME = "confirm"
FACT_METRICS = ("host_fact_failures", "host_fact_warnings", "fabric_counters", "kernel_events")  # read from host facts
MAX_NOISE = 0.05  # a retest this precise (relative spread) that is still at the bar confirms
NOISY = "within the measured noise of the bar, and the retest is too noisy to tell"
FEW = "not judged (too few partners to apply its bar): "  # a retest that could not apply a per-card or domain bar
UNJUDGED = ("not re-measured: " + NO_PEERS, FEW, NO_CONTROL_PAIRS)  # a speed with no control, too few
DEVICES_CHANGED = "devices_changed"  # the fact hostjudge.FactJudge.changed writes


@dataclass(frozen=True)
class Symptom:
    """One symptom of a suspect: its finding's own, or one folded into it."""
    layer: str
    rule: str
    evidence: dict
    not_measured: bool = False
    kind: str | None = None  # the entity kind of the finding it came from (a folded one's may differ)


def symptoms(f: Finding) -> list[Symptom]:
    def own(g: Finding) -> Symptom:
        return Symptom(g.layer, g.rule, {k: v for k, v in g.evidence.items() if k != "related"}, g.not_measured,
                       g.entity_kind)

    return [own(f)] + [own(g) for g in f.folded]


def rules_by_name(ctx: LayerContext) -> dict[str, Rule]:
    return {r.name: r for r in ctx.rules.rules if r.op != "missing"} if ctx.rules is not None else {}


def measurement(s: Symptom, by_name: dict[str, Rule]) -> str:
    """Which measurement showed a symptom: its rule's metric, else its layer."""
    if s.not_measured:
        return REACH
    rule = by_name.get(s.rule)
    metric = rule.metric if rule else None
    if metric in FACT_METRICS or (metric is None and "fact" in s.evidence):
        return FACTS
    layer = METRICS[metric].layer if metric else s.layer
    return {"connectivity": P2P, "stress": COLLECTIVES, "golden": GOLDEN}.get(layer, P2P)


def symptom_tiers(f: Finding, topo: Topology, syms: list[Symptom]) -> set[str]:
    """The tiers a finding's pair symptoms were seen on."""
    if f.entity_kind in ("nic", "switch"):
        return {"scale_out"}
    tiers = set()
    for s in syms:
        if isinstance(s.evidence.get("tier"), str):
            tiers.add(s.evidence["tier"])
        for w in s.evidence.get("worst") or []:
            a, b = split_link(w["link"]) if "<->" in str(w.get("link")) else (None, None)
            if a in topo.by_id and b in topo.by_id:
                tiers.add(topo.tier(a, b))
    if tiers:
        return tiers
    # Nothing says (a card slow across its pairs as a whole): the tiers its cards have pairs on.
    cards = cards_of(f, topo)
    out = set()
    if any(len(topo.cards_of_host(host_of(c))) > 1 for c in cards):
        out.add("intra_host")
    if any(len(topo.hosts_of_supernode(topo.by_id[c].supernode)) > 1 for c in cards):
        out.add("scale_up")
    return out or {"scale_out"}


def _emit_as(ctx: LayerContext, tag: str | None):
    """The run's sink, marking every row as a retest of ``tag``."""
    return ctx.sink(layer=NAME, confirms=tag)


def confirm(ctx: LayerContext, findings: list[Finding], repeats: int = 2) -> dict[str, Retest]:
    """Retest each suspect; return entity -> :class:`Retest`."""
    suspects = [f for f in findings if f.entity_kind in ("card", "link", "host", "supernode", "nic", "switch")]
    ctx.shown = frozenset((c, s.rule, f.entity) for f in ctx.wave or suspects for s in symptoms(f) for c in cards_of(f, ctx.topo))
    # never a control: any suspect of this wave, or a culprit named before it (ctx.known)
    bad_cards = {c for f in suspects for c in cards_of(f, ctx.topo)} | \
        {c for e, k in ctx.known if k in ("card", "link", "host", "supernode", "nic", "switch")
         for c in cards_of(e, ctx.topo, k)}
    bad_hosts = {f.entity for f in suspects if f.entity_kind == "host"} | {e for e, k in ctx.known if k == "host"}
    # A domain judged slow inside (every symptom on its own tiers), or one a cross group only stands for (stand_ins),
    # carries a NIC's pairs at the NIC's speed: fair controls over the scale-out network (else no far side for a NIC).
    inside = {c for f in suspects if f.entity_kind == "supernode" and _judged_inside(f) for c in cards_of(f, ctx.topo)}
    inside |= {c for e, k in stand_ins(suspects) for c in cards_of(e, ctx.topo, k)}
    inside -= {c for f in suspects if f.entity_kind != "supernode" for c in cards_of(f, ctx.topo)}
    # A switch carries scale-out pairs only: the cards behind it (a spine: every card under its leaves) are fair
    # controls inside hosts and domains (with a spine suspect, an intra-host link's retest had no control left and
    # stayed quarantined). A cable named before (known as a link) is one too: its cards were no control inside a
    # domain, and r10-13's slow card beside a cable down stayed quarantined with no peer.
    behind = {c for f in suspects if switchlike(f) for c in cards_of(f, ctx.topo)} | \
        {c for e, k in ctx.known if on_fabric(e, k) for c in cards_of(e, ctx.topo, k)}
    behind -= {c for f in suspects if not switchlike(f) for c in cards_of(f, ctx.topo)} | \
        {c for e, k in ctx.known if k in ("card", "link", "host", "supernode", "nic") and not on_fabric(e, k)
         for c in cards_of(e, ctx.topo, k)}
    switches = {f.entity for f in suspects if switchlike(f)} | {e for e, k in ctx.known if on_fabric(e, k)}
    mates = fair_mates([(f.entity, f.entity_kind) for f in suspects], ctx.known, ctx.topo, cards_of)
    # each suspect's own window; those measured by their pairs alone, in batches (sncheck.run.batches)
    return retests(ctx, [Window(ctx, f, ((bad_cards - inside if f.entity_kind == "nic" or switchlike(f) else bad_cards)
                                 - mates.get(f.entity, set())) | bad_hosts, repeats, behind, switches,
                                apart=bool(mates.get(f.entity))) for f in suspects], lambda t: _emit_as(ctx, t))


def _judged_inside(f: Finding) -> bool:
    """Every symptom of a domain judged on a tier inside it (its evidence's ``tier``; a
    symptom without one, such as its hosts' golden step time, says nothing of tiers), and
    at least one so judged. Its bad pairs to a sick NIC's card do not make it scale-out."""
    judged = {s.evidence.get("tier") for s in symptoms(f)} - {None}
    return bool(judged) and "scale_out" not in judged


def _dctx(ctx: LayerContext, subject: Finding | None = None) -> DetectContext:
    """Judging a retest: the suspect is the subject (judged afresh); every other suspect of its wave is,
    for the rules that named it, a culprit found already (``shown``: rates.explain_rates)."""
    me = subject.entity if subject is not None else None
    known = (ctx.known - stand_ins(ctx.wave)) | ({(subject.entity, subject.entity_kind)} if subject is not None else set())
    return DetectContext(ctx.topo, ctx.design, ctx.reference, ctx.baseline, history=ctx.history, known=frozenset(known),
                         subject=me, factors=ctx.factors, shown=frozenset((c, r) for c, r, e in ctx.shown if e != me))


class Window:
    """One suspect's retest: every symptom's measurement, its controls, and the judging."""

    def __init__(self, ctx: LayerContext, f: Finding, avoid: set[str], repeats: int,
                 behind: Set[str] = frozenset(), switches: Set[str] = frozenset(), apart: bool = False) -> None:
        self.ctx, self.f, self.avoid, self.switches = ctx, f, avoid, switches
        self.apart = apart  # controls of its own slow domain (fair_mates): their level is the domain's symptom
        self.inside = avoid - behind  # the controls to avoid on pairs that cross no switch
        self.by_name = rules_by_name(ctx)
        self.syms = symptoms(f)
        self.repeats = max(repeats, rare_repeats(self.syms, self.by_name))
        self.near = [s for s in self.syms if s.evidence.get("near_bar") and s.rule in self.by_name]
        self.repeats = max(self.repeats, batch_repeats(1) if self.near else 0)
        self.beside: dict[str, object] = {}  # a near suspect's sibling bars found passed: their tiers
        self.looked: dict[str, tuple[bool | None, str]] = {}  # the near and sibling bars at the last look
        self.scope, self.tag = set(cards_of(f, ctx.topo)), retest_tag(f)  # tag: its rows' ``confirms``
        self.controls: set[str] = set()
        self.measured: dict[str, str | None] = {}  # how -> None when measured, else what was not
        self.notes: dict[str, str] = {}  # how -> what the measurement itself showed
        self.hows = list(dict.fromkeys(measurement(s, self.by_name) for s in self.syms))
        self.ends: set[str] | None = None  # named()

    # ---------------------------------------------------------------- measuring
    def start(self) -> list[str]:
        """The measurements its symptoms need, said (and its near-bar clock started)."""
        self.ctx.progress(f"confirm: retesting {self.f.entity_kind} {self.f.entity} ({', '.join(self.hows)})")
        self.clock = NearClock(self.ctx.backend.near_budget())
        return self.hows

    def run(self) -> Retest:
        hows = self.start()
        load = [self.ctx.backend.machine_load()]
        for how in hows:
            self.clock.timed(self._measure, how, self.repeats if how == P2P and self.near else None)
        # a suspect near its bar (sncheck.run.nearbar): its pairs again, in growing batches, until its samples
        # decide, reach the bound, or the next batch would spend the backend's budget; each look judges its bars
        for repeats in later_batches(self.repeats):
            if not self.near or self.measured.get(P2P) is not None or self._decided() or not self.clock.fits(repeats):
                break
            self.repeats = repeats
            self.clock.timed(self._measure, P2P, repeats)
        load.append(self.ctx.backend.machine_load())
        return self.judge(hows, window(load))

    def _measure(self, how: str) -> None:
        try:
            {REACH: self._reach, FACTS: self._facts, P2P: self._p2p, COLLECTIVES: self._collectives,
             GOLDEN: self._golden}[how]()
        except HarnessError as e:
            self.measured[how] = f"the retest could not run ({e})"

    def rows(self) -> pd.DataFrame:
        return self.ctx.frames(NAME, confirms=self.tag).frame()

    def _kind(self, kind: str) -> pd.DataFrame:
        rows = self.rows()
        return rows[rows["kind"] == kind] if not rows.empty and "kind" in rows else pd.DataFrame()

    def _hosts(self) -> list[str]:
        return [self.f.entity] if self.f.entity_kind == "host" else sorted({host_of(c) for c in self.scope})

    def _reach(self) -> None:
        self.ctx.backend.host_facts(tuple(self._hosts()), _emit_as(self.ctx, self.tag))
        facts = self._kind("host_fact")
        down = sorted(set(facts.loc[facts["status"].isin(["unreachable", "timeout", "error"]), "host"])) \
            if not facts.empty else []
        self.measured[REACH] = "answering now does not measure what was not measured in the first place"
        self.notes[REACH] = f"still not answering at the retest: {', '.join(down)}" if down else ""

    def _facts(self) -> None:
        # facts measured between two hosts (perftest on one rail): the retest runs that pair again
        tool_of = {t.fact: name for name, t in pair_tools().items()}
        pair_facts = [s.evidence["fact"] for s in self.syms if s.evidence.get("fact") in tool_of]
        if self.f.entity_kind == "link" and pair_facts:
            a, b = split_link(self.f.entity)
            tools = tuple(dict.fromkeys(tool_of[x] for x in pair_facts))
            plan = ConnectivityPlan(rounds=(Round(0, "scale_out", ((a, b),)),), hosts=(), tools=tools,
                                    tools_coverage="all")
            self.ctx.backend.scale_out(plan, _emit_as(self.ctx, self.tag))
        if self.f.entity_kind != "link" or len(pair_facts) < sum(measurement(s, self.by_name) == FACTS
                                                                 for s in self.syms):
            self.ctx.backend.host_facts(tuple(self._hosts()), _emit_as(self.ctx, self.tag))
        self.measured[FACTS] = None

    def _p2p(self) -> None:
        if rounds := self.p2p_rounds():
            self.ctx.backend.p2p(self.p2p_plan(rounds), _emit_as(self.ctx, self.tag))
            self.p2p_seen()

    def p2p_plan(self, rounds: list[Round]) -> ConnectivityPlan:
        return ConnectivityPlan(rounds=tuple(rounds), hosts=(), **self.ctx.backend.plan_defaults("connectivity"))

    def p2p_rounds(self) -> list[Round]:
        """Its pair rounds, planned (none: ``measured`` says why not; sncheck.run.pairrounds)."""
        self.p2p_tiers = symptom_tiers(self.f, self.ctx.topo, self.syms)
        return pair_rounds(self, self.p2p_tiers)

    def p2p_seen(self) -> None:
        """Whether its rounds measured the suspect's pairs on each of its tiers."""
        topo, tiers = self.ctx.topo, self.p2p_tiers
        p = self._kind("p2p")
        p = p[p["status"] != "unreachable"] if not p.empty else p
        seen = {topo.tier(r.src, r.dst) for r in (p.itertuples() if not p.empty else ())
                if (r.src in self.scope or r.dst in self.scope) and r.src in topo.by_id and r.dst in topo.by_id}
        gaps = sorted(tiers - seen)
        self.measured[P2P] = f"the suspect's pairs on {', '.join(gaps)} were not measured" if gaps else None

    def _collectives(self) -> None:
        ctx, cards = self.ctx, sorted(self.scope)
        if self.f.entity_kind == "supernode":
            cards = domain_sample(ctx.topo, self.f.entity, "scale_up")
        if self.f.entity_kind == "nic" or switchlike(self.f):
            # through it: a NIC with its rail's cards in other domains, a switch's or a cable's cards with
            # controls behind other leaves (inside its domain no pair crossed it: r10-09, r10-10 released)
            cards = switch_sample(ctx.topo, self.f.entity, cards) if switchlike(self.f) else cards
            peers = peers_for(cards, ctx.topo, self.avoid, "scale_out")
        else:
            # Two host mates (they share the suspect's intra-host links), the rest from other hosts.
            mates = peers_for(cards, ctx.topo, self.inside, "intra_host")  # collectives inside a domain: no switch
            far = peers_for(cards, ctx.topo, self.inside, "scale_up")
            peers = mates[:2] + far[:PEERS - min(2, len(mates))]
            peers += [c for c in mates[2:] if c not in peers][:PEERS - len(peers)]
        if not peers and (self.f.entity_kind == "card" or len(cards) < 2):
            self.measured[COLLECTIVES] = NO_PEERS
            return  # a host's or a domain's own cards still run their collectives alone
        base = stress.build_plan(LayerContext(ctx.topo, ctx.backend, ctx.emit, ctx.design))
        rerun(ctx.backend, self.syms, self.by_name, base, _emit_as(ctx, self.tag))  # a slow group where it showed
        order = [c.id for c in ctx.topo.cards if c.id in set(cards) | set(peers)]
        groups = [Group(f"pair:{a}<->{b}", "pair", (a, b)) for rnd in round_robin(order) for a, b in rnd]
        groups.append(Group(f"confirm:{self.f.entity}", "confirm", tuple(order)))
        groups += [Group(f"control:{self.f.entity}", "confirm", tuple(peers))] if len(peers) >= 2 else []
        self.controls |= set(peers)
        plan = StressPlan(groups=tuple(groups), collectives=base.collectives, sizes=stress.narrow_sizes(ctx),
                          warmup=base.warmup, iters=base.iters, repeats=pair_repeats(self.syms, self.by_name))
        ctx.backend.collectives(plan, _emit_as(ctx, self.tag))
        coll = split(self._kind("collective"))[0]  # (the slow groups' re-run and their peers are not the suspect's)
        ok = coll[coll["status"] == "ok"] if not coll.empty else coll
        ran = any(not g.startswith(("pair:", "control:")) or set(g[5:].split("<->")) & set(cards)
                  for g in (ok["group"].unique() if not ok.empty else ()))
        self.measured[COLLECTIVES] = None if ran else "the suspect's collectives"

    def _golden(self) -> None:
        ctx = self.ctx
        steps = len(ctx.reference["loss"]) if ctx.reference else 30
        if self.f.entity_kind == "card":
            groups = solo_groups([self.f.entity])
        else:
            groups = tuple(Group(f"host:{h}", "host", tuple(ctx.topo.cards_of_host(h)))
                           for h in sorted({host_of(c) for c in self.scope}))
        ctx.backend.golden(GoldenPlan(groups=groups, steps=steps), _emit_as(ctx, self.tag))
        rows = self._kind("golden")
        curves = golden_loss(rows, _dctx(ctx)) if not rows.empty else pd.DataFrame()
        if curves.empty:
            self.measured[GOLDEN] = "the golden retest produced no loss curve"
            return
        self.measured[GOLDEN] = None
        for c in curves.itertuples():
            if not all(map(math.isfinite, c.loss)):
                self.notes[GOLDEN] = f"{c.group}: the loss became non-finite"
                return
        if ctx.reference:
            verdicts = golden_verdicts(curves, ctx.reference, ctx.topo)
            if (~verdicts["ok"]).any():
                bad = verdicts[~verdicts["ok"]].iloc[0]
                self.notes[GOLDEN] = f"{bad['group']}: {bad['reason']}"

    # ---------------------------------------------------------------- judging
    def _cards(self, g: Finding) -> set[str]:
        return set(cards_of(g, self.ctx.topo))

    def _mine(self, g: Finding) -> bool:
        """A retest finding that is the suspect's symptom again: one holding its cards. A link
        suspect's is that link or a host or domain holding it: never another link sharing one
        end (a 0.95 card's link host016/gpu2<->host037/gpu6 was "reproduced" by
        host003/gpu2<->host016/gpu2, 5183 seeds 1-2), nor a card at one end: those explain its
        pair and are findings of their own (``seen``, retestbar.explained). A cable's: itself or its
        leaf or spine (retestbar.holders)."""
        if self.f.entity_kind == "link" and (g.entity_kind in ("link", "card") or switchlike(self.f)):
            if switchlike(self.f):  # a cable: itself again (or, not told apart, a switch: _tied)
                return g.entity == self.f.entity or g.entity in holders(self.f)
            return g.entity_kind == "link" and set(split_link(g.entity)) == self.scope
        return bool((c := self._cards(g)) & self.scope) and g.entity not in self.switches - {self.f.entity} and \
            not of_known(self.f, g, c, self.named)

    def _evaluate(self, rules: list[Rule], rows: pd.DataFrame, dctx: DetectContext) -> list[Finding]:
        """The rules over the retest's rows, pair rows one tier at a time: a retest holds a
        few pairs of each tier, and no peer statistic may mix them."""
        if rows.empty:
            return []
        if "kind" in rows:  # a rule of kinds the retest did not re-read has nothing to judge here
            kinds = set(rows["kind"].dropna().unique())
            rules = [r for r in rules if not METRICS[r.metric].reads or set(METRICS[r.metric].reads) & kinds]
        if "kind" not in rows or not (rows["kind"] == "p2p").any():
            return evaluate(rules, rows, dctx)
        pairs = rows["kind"] == "p2p"
        p = rows[pairs]
        tiers = self.ctx.topo.tiers(p["src"].astype(str), p["dst"].astype(str)).to_numpy()
        out = evaluate(rules, rows[~pairs], dctx) if (~pairs).any() else []
        for tier in sorted(set(tiers)):
            out += evaluate(rules, p[tiers == tier], dctx)
        return out

    def _decided(self) -> bool:
        """One look at a near suspect's samples so far (nearbar.look: its near bars and the
        sibling bars the retest found it beyond, each judged once; ``looked``, what the
        verdict reads): no more batches when each is decided or can be no more."""
        p2p, dctx, skip = self._kind("p2p"), _dctx(self.ctx, self.f), {s.rule for s in self.syms}
        near = [(self.by_name[s.rule], s.evidence.get("tier")) for s in self.near]
        found = self._evaluate([r for r in self.by_name.values() if r.metric in {n.metric for n, _ in near}
                                and r.name not in skip], p2p, dctx)
        self.looked = look(near, found, self.f.entity, skip, self.by_name, self.beside, p2p, dctx)
        return decided(self.looked)

    def named(self) -> set[str]:
        """The cards of the culprits named before this retest (retestbar.known_ends), read once."""
        if self.ends is None:
            self.ends = known_ends(_dctx(self.ctx, self.f))
        return self.ends

    def _tied(self, g: Finding, rows: pd.DataFrame) -> bool:
        return tied(self.f, g, rows, self.ctx.topo)

    def need(self) -> int:
        """The most partners a card needs for the symptoms' per-card or per-domain bars to
        judge its median (their ``min_pairs``)."""
        rules = [self.by_name.get(s.rule) for s in self.syms]
        return max([int(r.params.get("min_pairs", 3)) for r in rules
                    if r is not None and r.params.get("per") in ("card", "supernode")] or [3])

    def _speed(self, rule: str) -> bool:
        """A rule that bars a measured time or bandwidth: what a busy machine can move."""
        return rule in self.by_name and has_bound(self.by_name[rule])

    def judge(self, hows: list[str], load: dict | None) -> Retest:
        rows, self.group_rows = split(self.rows())  # a slow group's re-run: its own rule's alone
        dctx = _dctx(self.ctx, self.f)
        rules = list(self.by_name.values())
        found = self._evaluate(rules, rows, dctx)
        # A host that lists other devices than at its first read (hostjudge's
        # devices_changed): what was re-read there is not what was found; the change is a
        # finding of its own, and the suspect on that host can be neither confirmed nor
        # released by this retest.
        changed = [g for g in found if g.evidence.get("fact") == DEVICES_CHANGED]
        # (near a bar only in the retest's few pairs; another's seen only through a known culprit: retestbar.through_known)
        found = [g for g in found if g.evidence.get("fact") != DEVICES_CHANGED and not g.near_only and (
            self._mine(g) or not through_known(self._cards(g), rows, dctx, self.by_name.get(g.rule), self.named()))]
        # the suspect's symptom again: a finding holding its cards, or one the evidence could
        # not tell from the suspect itself (its rivals, evidence ``separated: false``)
        # apart (fair_mates): a host or domain named is its slow domain's level again, a culprit known
        found = [g for g in found if not (self.apart and g.entity_kind in ("host", "supernode"))]
        # a named switch other than the suspect on the retest's paths: its own level again, a culprit known
        found = [g for g in found if not (g.entity_kind == "switch" and g.entity in self.switches - {self.f.entity})]
        hits = [g for g in found if self._mine(g) or self._tied(g, rows)]
        on_controls = [g for g in found if self._cards(g) & self.controls]
        untold = [g for g in on_controls if g not in hits and only_beside(  # a control the retest cannot tell apart
            self._cards(g), self.scope, rows, self.ctx.topo, g.evidence.get("tier"))]
        hits += [replace(g, message=f"{g.message} (measured only against {self.f.entity}: {ALIKE})") for g in untold]
        ends = [g for g in found if self.f.entity_kind == "link" and not switchlike(self.f) and g.entity_kind == "card"
                and g.entity in self.scope
                and not self._tied(g, rows) and g.entity not in no_longer(self.f)]  # (a tied end: the link again)
        noise = retest_noise(rows)
        per: list[dict] = []
        for s in self.syms:
            how = measurement(s, self.by_name)
            per.append({"rule": s.rule, "layer": s.layer, "how": how,
                        **dict(zip(("outcome", "note"), self._symptom(s, how, hits, rows, dctx, noise)))})
        per = of_another_kind(self.f, self.syms, per)  # a host's step time says nothing of one link
        symptom_rules = {s.rule for s in self.syms}
        siblings = {rule: v for rule, v in self.looked.items() if rule not in symptom_rules}
        per += [{"rule": rule, "layer": NAME, "how": "retest", "outcome": outcome, "note": f"{BESIDE}{note}"}
                for rule, (outcome, note) in siblings.items()]
        new = [g for g in hits if g.rule not in symptom_rules and not (g.entity == self.f.entity and g.rule in siblings)]
        for g in new:  # a fault the retest saw that detection did not: the suspect is not clear
            per.append({"rule": g.rule, "layer": NAME, "how": "retest", "outcome": True,
                        "note": f"new in the retest: {g.message}"})
        if failed := failed_own(rows, self.f, self.scope, self.ctx.topo, dctx, self.named()):  # a failed pair of its own: never inside
            per = [{**p, "outcome": None, "note": failed} if p["outcome"] is False else p for p in per]  # (any bar)
        per = explained(per, ends) if ends and not hits else per  # a link's pair its end explains
        busy_now = _busy_reason(load, [])
        # A control the explanation names on its own (not a culprit holding the suspect) is
        # a finding of its own, retested in turn (sncheck.run.isolation).
        seen = tuple(_seen(g, self.f, busy_now if self._speed(g.rule) else None) for g in on_controls
                     if not self._mine(g) and not self._tied(g, rows) and g not in untold)
        seen += tuple(_seen(g, self.f, None) for g in changed + ends)
        how = ", ".join(hows)
        moved = [g for g in changed if self._cards(g) & self.scope]
        if moved:
            per = [{**p, "outcome": None, "note": f"not re-measured: the host lists other devices now ({p['note']})"}
                   for p in per]
            return Retest(None, how, "; ".join(dict.fromkeys(g.message for g in moved)), symptoms=tuple(per),
                          seen=seen)
        outcomes = [p["outcome"] for p in per]
        reproduced = [p for p in per if p["outcome"] is True]
        if reproduced:
            # The explanation named the suspect (or a culprit holding it) again: confirmed. A
            # control named beside it is another culprit, not a doubt on this one; only on
            # one shared machine under load may controls slow alike be the machine itself.
            reproduced_rules = {p["rule"] for p in reproduced}
            alike = sorted({g.rule for g in on_controls} & reproduced_rules)
            note = "reproduced: " + "; ".join(f"{p['rule']}: {p['note']}" for p in reproduced[:4])
            # Only a speed (a bar on a measured time or bandwidth) can be the machine's load;
            # a wrong result, a fact or a non-finite loss reproduced is the suspect's.
            speed = all(self._speed(p["rule"]) for p in reproduced)
            busy = _busy_reason(load, alike) if speed else None
            if busy:
                return Retest(None, how, f"{busy}; {note}", busy=busy, symptoms=tuple(per), seen=seen)
            return Retest(True, how, note, symptoms=tuple(per), seen=seen)
        if all(o is False for o in outcomes):
            return Retest(False, how, "not reproduced: " + "; ".join(f"{p['rule']}: {p['note']}" for p in per),
                          symptoms=tuple(per), seen=seen)
        open_ = [p for p in per if p["outcome"] is None]
        why = "; ".join(f"{p['rule']}: {p['note']}" for p in open_[:4])
        # on one shared machine under load what the retest could not tell may be that load (noisy, no or few controls)
        noisy = all(p["note"].startswith(NOISY) for p in open_)
        unmeasured = bool(open_) and all(self._speed(p["rule"]) and p["note"].startswith(UNJUDGED) for p in open_)
        busy = _busy_reason(load, ["noise"] if noisy else []) if noisy or unmeasured else None
        if busy:
            return Retest(None, how, f"{busy}; {why}", busy=busy, symptoms=tuple(per), seen=seen)
        if spent := self.clock.spent(open_, busy_now):  # a near suspect the budget left within the noise
            return Retest(None, how, f"{spent}; {why}", busy=spent, symptoms=tuple(per), seen=seen)
        if all(at_bound(p["note"].removeprefix(BESIDE)) for p in open_):  # a near suspect the bound left undecided
            return Retest(None, how, why, undecided=True, symptoms=tuple(per), seen=seen)
        return Retest(None, how, self.clock.said(why), symptoms=tuple(per), seen=seen,
                      spent=self.clock.stopped(open_))  # a near suspect the budget stopped on a quiet machine

    def _symptom(self, s: Symptom, how: str, hits: list[Finding], rows: pd.DataFrame, dctx: DetectContext,
                 noise: float) -> tuple[bool | None, str]:
        if how == REACH:
            still = self.notes.get(REACH)
            return (True, still) if still else (None, f"not re-measured: {self.measured[REACH]}")
        gap = self.measured.get(how)
        if gap is not None:
            return None, f"not re-measured: {gap}"
        if how == GOLDEN and s.rule == NON_FINITE or (how == GOLDEN and self.by_name.get(s.rule)
                                                      and self.by_name[s.rule].op == "golden_band"):
            if self.notes.get(GOLDEN):
                return True, self.notes[GOLDEN]
            if s.rule != NON_FINITE and not self.ctx.reference:
                return None, "not judged: no golden reference to judge the retest with"
            return False, "the golden model trained within the band again"
        rule = self.by_name.get(s.rule)
        if rule is None:
            return None, f"not judged: rule {s.rule} is not in the rules (or not enabled)"
        if s in self.near:
            return self.looked.get(s.rule, (None, "none of its pairs re-measured"))
        if rule.op == OP:
            return outcome(s, rule, self.group_rows, dctx)
        own = [g for g in hits if g.rule == rule.name]
        if own:
            return True, own[0].message
        if METRICS[rule.metric].shape != PAIRS or not has_bound(rule):
            return False, f"{rule.name} re-measured and quiet"
        short = too_few_partners(rule, rows, self.f, self.ctx.topo, s.evidence.get("tier"), self.scope)
        if short:  # its bar could not judge the retest: never a release
            return None, FEW + short
        near = [g for g in self._evaluate([inward(rule, noise)], rows, dctx) if self._mine(g) or self._tied(g, rows)]
        if not near:  # (a failed pair of its own is never inside the bar: judge() says so of every symptom)
            return False, f"inside the bar by more than the measured noise ({noise:.1%})"
        if noise <= MAX_NOISE:  # a precise retest still at the bar: the fault, not noise
            return True, f"still within the measured noise ({noise:.1%}) of the bar: {near[0].message}"
        return None, NOISY + f" ({noise:.0%} of the median)"

