"""Rule ops: pure functions ``(rows, rule, ctx) -> list[Finding]``.

Each op reads its rule's metric (see :mod:`metrics`), decides what is bad, and names
culprits. Over pair metrics the bad pairs are localized (C4D): one bad pair is a link,
a card bad with most partners is the card, all cards of a host alike is the host.
"""

from __future__ import annotations


import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

import numpy as np
import pandas as pd

from sncheck.health import fabric, groups, injob, kernel
from sncheck.health.culprits import _compare, bound_of, entity_findings, explain_reference, explain_rules, \
    listed_nics
from sncheck.health.drift import baseline_unjudged, calibration_regression, card_baseline, compares, drift
from sncheck.health.findings import jsonable
from sncheck.health.metrics import ENTITIES, GROUPS, METRICS, PAIRS, DetectContext, reference_of, \
    replica_ranks_of
from sncheck.health.rankrows import RankRows, rank_rows
from sncheck.model import Basis, EntityKind, Finding, Status, host_of
from sncheck.vendors.nccl_ras import STATES as RAS_STATES

if TYPE_CHECKING:
    from sncheck.health.rules import Rule
    from sncheck.topology import Topology

REQUIRED = object()


@dataclass(frozen=True)
class Param:
    type: type | tuple
    default: object = REQUIRED
    help: str = ""
    choices: tuple = ()
    check: Callable[[object, dict], str | None] | None = None  # what is wrong with a value (in its rule), or None


@dataclass(frozen=True)
class Op:
    name: str
    fn: Callable[[pd.DataFrame, "Rule", DetectContext], list[Finding]]
    shapes: tuple[str, ...]
    params: dict[str, Param] = field(default_factory=dict)
    one_of: tuple[str, ...] = ()  # exactly one of these params must be given
    help: str = ""


def robust_z(x: pd.Series) -> pd.Series:
    """0.6745 (x - median) / MAD (Iglewicz-Hoaglin); 0 where the MAD is 0."""
    med = x.median()
    mad = (x - med).abs().median()
    if not mad or math.isnan(mad):
        return pd.Series(0.0, index=x.index)
    return 0.6745 * (x - med) / mad


# ------------------------------------------------------------------------------- the ops
def ratio_to_design(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """A pair (or, ``per: supernode``, a domain's level) against its tier's design; the
    explainer names who explains the pairs beyond the bar (:mod:`sncheck.health.culprits`)."""
    return explain_rules([rule], rows, ctx)


def peer_outlier(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    metric = METRICS[rule.metric]
    if metric.shape != ENTITIES:
        return explain_rules([rule], rows, ctx)  # pairs (or a card's median, per: card) against their tier
    frame = ctx.metric(rule.metric, rows)
    untold, everyone = frame.iloc[:0], frame
    if rule.metric in DERIVED_CARDS and ctx.known and not frame.empty:
        # a card a named culprit holds is late by that culprit (a slow host's cards start
        # every collective late): its symptom, and no peer of the others; but the cards of a
        # host the explanation could not tell from them are judged against those peers
        entity = frame["entity"].astype(str)
        held = entity.isin(ctx.culprit_cards(subject=False))
        untold = frame[held & entity.isin({c for cards in ctx.untold_members().values() for c in cards})]
        frame = frame[~held]
    if rule.metric in DERIVED_CARDS and 2 <= len(everyone) < rule.params["min_peers"]:
        return few_cards(everyone, frame, untold, rule)
    if frame.empty or len(frame) < rule.params["min_peers"]:
        if untold.empty or len(everyone) < rule.params["min_peers"]:
            return []
        # every card measured is held by a named culprit (hgx-pair: both hosts named): the
        # untold hosts' cards are judged against every card measured
        return _told_apart(untold, everyone, rule, ctx, _Sides(rows, everyone, rule, ctx.culprit_cards(subject=False)))
    bad = _beyond(frame, frame, rule)
    sides = _Sides(rows, frame, rule, ctx.culprit_cards(subject=False)) if rule.metric in DERIVED_CARDS else None
    if sides is not None and bad.any():
        # a late card is its own culprit only where the evidence tells it from its host;
        # else its host is (every card of it started late, its mates only measured together)
        lone = bad.copy()
        lone[bad] = ~frame.loc[bad, "entity"].astype(str).map(sides.told_apart).astype(bool)
        out = entity_findings(frame, bad & ~lone, rule, expected=jsonable(frame["value"].median()))
        out += sides.host_findings(frame[lone])
    else:
        out = entity_findings(frame, bad, rule, expected=jsonable(frame["value"].median()))
    if not untold.empty and sides is not None:
        out += _told_apart(untold, frame, rule, ctx, sides)
    return out


def few_cards(everyone: pd.DataFrame, frame: pd.DataFrame, untold: pd.DataFrame, rule: "Rule") -> list[Finding]:
    """Too few cards measured for a spread across cards (fewer than ``min_peers``: over two
    ranks a robust z is +-0.6745 whatever the gap): each card against the others' median, in
    units of the cards' own sample spread (the metric's ``spread``: the noise of one
    collective's skew). The cost model's slow card starts ``(1/s - 1) 50 us`` late against
    2 us of noise; a link slows no card's start (r7-41: a 2-card host's one pair at 0.5 was
    "card or link, not localised", its slow card 50 us late beside its mate). A late card no
    culprit holds is its own finding; one a host holds that the explanation could not tell
    from its cards is too when a mate is on time (a slow host delays every card alike), and
    takes the host's verdict (:func:`sncheck.health.findings.merge_findings`)."""
    values = everyone["value"].astype(float)
    noise = float(everyone["spread"].astype(float).median()) if "spread" in everyone else math.nan
    if not noise or math.isnan(noise):
        return []
    entity = everyone["entity"].astype(str)
    others = pd.Series([values[entity != e].median() for e in entity], index=everyone.index)
    side = "below" if "below" in rule.params else "above"
    z = 0.6745 * (values - others) / noise
    gap = (values - others).abs()
    bad = (z < rule.params[side] if side == "below" else z > rule.params[side]) & (gap >= rule.params["min_excess"])
    late = set(entity[bad])
    held = set(untold["entity"].astype(str))
    mine = entity.isin(set(frame["entity"].astype(str)) - held) & bad
    out = entity_findings(everyone.assign(expected=others), mine, rule)
    for host in sorted({host_of(c) for c in late & held}):
        group = entity.map(host_of) == host
        if (group & ~bad).any():
            out += entity_findings(everyone.assign(expected=others), group & bad, rule)
    return out


def _beyond(frame: pd.DataFrame, peers: pd.DataFrame, rule: "Rule", share: float = 1.0) -> pd.Series:
    """Which entities of ``frame`` are beyond the rule's bar against ``peers`` (their
    median, and for a robust z their MAD); ``share`` of the way from neutral to the bar."""
    values, ref = frame["value"].astype(float), peers["value"].astype(float)
    med = ref.median()
    if rule.params["method"] == "ratio":
        s, neutral = values / med, 1.0
    else:
        mad = (ref - med).abs().median()
        s = 0.6745 * (values - med) / mad if mad and not math.isnan(mad) else pd.Series(0.0, index=values.index)
        neutral = 0.0
    side = "below" if "below" in rule.params else "above"
    bar = neutral + share * (rule.params[side] - neutral)
    over = s < bar if side == "below" else s > bar
    return over & ((values - med).abs() >= share * rule.params["min_excess"])


def _on_time(mine: pd.DataFrame, ref: pd.DataFrame, rule: "Rule") -> pd.DataFrame:
    """``ref`` moved to where a card of ``mine`` starts on time, where one starts earlier than
    all of ``ref`` by more than the bar: a card is never early (a launch is late or on time), so
    those peers are late themselves (a second slow host's cards, judged beside each other's
    lateness: sncheck.health.lateness), and their spread is kept about the on-time level."""
    if "above" not in rule.params or mine.empty or ref.empty:
        return ref
    values, level = mine["value"].astype(float), ref["value"].astype(float)
    early = values[(level.median() - values) >= rule.params["min_excess"]]
    if early.empty or _beyond(pd.DataFrame({"value": 2 * level.median() - early}), ref, rule).sum() == 0:
        return ref
    return ref.assign(value=level - level.median() + float(early.median()))


def _told_apart(untold: pd.DataFrame, peers: pd.DataFrame, rule: "Rule", ctx: DetectContext,
                sides: "_Sides") -> list[Finding]:
    """The cards of hosts (domains) the explanation could not tell from their cards, each
    judged against the peers: where some of a host's cards are beyond the bar and others
    measure healthy (inside half of it: an HGX host's eighth card, on time beside seven
    late ones), the late cards are findings of their own, and the host's finding yields to
    them (sncheck.health.findings.merge_findings), if the evidence tells each from its
    host (:meth:`_Sides.told_apart`). Cards all late, or none clearly on time (a faint
    host: all near the bar), say nothing the host's finding does not. Each host's cards are
    judged against the peers outside it where those are enough (``peers`` every card measured,
    all held by culprits: its own late cards would set the level and spread they are judged by)."""
    out: list[Finding] = []
    entity = untold["entity"].astype(str)
    for cards in ctx.untold_members().values():
        mine = untold[entity.isin(cards)]
        # the host's cards against the others' (every card measured held by a culprit: its own
        # late cards would set the level and the spread they are judged by)
        ref = peers[~peers["entity"].astype(str).isin(cards)]
        ref = _on_time(mine, ref if len(ref) >= rule.params["min_peers"] else peers, rule)
        told = sides if ref is peers else _Sides(sides.rows, ref, rule, sides.culprits)
        bad = _beyond(mine, ref, rule)
        bad[bad] = mine.loc[bad, "entity"].astype(str).map(told.told_apart).astype(bool)
        healthy = ~_beyond(mine, ref, rule, share=0.5)
        if bad.any() and (healthy & ~bad).any():
            out += entity_findings(mine, bad, rule, expected=jsonable(ref["value"].median()))
    return out


class _Sides:
    """Where a card's launch skew was measured: each card's median skew in the groups of
    its own host's cards only (``within``) and in the groups holding another host's card
    (``across``; the narrowing pairs count: they are what measures a suspect host's every
    card beside other hosts'). A card late beside other hosts' cards is told from its host
    only when the evidence separates them (issue 29):

    * it is late beside its own host's cards too (a slow host delays all its cards alike,
      so it cannot make one late beside its mates), or
    * a mate of it is measured on time beside other hosts' cards (inside half the bar):
      a healthy reference, not a mate on time only beside its equally slow mates (a host
      slowed whole: card 0 is late in the rail-0 groups it shares with other hosts, its
      mates measured only together look on time), nor beside cards a named culprit holds
      (another slowed host's: later still, so a slow mate is on time beside them).

    A card no mate of which has rank rows is all its host measured: nothing to tell apart."""

    def __init__(self, rows: pd.DataFrame, peers: pd.DataFrame, rule: "Rule", culprits: set[str]):
        self.rows, self.peers, self.rule, self.culprits = rows, peers, rule, culprits
        self.late_within: set[str] | None = None  # measured on the first late card only (600k rank rows)
        self.on_time_across: dict[str, set[str]] = {}  # host -> its cards on time beside other hosts'
        self.measured: dict[str, set[str]] = {}  # host -> its cards with rank rows

    def _measure(self) -> set[str]:
        # per cell (a card's rows in one group: sncheck.health.rankrows), never per rank row
        ranks = rank_rows(self.rows)
        host, hosts = pd.factorize(pd.Series([host_of(str(c)) for c in ranks.cards], dtype=object))
        at = host[ranks.card].astype(np.int64) + ranks.group.astype(np.int64) * max(len(hosts), 1)  # (group, host)

        def hosts_in(cells: np.ndarray) -> np.ndarray:
            """Per cell: how many hosts its group holds among the cells ``cells`` (a mask)."""
            pairs = np.unique(at[cells]) // max(len(hosts), 1)
            return np.bincount(pairs, minlength=len(ranks.groups))[ranks.group]

        every = np.ones(len(ranks.group), bool)
        across = hosts_in(every) > 1
        healthy = across  # a healthy reference: a group holding a card of another host no named culprit holds
        if self.culprits:
            ref = ~np.isin(ranks.cards.astype(str), list(self.culprits))[ranks.card]
            healthy = hosts_in(ref) - np.isin(at, at[ref]) > 0
        within, beside = (self._medians(ranks, cells) for cells in (~across, healthy))
        on_time = beside[~_beyond(pd.DataFrame({"value": beside}), self.peers, self.rule, share=0.5)]
        for c in on_time.index:
            self.on_time_across.setdefault(host_of(c), set()).add(c)
        for c in ranks.cards[np.unique(ranks.card)]:
            self.measured.setdefault(host_of(c), set()).add(c)
        return set(within[_beyond(pd.DataFrame({"value": within}), self.peers, self.rule)].index)

    @staticmethod
    def _medians(ranks: RankRows, cells: np.ndarray) -> pd.Series:
        codes, med, _, _ = ranks.card_medians(cells)
        return pd.Series(med, index=pd.Index(ranks.cards[codes], dtype=object))

    def told_apart(self, card: str) -> bool:
        if self.late_within is None:
            self.late_within = self._measure()
        host = host_of(card)
        return (card in self.late_within or bool(self.on_time_across.get(host, set()) - {card})
                or not self.measured.get(host, set()) - {card})

    def host_findings(self, lone: pd.DataFrame) -> list[Finding]:
        """One finding per host of late cards not told from it: the host, the cards its evidence."""
        unit = METRICS[self.rule.metric].unit
        out = []
        cards = lone["entity"].astype(str)
        for host, mine in lone.groupby(cards.map(host_of)):
            worst = mine.loc[mine["value"].astype(float).idxmax()]
            names = ", ".join(sorted(mine["entity"].astype(str)))
            message = (f"host {host}: {self.rule.summary} ({jsonable(worst['value'])} {unit} on {names}, "
                       f"late beside other hosts' cards; no card of it measured on time beside them, "
                       f"so not told from its host)")
            out.append(Finding(str(host), EntityKind.HOST, self.rule.layer, self.rule.name, self.rule.severity,
                               message, {"measured": jsonable(worst["value"]),
                                         "expected": jsonable(self.peers["value"].median()), "unit": unit,
                                         "cards": sorted(mine["entity"].astype(str))}))
        return out


DERIVED_CARDS = ("rank_skew",)  # per-card measurements of collectives: a slow card's compute shows in them


def _per_card_reference(cells: pd.DataFrame, per_card: dict, per_tier: dict) -> pd.Series:
    """A pair's baseline from its cards' own histories: the lower of the two where both have one,
    the one that has one, else its tier's (``per_tier``). A card a baseline left out (named in its
    run: review18 #10) is judged against its tier, never skipped; a baseline holding no level of any
    card measured here is another fleet's (H23-05): no pair has a reference. One lookup per tier."""
    a = np.full(len(cells), np.nan)
    b = np.full(len(cells), np.nan)
    tiers = cells["tier"].astype(str).to_numpy()
    for tier, values in per_card.items():  # per tier (a handful), never per pair
        at = tiers == tier
        if at.any() and values:
            table = pd.Series(values, dtype=float)
            a[at] = table.reindex(cells["src"][at].astype(str)).to_numpy()
            b[at] = table.reindex(cells["dst"][at].astype(str)).to_numpy()
    ref = np.fmin(a, b)
    if np.isnan(ref).any() and not np.isnan(ref).all():
        ref = np.where(np.isnan(ref), pd.Series(tiers).map(per_tier).astype(float).to_numpy(), ref)
    return pd.Series(ref, index=cells.index)


def baseline_regression(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """Below a fraction of a stored baseline (per tier, or per card where the baseline
    keeps one: a pair against the lower of its two cards' own histories)."""
    if not compares(rule, ctx):
        return []
    base = (ctx.baseline or {}).get("metrics", {}).get(rule.metric)
    cells = ctx.metric(rule.metric, rows)
    if cells.empty:
        return []
    base = base or {}
    if rule.params["key"] == "card" and base.get("card"):
        ref = _per_card_reference(cells, base["card"], base.get("tier") or {})  # tier -> card -> value
    else:
        ref = cells["tier"].astype(str).map(base.get("tier", {})).astype(float)
    known = ref.notna().to_numpy(bool)
    ok = ~cells["failed"].to_numpy(bool) if "failed" in cells else np.ones(len(cells), bool)
    unjudged = baseline_unjudged(cells["src"][ok & ~known], rule, ctx) if (ok & ~known).any() else []
    if not known.any():
        return unjudged
    return unjudged + explain_reference(cells[known], ref.to_numpy(float)[known], rule, ctx,
                                        expected=jsonable(ref.median()), listed=listed_nics(rows))


def counter_nonzero(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    if METRICS[rule.metric].shape == PAIRS:
        return explain_rules([rule], rows, ctx)
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    if "facts" in rule.params and "fact" in frame:
        frame = frame[frame["fact"].isin(rule.params["facts"])]
    elif "not_facts" in rule.params and "fact" in frame:
        frame = frame[~frame["fact"].isin(rule.params["not_facts"])]
    if frame.empty:
        return []
    return entity_findings(frame, frame["value"].fillna(0) > 0, rule, expected=0)


def threshold(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    if METRICS[rule.metric].shape == PAIRS:
        return explain_rules([rule], rows, ctx)
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    return entity_findings(frame, _compare(frame["value"].astype(float), rule), rule, expected=bound_of(rule)[1])


def missing_op(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    statuses = set(rule.params["statuses"])
    out = []
    for r in frame.itertuples():
        if r.status not in statuses:
            continue
        name = "host-unreachable" if r.status == "unreachable" else f"{rule.name}-{str(r.status).replace('_', '-')}"
        ev = {"measured": r.status, "expected": "measured", "unit": None}
        if isinstance(r.tool, str):
            ev["tool"] = r.tool
        if isinstance(r.fact, str):
            ev["fact"] = r.fact
        out.append(Finding(r.entity, r.kind, r.layer, name, rule.severity, r.message, ev, basis=Basis.NOT_MEASURED))
    return out


def golden_band(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """Replica curves against the reference: a per-step relative band plus a final-loss
    band; NaN or inf fails. A failing replica whose cards were then trained alone names
    the card whose own run diverged."""
    if not ctx.reference:
        return []
    verdicts = golden_verdicts(ctx.metric(rule.metric, rows), ctx.reference, ctx.topo)
    solo_bad = {v.group.removeprefix("card:"): v for v in verdicts.itertuples() if v.stage == "solo" and not v.ok}
    solo_ran = {v.group.removeprefix("card:") for v in verdicts.itertuples() if v.stage == "solo"}
    out = []
    for v in verdicts.itertuples():
        if v.stage != "group" or v.ok:
            continue
        culprits = [c for c in v.members if c in solo_bad]
        for c in culprits:
            out.append(Finding(c, EntityKind.CARD, "golden", rule.name, rule.severity,
                               f"card {c}: golden model {solo_bad[c].reason} when it takes part "
                               f"(replica {v.group}: {v.reason})",
                               {"measured": jsonable(solo_bad[c].final), "expected": jsonable(v.ref_final), "unit": "loss"}))
        if not culprits:
            # Every replica out of band gives a finding: no single card explains this one,
            # so it names the replica's host (or its supernode for a wider group).
            kind, _, entity = v.group.partition(":")
            ekind = "host" if kind == "host" else "card" if kind == "card" else "supernode"
            if ekind == "supernode":
                sns = sorted({ctx.topo.by_id[c].supernode for c in v.members if c in ctx.topo.by_id})
                entity = sns[0] if sns else v.group
            why = (" (its cards trained alone stay in band: no single card explains it)"
                   if set(v.members) & solo_ran else "")
            out.append(Finding(entity, EntityKind(ekind), "golden", rule.name, rule.severity, f"{v.group}: {v.reason}{why}",
                               {"measured": jsonable(v.final), "expected": jsonable(v.ref_final), "unit": "loss"}))
    return out


DEFAULT_BAND = {"step_rel": 0.05, "final_rel": 0.03}


def band_of(reference: dict) -> tuple[float, float]:
    """A golden reference's per-step and final-loss bands (relative), defaults filled in.

    The one home of golden-band judging: the verdict (:func:`golden_verdicts`) and the
    report's band drawing and step counts use this and :func:`outside_band`."""
    band = reference.get("band") or {}
    return (float(band.get("step_rel", DEFAULT_BAND["step_rel"])),
            float(band.get("final_rel", DEFAULT_BAND["final_rel"])))


def outside_band(loss, ref, rel: float) -> np.ndarray:
    """Per step: True where ``loss`` is outside ``ref`` ± ``rel`` (relative); a non-finite
    loss is outside any band."""
    loss, ref = np.asarray(loss, dtype=float), np.asarray(ref, dtype=float)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(loss) | (np.abs(loss - ref) > np.abs(ref) * rel)


def golden_verdicts(curves: pd.DataFrame, reference: dict, topo: Topology | None = None) -> pd.DataFrame:
    """Per replica: within band or not, and why (also used by the golden layer). Each replica
    against its size's curve (:func:`reference_of`); one whose size has none is left out (not
    judged: ``invariants.golden_judged`` says so)."""
    cols = ["group", "stage", "ok", "reason", "final", "ref_final", "members"]
    if curves.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for c in curves.itertuples():
        curve = reference_of(reference, replica_ranks_of(tuple(c.members), c.stage, topo))
        if curve is None:
            continue
        ref = np.asarray(curve["loss"], dtype=float)
        step_rel, final_rel = band_of(curve)
        loss = c.loss
        n = min(len(loss), len(ref))
        ok, reason = True, "within band"
        if not np.all(np.isfinite(loss)):
            ok, reason = False, f"loss became non-finite at step {int(np.argmax(~np.isfinite(loss)))}"
        elif c.stage == "solo":
            # A card alone trains on its own shard: judge divergence, not the band.
            if loss[-1] > max(ref[0], 1.5 * ref[n - 1]):
                ok, reason = False, f"loss diverged to {loss[-1]:.3g}"
        else:
            rel = np.abs(loss[:n] - ref[:n]) / np.abs(ref[:n])
            worst = int(np.argmax(rel))
            if outside_band(loss[n - 1:n], ref[n - 1:n], final_rel)[0]:
                ok, reason = False, f"final loss {loss[n - 1]:.4g} outside {final_rel:.1%} of {ref[n - 1]:.4g}"
            elif outside_band(loss[:n], ref[:n], step_rel).any():
                ok, reason = False, f"step {worst} loss {loss[worst]:.4g} outside {step_rel:.1%} of {ref[worst]:.4g}"
        out.append({"group": c.group, "stage": c.stage, "ok": ok, "reason": reason,
                    "final": float(loss[-1]), "ref_final": float(ref[n - 1]), "members": c.members})
    return pd.DataFrame(out, columns=cols)


BOUND = {"below": Param((int, float), None, "bad when the value is below this"),
         "above": Param((int, float), None, "bad when the value is above this")}


def _ratio_bar(key: str) -> Callable[[object, dict], str | None]:
    """The check of a ratio's ``key`` bar: one no ratio can cross (below 0 or less: a rule judging
    nothing, silently), or that every ratio crosses (above less than 0). robust_z is no ratio:
    its bars may be negative."""
    def check(value: object, node: dict) -> str | None:
        if node.get("method", "ratio") != "ratio" or not isinstance(value, (int, float)):
            return None
        if key == "below" and value <= 0:
            return (f"below: {value}: a ratio is 0 or more, never below it, so the rule would judge nothing "
                    "(to judge nothing, set enabled: false)")
        if key == "above" and value < 0:
            return f"above: {value}: every ratio (0 or more) is above it, so every entity would be a finding"
        return None
    return check


RATIO_BOUND = {k: replace(p, check=_ratio_bar(k)) for k, p in BOUND.items()}


def _at_least(key: str, low: float, most: float | None = None, what: str = "") -> Callable[[object, dict], str | None]:
    """The check of a count or bar below which (or above ``most``) the rule judges every entity or
    none (a hung rank only when 200% of its peers entered; a drift over 1 run; a noise bar of -3 z)."""
    def check(value: object, node: dict) -> str | None:  # noqa: ARG001 -- Param.check's signature
        if not isinstance(value, (int, float)) or (low <= value and (most is None or value <= most)):
            return None
        return f"{key}: {value}: {what or f'at least {low:g}'}, or the rule would judge every entity or none"
    return check


def _param(p: Param, key: str, low: float, most: float | None = None, what: str = "") -> Param:
    return replace(p, check=_at_least(key, low, most, what))


OPS: dict[str, Op] = {op.name: op for op in (
    Op("ratio_to_design", ratio_to_design, (PAIRS,), {
        **RATIO_BOUND,
        "per": Param(str, "pair", "judge each pair, or each scale-up domain by the median of its pairs "
                     "inside it (scope: supernode)", ("pair", "supernode")),
        "min_pairs": _param(Param(int, 3, "per supernode: fewest pairs of a domain in a tier for its median to count"),
                            "min_pairs", 1),
    }, ("below", "above"), "value over the tier's design value (e.g. below 0.8 of design bandwidth)"),
    Op("peer_outlier", peer_outlier, (PAIRS, ENTITIES), {
        **RATIO_BOUND,
        "method": Param(str, "ratio", "ratio to the peer median, or robust_z = 0.6745 (x - median) / MAD",
                        ("ratio", "robust_z")),
        "per": Param(str, "pair", "pairs: judge each pair, or each card by the median of its pairs",
                     ("pair", "card")),
        "min_peers": _param(Param(int, 3, "fewest peers for a median to mean anything"), "min_peers", 1),
        "min_excess": _param(Param((int, float), 0.0, "entities: also at least this far from the median"),
                             "min_excess", 0),
    }, ("below", "above"), "against peers of the same tier (pairs) or all entities"),
    Op("group_outlier", groups.group_outlier, (GROUPS,), {
        "below": replace(RATIO_BOUND["below"], default=groups.DEFAULTS["below"]),
        "design_below": _param(Param((int, float), groups.DEFAULTS["design_below"],
                                     "a group with no peer of its kind: below this of its tier's design"),
                               "design_below", 0.01, 1.0),
        "min_excess_us": _param(Param((int, float), groups.DEFAULTS["min_excess_us"],
                                      "and at least this many us slower than predicted"), "min_excess_us", 0),
        "noise_k": _param(Param((int, float), groups.DEFAULTS["noise_k"],
                                "and this many times the run's measured noise there (its peers' spread, the "
                                "repeats')"), "noise_k", 0),
    }, (), "each collective group at each size against its peer groups (cost model: their ranks)"),
    Op("baseline_regression", baseline_regression, (PAIRS,), {
        **BOUND, "key": Param(str, "tier", "compare per tier, or per card with its own history", ("tier", "card")),
    }, ("below", "above"), "against a stored baseline (sncheck baseline make)"),
    Op("counter_nonzero", counter_nonzero, (PAIRS, ENTITIES), {
        "facts": Param(list, None, "host_fact_failures: judge only these facts (default: every fact)"),
        "not_facts": Param(list, None, "host_fact_failures: judge every fact but these"),
    }, (),
       "any non-zero count: wrong results, corrupted payloads, fact errors"),
    Op("threshold", threshold, (PAIRS, ENTITIES), dict(BOUND), ("below", "above"), "a fixed bound on the value"),
    Op("missing", missing_op, (ENTITIES,), {
        "statuses": Param(list, ["unreachable", "timeout", "missing_tool", "parse_failed", "not_run", "error"],
                          "which statuses count", tuple(s.value for s in Status if s != Status.OK)),
    }, (), "not run, unreachable, timed out, tool missing, parse failed"),
    Op("golden_band", golden_band, (GROUPS,), {}, (), "golden loss curve within the reference band"),
    # In-job signals (sncheck watch): sncheck/health/injob.py
    Op("straggler", injob.straggler, (ENTITIES,), {
        "share_above": Param((int, float), 1.5, "last in collectives at least this many times its share (1/n)"),
        "blame_above": Param((int, float), 0.3, "and its group waited for it this share of its time"),
        "min_collectives": _param(Param(int, 8, "fewest collectives every member recorded"), "min_collectives", 1),
    }, (), "a rank that enters its group's collectives last, against its peers (Flight Recorder)"),
    Op("behind_peers", injob.behind_peers, (ENTITIES,), {
        "min_peer_share": _param(Param((int, float), 1.0, "share of its peers that entered the collective it did "
                                       "not"), "min_peer_share", 1e-9, 1, "a share is 0 to 1 (above 0)"),
    }, (), "a rank that never entered a collective its peers entered (Flight Recorder)"),
    Op("p2p_unmatched", injob.p2p_unmatched, (ENTITIES,), {}, (),
       "a rank that never posted the send or recv its peer posted (Flight Recorder, NCCL)"),
    Op("ras_states", injob.ras_states, (ENTITIES,), {
        "states": Param(list, list(RAS_STATES), "which RAS states count", RAS_STATES),
    }, (), "states NCCL RAS reports, on the rank's card"),
    # Against history: sncheck/health/drift.py (the state store's runs and baselines)
    Op("drift", drift, (PAIRS,), {
        **BOUND,
        "min_runs": _param(Param(int, 3, "runs on record, this one included, before a drift can be called"),
                           "min_runs", 2),
        "min_pairs": _param(Param(int, 3, "fewest pairs of a card in a tier for its median to count"), "min_pairs", 1),
        "z": _param(Param((int, float), 3.0, "the fall must exceed this many standard errors (its noise)"), "z", 0),
    }, ("below", "above"), "a card against its own first recorded level (history in the state store)"),
    Op("calibration_regression", calibration_regression, (PAIRS,), {
        **BOUND,
        "min_pairs": Param(int, 1, "fewest pairs of a card in a tier for its median to count"),
    }, ("below", "above"), "each card against the design values calibrated on this machine's first "
       "recorded run (local backend; state store)"),
    Op("card_baseline", card_baseline, (PAIRS,), {
        **BOUND,
        "min_pairs": Param(int, 1, "fewest pairs of a card in a tier for its median to count"),
    }, ("below", "above"), "each card's median over its pairs against its value in the baseline "
       "(for noisy pairs: shared CPU cores)"),
    # Fabric error counters (sncheck/health/fabric.py) and kernel logs (sncheck/health/kernel.py)
    Op("counter_growth", fabric.counter_growth, (ENTITIES,), {
        "counters": Param(list, REQUIRED, "the counters this rule judges "
                          "(replay_errors, recovery_errors, crc_errors; symbol_error, link_downed, ...)"),
        "above": _param(Param((int, float), 0, "fires when the value is above this"), "above", 0, None,
                        "every count (0 or more) is above it"),
        "of": Param(str, "growth", "growth: how much it grew during the run; before: its value when "
                                   "the run began", ("growth", "before")),
        "fact": Param(str, None, "whose counters: nvlink_errors (the cards' NVLinks) or ib_counters (the IB "
                                 "ports); unset, both (NVLink 5 and IB share counter names: "
                                 "local_link_integrity_errors)", tuple(fabric.COUNTER_FACTS)),
    }, (), "fabric error counters: their growth during the run, or their value before it"),
    Op("kernel_events", kernel.kernel_op, (ENTITIES,), {
        "source": Param(str, REQUIRED, "which reports: " + ", ".join(kernel.SOURCES), tuple(kernel.SOURCES)),
        "table": Param(dict, {}, "code or class -> {severity, action, summary, confirm, count, window, below, "
                                 "drivers, when} (or a list of them, the first that applies wins); a report the "
                                 "table does not list takes the rule's severity", check=kernel.check_table),
        "action": Param(str, None, "the action of a report the table does not list "
                        f"({', '.join(kernel.ACTIONS)})", kernel.ACTIONS),
    }, (), "kernel log reports (Xid, SXid, RmInitAdapter, PCIe AER, amdgpu RAS) new since the last run, "
           "by a table: per code or class, a severity, or a count within a window"),
)}
