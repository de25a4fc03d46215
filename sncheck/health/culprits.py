"""Findings from pair tests: the rules of one measurement kind become the explainer's bars
(:mod:`sncheck.health.explain`), and each culprit it names becomes one finding, judged per
tier: the rule of the most severe bar its factor is beyond, the tier it was found bad in,
that tier's measured and expected values, the pairs it explains, and the evidence that
separates it from its rivals."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sncheck.health.explain import (CARD, DESIGN, DOMAIN, LEVEL, PAIR, PEERS, RATE, Bar, Bars, CostModel, Culprit,
                                    Paths, Tier, beyond, reference)
from sncheck.health.levels import Level
from sncheck.health.findings import jsonable
from sncheck.health.metrics import METRICS, PAIRS, DetectContext, kind_rows
from sncheck.health.p2ptiers import LEVELS as P2P_LEVELS, RATES as P2P_RATES, p2p_tiers, rate_rows
from sncheck.health.pairratio import DESIGN_LEVEL
from sncheck.health.pairview import FabricPaths, FrameTier, beyond_bound, summarise
from sncheck.store.frames import RowFrames
from sncheck.health.rates import containers, explain_rates, rows_read
from sncheck.health.within import WITHIN, within_culprits
from sncheck.health.wholetier import WHOLE, at_design, whole_message
from sncheck.model import About, Basis, EntityKind, Finding, Severity, card_of, is_uplink
from sncheck.topology import SCALE_OUT, SCALE_UP

if TYPE_CHECKING:
    from sncheck.health.rules import Rule

EXPLAINED_OPS = ("ratio_to_design", "peer_outlier", "threshold", "counter_nonzero")
NEAR_RETEST = "the retest re-measures it until it is"  # a near suspect's message ends so (sncheck.run.nearbar)
# Measurements that mix both ends' compute and launch with the path (pairwise collectives):
# a pair with a culprit already named at one end says nothing of the other.
DERIVED = ("pair_busbw", "pair_small_time")


def _compare(values: pd.Series, rule: "Rule") -> pd.Series:
    if "below" in rule.params:
        return values < rule.params["below"]
    return values > rule.params["above"]


def side_of(rule: "Rule") -> str:
    """Which side of its bound is beyond it: "below" or "above" (a count's: above)."""
    return "below" if "below" in rule.params else "above"


def bound_of(rule: "Rule") -> tuple[str, float]:
    """A bounded rule's side and bound, as its rules file says them."""
    side = side_of(rule)
    return side, rule.params[side]


def bar_level(rule: "Rule") -> float:
    """A bounded rule's bar in ratio space, where below is always worse (latency ``above
    2.0`` is 0.5)."""
    side, bound = bound_of(rule)
    return float(bound) if side == "below" else (1.0 / bound if bound else math.inf)


def _median(values: np.ndarray) -> float:
    """The median skipping NaN (as ``Series.median``); NaN when nothing is left."""
    values = values[~np.isnan(values)]
    return float(np.median(values)) if len(values) else math.nan


# ------------------------------------------------------------------ rules -> kinds and bars
def kind_of(rule: "Rule") -> tuple[str, str, str] | None:
    """The measurement kind a pair rule judges: (metric, mode, side), or None for a rule
    the explainer does not take (entities, history, baselines). Level kinds are judged by
    ratio rules; a symptom a pair shows or not (a bound on a count, a robust z) by rate."""
    if METRICS[rule.metric].shape != PAIRS or rule.op not in EXPLAINED_OPS:
        return None
    side = side_of(rule)
    if rule.op == "ratio_to_design" or (rule.op == "peer_outlier" and rule.params.get("method") == "ratio"):
        return rule.metric, LEVEL, side
    return rule.metric, RATE, rule.name  # each symptom rule its own kind


def bar_of(rule: "Rule", order: int) -> Bar:
    if "below" not in rule.params and "above" not in rule.params:  # a count: any is beyond
        return Bar(rule.name, rule.severity.rank, order, PAIR, DESIGN, 0.0)
    level = bar_level(rule)
    per = rule.params.get("per", "pair")
    scope = {"pair": PAIR, "card": CARD, "supernode": DOMAIN}[per]
    ref = DESIGN if rule.op == "ratio_to_design" else PEERS
    min_pairs = int(rule.params.get("min_pairs", rule.params.get("min_peers", 1)))
    return Bar(rule.name, rule.severity.rank, order, scope, ref, float(level), min_pairs)


def group_rules(rules: list["Rule"]) -> list[list["Rule"]]:
    """The rules the explainer judges, one group per measurement kind (in the order of
    their first rule); every other rule stays alone."""
    groups: dict[object, list["Rule"]] = {}
    for i, rule in enumerate(rules):
        key = kind_of(rule)
        groups.setdefault(key if key is not None else ("alone", i), []).append(rule)
    return list(groups.values())


def _model(metric: str, ctx: DetectContext) -> CostModel:
    """A pair test's bandwidth: a card's speed shows over scale-out only through the NIC's cap (the
    scale-out design over the scale-up one); a pairwise collective's mixes that speed with the card's
    launch and latency, so there its factor lies between its inside one and 1 (a 0.5 card beside a slow
    leaf read 0.31 inside and 0.85 over scale-out; a 5x-latency card 0.78 on both); everything else
    (latency, a collective's small-message time) acts on every tier alike."""
    if metric == WITHIN:
        return CostModel(out_between=True)
    if metric != "p2p_bandwidth":
        return CostModel()
    up, out = ctx.design.get(SCALE_UP), ctx.design.get(SCALE_OUT)
    if up is None or out is None or not up.bandwidth_GBps or not out.bandwidth_GBps:
        return CostModel()
    return CostModel(out_cap=out.bandwidth_GBps / up.bandwidth_GBps)


def paths_of(ctx: DetectContext) -> FabricPaths:
    if ctx.cache is not None:
        key = ("_paths", id(ctx.topo))
        if key not in ctx.cache:
            ctx.cache[key] = FabricPaths(ctx.topo)
        return ctx.cache[key]
    return FabricPaths(ctx.topo)


# ------------------------------------------------------------------ the explainer, per kind
def explain_rules(rules: list["Rule"], rows: pd.DataFrame, ctx: DetectContext, last: bool = False) -> list[Finding]:
    """One measurement kind judged by its rules: the fewest culprits explaining every pair,
    each a finding of the rule whose bar it is beyond. ``last``: no later rule reads the
    metric, so its frame goes once the pair summaries are made (DetectContext.take)."""
    metric, mode, _side = kind_of(rules[0])  # type: ignore[misc]  # group_rules gives explained groups only
    if mode == LEVEL and metric in P2P_LEVELS:  # their pair summaries without their frames (health.p2ptiers)
        return _explain_p2p(rules, rows, ctx)
    if mode == RATE and metric in P2P_RATES and rules[0].op != "peer_outlier":  # the rows its search reads alone
        return explain_cells(rate_rows(metric, rows, ctx, *_bounds(rules[0])), rules, ctx, listed_nics(rows))
    # (no local holds the frame: explain_cells lets it go after summarising)
    return explain_cells((ctx.take if last else ctx.metric)(rules[0].metric, rows), rules, ctx, listed_nics(rows))


def _explain_p2p(rules: list["Rule"], rows: pd.DataFrame | RowFrames, ctx: DetectContext) -> list[Finding]:
    """:func:`explain_cells` of a p2p level metric, summarised from the evaluation's frame
    of pairs and the metric's value column (:func:`sncheck.health.p2ptiers.p2p_tiers`)."""
    data = p2p_tiers(rules[0].metric, rows, ctx)
    if data.empty:
        return []
    if any(r.op == "ratio_to_design" for r in rules) and data.no_design():
        rules = [r for r in rules if r.op != "ratio_to_design"]  # no design value: only peers judge
        if not rules:
            return []
    bars, how = _level(rules, ctx)
    tiers = data.summarise(ctx, **how)
    del data  # (the values of every row: the summaries are what the search reads)
    return _level_findings(tiers, bars, rules, ctx, listed_nics(rows))


def listed_nics(rows: pd.DataFrame | RowFrames) -> frozenset[str]:
    """The NICs a host's own listing names at fault: a failed host fact whose tool named the
    NIC (ibstat's port Down, ``sncheck.vendors.hostjudge.per_device``). The search tells
    them from their pairs' links by it (:func:`sncheck.health.explain.alone`)."""
    facts = kind_rows(rows, "host_fact", ("entity", "entity_kind", "ok"))
    if facts.empty or "entity_kind" not in facts:
        return frozenset()
    named = (facts["entity_kind"] == "nic").to_numpy(bool) & ~facts["ok"].fillna(True).astype(bool).to_numpy()
    return frozenset(facts["entity"][named].astype(str))


def explain_cells(cells: pd.DataFrame, rules: list["Rule"], ctx: DetectContext,
                  listed: frozenset[str] = frozenset()) -> list[Finding]:
    """:func:`explain_rules` over a metric's frame (columns src, dst, tier, value, failed,
    design); ``listed``: :func:`listed_nics`."""
    metric, mode, side = kind_of(rules[0])  # type: ignore[misc]  # group_rules gives explained groups only
    if metric in DERIVED and ctx.released:  # a released transient's pairs: its symptom, no other entity's
        cells = without(cells, set(ctx.released))
    if metric in DERIVED and ctx.known:
        # a pair through a known culprit is its symptom, never the other end's: the cards it holds,
        # and the pairs through a known link, switch or cable (which hold no card; r11-32's dead link,
        # named by connectivity, was named again in stress as its host "card or link, not localised")
        if metric == WITHIN:  # a bandwidth: its symptom only within the culprit's own factor (within.py)
            cells = within_culprits(cells, ctx)
        else:
            cells = without(cells, ctx.culprit_cards(subject=False))
            through = ctx.explained_pairs(cells["src"], cells["dst"]) if not cells.empty else None
            cells = cells[~through] if through is not None and through.any() else cells
    if cells.empty:
        return []
    if any(r.op == "ratio_to_design" for r in rules) and ("design" not in cells or cells["design"].isna().all()):
        rules = [r for r in rules if r.op != "ratio_to_design"]  # no design value: only peers judge
        if not rules:
            return []
    if mode == RATE:
        rule = rules[0]
        if "facts" in rule.params and "fact" in cells:
            cells = cells[cells["fact"].isin(rule.params["facts"])]
        if rule.op == "peer_outlier":  # a robust z per pair: the op's own scores say which pairs
            return _zscored(cells, rule, ctx)
        over, under = _bounds(rule)
        failed = cells["failed"].to_numpy(bool) if "failed" in cells else np.zeros(len(cells), bool)
        # only the pairs its search reads (rates.rows_read)
        cells = rows_read(cells, beyond_bound(cells["value"].to_numpy(float), failed, over, under))
        tiers = summarise(cells, ctx.topo, count_above=over, count_below=under, cache=ctx.cache)
        del cells  # the summaries are what the search reads (the frame may be its last reader's)
        bars = Bars(RATE, (bar_of(rule, 0),))
        expected = 0 if rule.op == "counter_nonzero" else bound_of(rule)[1]
        paths = paths_of(ctx)
        given = {c for c, r in ctx.shown if r == rule.name}  # a retest's other suspects named by it: found already
        given_codes = np.flatnonzero(np.isin(np.asarray(paths.cards, dtype=object), list(given))) if given else None
        return _findings(explain(tiers, paths, bars, given=given_codes), tiers, bars, rules, expected, paths)
    bars, how = _level(rules, ctx)
    tiers = summarise(cells, ctx.topo, cache=ctx.cache, **how)
    del cells  # the summaries are what the search reads (the frame may be its last reader's)
    return _level_findings(tiers, bars, rules, ctx, listed)


def _bounds(rule: "Rule") -> tuple[float | None, float | None]:
    """A symptom rule's bound on each repeat: (over, under), one of them None (a count: over 0)."""
    if rule.op == "counter_nonzero":
        return 0, None
    side, bound = bound_of(rule)
    return (bound, None) if side == "above" else (None, bound)


def _level(rules: list["Rule"], ctx: DetectContext) -> tuple[Bars, dict]:
    """A level kind's bars, and how its pairs are summarised (:func:`sncheck.health.pairview.summarise`'s
    keywords: a time inverted, the exceptions beyond the bars, a retest's subject apart)."""
    bars = Bars(LEVEL, tuple(bar_of(r, i) for i, r in enumerate(rules)))
    how = {"invert": kind_of(rules[0])[2] == "above",  # type: ignore[index]
           "exception": lambda _t, r, f, level: beyond(bars, r, f, level), "apart": ctx.apart_cards()}
    return bars, how | ({"design_level": DESIGN_LEVEL} if rules[0].metric in DERIVED else {})


def _level_findings(tiers: Mapping[str, FrameTier], bars: Bars, rules: list["Rule"], ctx: DetectContext,
                    listed: frozenset[str]) -> list[Finding]:
    """A level kind's search over its pair summaries, and its culprits' findings."""
    paths = paths_of(ctx)
    return _findings(explain(tiers, paths, bars, _model(rules[0].metric, ctx), listed), tiers, bars, rules, None,
                     paths)


def without(cells: pd.DataFrame, cards: set[str]) -> pd.DataFrame:
    """The pairs with neither end among ``cards``."""
    if not cards or cells.empty:
        return cells
    keep = ~(cells["src"].astype(str).isin(cards).to_numpy(bool) | cells["dst"].astype(str).isin(cards).to_numpy(bool))
    return cells if keep.all() else cells[keep]


def explain_reference(cells: pd.DataFrame, reference: np.ndarray, rule: "Rule", ctx: DetectContext,
                      expected=None, listed: frozenset[str] = frozenset()) -> list[Finding]:
    """Pairs judged against a stored reference (a baseline) by one ratio rule; ``listed``:
    :func:`listed_nics`, as the design and peer rules' search is told them."""
    side, _ = bound_of(rule)
    bar = Bar(rule.name, rule.severity.rank, 0, PAIR, DESIGN,
              bar_of(rule, 0).level)
    bars = Bars(LEVEL, (bar,))
    tiers = summarise(cells, ctx.topo, invert=side == "above", reference=reference,
                      exception=lambda _t, r, f, level: beyond(bars, r, f, level), cache=ctx.cache)
    paths = paths_of(ctx)
    return _findings(explain(tiers, paths, bars, _model(rule.metric, ctx), listed), tiers, bars, [rule], expected,
                     paths)


def explain(tiers: Mapping[str, Tier], paths: Paths, bars: Bars, model: CostModel = CostModel(),
            listed: frozenset[str] = frozenset(), given: np.ndarray | None = None) -> list[Culprit]:
    """The fewest culprits that explain every measurement of one kind (sncheck.health.explain);
    ``listed``: end entities a host's listing names at fault (:func:`listed_nics`); ``given``: card
    codes a symptom kind takes as culprits found already (:func:`sncheck.health.rates.explain_rates`)."""
    tiers = {t: x for t, x in tiers.items() if len(x.a)}
    if not tiers:
        return []
    return explain_rates(tiers, paths, given) if bars.mode == RATE else Level(tiers, paths, bars, model, listed).run()


def _zscored(cells: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    bad = pair_scores(cells, rule)
    tiers = summarise(cells.assign(value=bad.astype(float)), ctx.topo, count_above=0.5, cache=ctx.cache)
    bars = Bars(RATE, (bar_of(rule, 0),))
    paths = paths_of(ctx)
    return _findings(explain(tiers, paths, bars), tiers, bars, [rule], None, paths)


def flagged_findings(cells: pd.DataFrame, flagged: Mapping[str, set[str]], rule: "Rule", ctx: DetectContext,
                     expected=None) -> list[Finding]:
    """Cards a rule flagged on their own (each against its own reference: a baseline, a
    first calibration) as the fewest entities: a host or supernode every card of which is
    flagged, else each card; judged in the tiers they were flagged in."""
    paths = paths_of(ctx)
    index = paths.code
    codes = {index[c] for c in flagged if c in index}
    if not codes:
        return []
    tiers = summarise(cells, ctx.topo, invert="above" in rule.params,
                      exception=lambda _t, r, _f, _level: np.zeros(len(r), bool), cache=ctx.cache)
    bars = Bars(RATE, (bar_of(rule, 0),))
    culprits = []
    for kind, entity, members in containers(codes, set(), paths):
        marked = set().union(*(flagged[paths.cards[m]] for m in members.tolist()))
        touches = {t: x.pairs_of(members) for t, x in tiers.items() if t in marked}
        factors = {t: _median(tiers[t].ratio[at]) for t, at in touches.items() if len(at)}
        culprits.append(Culprit(entity, kind, factors, {}, touches, members=members))
    return _findings(culprits, tiers, bars, [rule], expected, paths)


def pair_scores(cells: pd.DataFrame, rule: "Rule") -> pd.Series:
    """Which pairs a robust-z pair rule finds beyond its bar: each pair's z against its
    tier's pairs (neutral where a tier has fewer than ``min_peers``); a failed pair is."""
    failed = cells["failed"].to_numpy(bool) if "failed" in cells else np.zeros(len(cells), bool)
    values = cells["value"].to_numpy(float)
    tiers = cells["tier"].astype(str).to_numpy()
    z = np.zeros(len(cells))
    for t in np.unique(tiers):
        at = (tiers == t) & ~failed
        v = values[at]
        med = _median(v)
        mad = _median(np.abs(v - med))
        if len(v) >= rule.params["min_peers"] and mad and math.isfinite(mad):
            z[at] = 0.6745 * (v - med) / mad
    return pd.Series(failed | _compare(pd.Series(z, index=cells.index), rule).to_numpy(bool), index=cells.index)


# ------------------------------------------------------------------ culprits -> findings
def _crossed(c: Culprit, bars: Bars, tiers: Mapping[str, FrameTier]) -> list[Bar]:
    """The bars a culprit's factor is beyond (in its worst tier)."""
    if bars.mode == RATE:
        return list(bars.bars)
    out = []
    for b in bars.bars:
        for t, f in c.factors.items():
            level = c.peers.get(t, tiers[t].level)
            level = level if math.isfinite(level) and level > 0 else 1.0
            measured = f * reference(tiers[t].level)  # in design units (explain.reference)
            value = measured if b.ref == DESIGN else measured / level
            if b.scope == DOMAIN and (c.kind not in ("supernode", "host") or t == SCALE_OUT):
                continue
            if b.scope == CARD and c.kind == "link":
                continue
            if value < b.level or (b.scope == PAIR and f <= 0):
                out.append(b)
                break
    return out


def _choose(c: Culprit, crossed: list[Bar]) -> Bar:
    fits = {"link": PAIR, "supernode": DOMAIN}.get(c.kind, CARD)
    return max(crossed, key=lambda b: (b.severity, b.scope == fits, -b.order))


def _findings(culprits: list[Culprit], tiers: Mapping[str, FrameTier], bars: Bars, rules: list["Rule"],
              expected, paths: FabricPaths) -> list[Finding]:
    by_name = {r.name: r for r in rules}
    out = []
    for c in culprits:
        if c.note == "near":
            near = _near_finding(c, bars, by_name, tiers, paths)
            out.extend([near] if near is not None else [])
            continue
        crossed = _crossed(c, bars, tiers)
        if not crossed:
            continue  # it explains measurements within every bar: noise around its level
        bar = _choose(c, crossed)
        out.append(_finding(c, by_name[bar.rule], tiers, expected, paths))
        if c.near and bar.scope == (PAIR if c.kind == "link" else CARD)                 and METRICS[by_name[bar.rule].metric].layer == "connectivity":
            _near_named(out[-1], c)
    return out


def _finding(c: Culprit, rule: "Rule", tiers: Mapping[str, FrameTier], expected, paths: FabricPaths) -> Finding:
    unit = METRICS[rule.metric].unit
    per_tier: dict[str, dict] = {}
    for t, at in c.touches.items():
        x = tiers[t]
        bad = c.explains.get(t, np.zeros(0, np.int64))
        shown = bad if len(bad) and np.isfinite(x.values[bad]).any() else at
        exp = expected if expected is not None else (x.design if math.isfinite(x.design) else _median(x.values))
        per_tier[t] = {"measured": jsonable(_median(x.values[shown]) if len(shown) else math.nan),
                       "expected": jsonable(exp), "bad_pairs": int(len(bad)), "pairs": int(len(at)),
                       "factor": jsonable(c.factors.get(t))}
    tier = c.tier
    ev: dict = {"measured": per_tier[tier]["measured"] if tier else None,
                "expected": per_tier[tier]["expected"] if tier else jsonable(expected), "unit": unit, "tier": tier,
                "bad_pairs": sum(d["bad_pairs"] for d in per_tier.values()),
                "pairs": sum(d["pairs"] for d in per_tier.values()),
                "factor": jsonable(c.factor), "worst": _worst(c, tiers, paths)}
    if len(per_tier) > 1:
        ev["tiers"] = per_tier
    if c.kind == "switch":  # the NICs it explains, the ports they reach it through (DESIGN.md)
        ev.update(paths.fabric.switch_evidence(c.entity, _switch_nics(c, tiers, paths)))
    if c.rivals:
        ev["rivals"] = [r.to_dict() for r in c.rivals]
    if not c.separated:
        ev["separated"] = False
    if c.note == "independent":
        ev["independent"] = True
    if c.note == WHOLE:
        ev[WHOLE] = True
    if c.note == "unlocalised":
        ev["localised"] = False
        ev["link"] = c.rivals[0].entity if c.rivals else None
    judged = per_tier.get(tier or "", {"bad_pairs": ev["bad_pairs"], "pairs": ev["pairs"]})
    message = _message(c, rule, ev, judged["bad_pairs"], judged["pairs"], tiers)
    if c.note == WHOLE and bar_level(rule) > 1.0 and at_design(c):  # no healthy pair meets the bar: the rule's
        return Finding(c.entity, EntityKind(c.kind), rule.layer, rule.name, rule.severity, message, ev,
                       basis=Basis.NOT_JUDGED, about=About.CHECK)
    return Finding(c.entity, EntityKind(c.kind), rule.layer, rule.name, rule.severity, message, ev)


def _near_finding(c: Culprit, bars: Bars, by_name: Mapping[str, "Rule"], tiers: Mapping[str, FrameTier],
                  paths: FabricPaths) -> Finding | None:
    """A card inside the card bar by less than its median's noise, or a link inside a pair
    bar by less than the tier's pair noise (pair measurements only: the retest re-measures
    its pairs until it is clear of the bar, sncheck.run.nearbar): a suspect of that bar's
    rule, saying how near it is."""
    [(tier, near)] = c.near.items()
    card = c.kind == "card"
    bar = max(bars.of(CARD, PEERS) if card else bars.of(PAIR, near["ref"]), key=lambda b: b.level)
    rule = by_name[bar.rule]
    if METRICS[rule.metric].layer != "connectivity":
        return None
    f = _finding(c, rule, tiers, None, paths)
    f.evidence.update(near_bar={k: jsonable(v) for k, v in near.items()}, bad_pairs=0)
    side, bound = bound_of(rule)
    what = f"of its peers on {near['pairs']} pairs" if card else ("of design" if near["ref"] == DESIGN
                                                                 else "of its tier's level")
    f.message = (f"{c.kind} {c.entity}: {near['ratio']:.3f} {what} ({tier}), inside {rule.name}'s bar ({side} {bound}) "
                 f"by less than its noise (2 x {near['se']:.3f}): not clear of it; {NEAR_RETEST}")
    return f


def _near_named(f: Finding, c: Culprit) -> None:
    """A card or link named beyond its bar by less than its noise (a connectivity bar): the
    retest re-measures it as a near suspect (sncheck.run.nearbar), never the one look of a
    measured symptom."""
    [(tier, near)] = c.near.items()
    f.evidence["near_bar"] = {k: jsonable(v) for k, v in near.items()}
    f.message += (f"; beyond the bar by less than its noise ({near['ratio']:.3f}, bar {near['bar']:.3f}, 2 x "
                  f"{near['se']:.3f}, {tier}): not clear of it; {NEAR_RETEST}")


def _switch_nics(c: Culprit, tiers: Mapping[str, FrameTier], paths: FabricPaths) -> list[str]:
    """The NICs a switch culprit explains: the ends of its explained pairs it serves (a
    leaf: those hanging off it; a spine: every end)."""
    codes: set[int] = set()
    for t, bad in c.explains.items():
        codes |= set(tiers[t].a[bad].tolist()) | set(tiers[t].b[bad].tolist())
    if len(c.members):
        codes &= set(c.members.tolist())
    return [paths.nic(k) for k in sorted(codes)]


def _worst(c: Culprit, tiers: Mapping[str, FrameTier], paths: FabricPaths) -> list[dict]:
    """The culprit's five worst explained pairs in the tier it was judged in, each with its
    measured value (its retest re-measures that tier: sncheck.run.confirm.symptom_tiers)."""
    rows = []
    for t, bad in c.explains.items():
        if t != c.tier:
            continue
        x = tiers[t]
        for i in bad[:64].tolist():
            rows.append((0.0 if x.failed[i] else float(x.ratio[i]), paths.link(int(x.a[i]), int(x.b[i])), x.values[i]))
    rows.sort(key=lambda r: r[0])
    return [{"link": link, "value": jsonable(v)} for _, link, v in rows[:5]]


def _scale(c: Culprit, rule: "Rule", tiers: Mapping[str, FrameTier]) -> float:
    """A factor of 1 of ``c`` in its judged tier in the units of ``rule`` (design, or its tier's level)."""
    x = tiers.get(c.tier or "")
    if x is None:
        return 1.0
    level = c.peers.get(x.name, x.level)
    ref = reference(x.level)
    return ref if rule.op == "ratio_to_design" or not (math.isfinite(level) and level > 0) else ref / level


def _message(c: Culprit, rule: "Rule", ev: dict, bad: int, n: int, tiers: Mapping[str, FrameTier]) -> str:
    """What the culprit is and how it was told apart; ``bad`` of ``n`` pairs in its tier."""
    where = f" ({ev['tier']})" if ev.get("tier") else ""
    if c.note == "unlocalised" and c.kind == "host":
        return (f"host {c.entity}: card or link, not localised: {' or '.join(r.entity for r in c.rivals)}: "
                f"{rule.summary}; each end measured in that pair alone")
    if c.note == "unlocalised":
        return (f"card or link, not localised: {c.entity} or {ev.get('link')}: {rule.summary}; measured against "
                f"too few peers to tell the card from its link")
    if c.kind == "link" and is_uplink(c.entity):  # a cable between two switch ports (DESIGN.md)
        what = f"cable {c.entity}: {rule.summary}{where} on {bad} of {n} pair tests routed over it (leaf to spine)"
    elif c.kind == "link" and c.note == "independent":
        what = f"link {c.entity}: {rule.summary}{where}, well below what its two ends explain"
    elif c.kind == "link":
        what = f"link {c.entity}: {rule.summary}{where} between two otherwise healthy cards"
    elif c.kind == "nic":
        share = f"on {bad} of {n}" if bad else f"across its {n}"
        what = (f"nic {c.entity} (serving {card_of(c.entity)}): {rule.summary} over the scale-out network "
                f"{share} pair tests there; its pairs inside the domain are healthy")
    elif c.note == WHOLE:
        what = whole_message(c, rule, ev, n, bar_level(rule), _scale(c, rule, tiers))
    elif c.kind == "switch":  # a faint one (its NICs' medians beyond the card bar, no pair beyond its bar): all
        what = f"switch {c.entity}: {rule.summary}{where} {f'on {bad} of' if bad else 'across its'} {n} pair tests through it"
    elif not bad:
        what = f"{c.kind} {c.entity}: {rule.summary}{where} across its pairs as a whole"
    else:
        what = f"{c.kind} {c.entity}: {rule.summary} on {bad} of {n} pair tests{where}"
    if c.rivals and c.note != "unlocalised":
        r = c.rivals[0]
        what += f"; not {r.kind} {r.entity}: {r.why}"
    return what


# ------------------------------------------------------------------ entity findings
def entity_findings(frame: pd.DataFrame, bad: pd.Series, rule: "Rule", expected=None) -> list[Finding]:
    unit = METRICS[rule.metric].unit
    out = []
    for r in frame[bad].itertuples():
        measured = getattr(r, "measured", r.value)
        exp = getattr(r, "expected", expected)
        message = getattr(r, "message", None) or f"{r.kind} {r.entity}: {rule.summary} ({jsonable(r.value)} {unit})"
        # a frame whose measured/expected are not in the metric's unit says theirs (``measured_unit``),
        # and the ratio judged goes beside them in the metric's (golden step time: seconds, "x golden")
        evidence = {"measured": jsonable(measured), "expected": jsonable(exp), "unit": getattr(r, "measured_unit", unit)}
        if evidence["unit"] != unit:
            evidence["ratio"], evidence["ratio_unit"] = jsonable(r.value), unit
        for extra in ("fact", "tool", "status"):
            if getattr(r, extra, None) is not None and not (isinstance(getattr(r, extra), float)
                                                             and math.isnan(getattr(r, extra))):
                evidence[extra] = getattr(r, extra)
        out.append(Finding(r.entity, EntityKind(r.kind), rule.layer, rule.name, rule.severity, message, evidence))
    return out


def flagged_tiers(levels: pd.DataFrame) -> dict[str, set[str]]:
    """Card -> the tiers it was found bad in, from rows with columns card and tier."""
    out: dict[str, set[str]] = {}
    for card, tier in zip(levels["card"].astype(str), levels["tier"].astype(str)):
        out.setdefault(card, set()).add(tier)
    return out


def lift_cards(findings: list[Finding], ctx: DetectContext) -> list[Finding]:
    """Card findings of one rule as the fewest entities: a host (or supernode) every card of
    which the rule flagged on its own (for one fact, where its tool named them) is one
    finding, its cards' findings its evidence (:func:`sncheck.health.rates.containers`)."""
    if not any(f.entity_kind == "card" for f in findings):
        return list(findings)  # no card to lift (most rules of an evaluation: no fleet's card index read)
    paths = paths_of(ctx)
    index = paths.code
    groups: dict[object, dict[int, Finding]] = {}
    out = []
    for f in findings:  # culprits only: an info finding is a record, never a culprit
        if f.entity_kind == "card" and f.entity in index and f.severity.rank >= Severity.WARNING.rank:
            groups.setdefault(f.evidence.get("fact"), {})[index[f.entity]] = f
        else:
            out.append(f)
    for by_code in groups.values():
        for kind, entity, members in containers(set(by_code), set(), paths):
            cards = [by_code[m] for m in members.tolist()]
            if kind == "card":
                out.append(cards[0])
                continue
            worst = max(cards, key=lambda f: f.severity.rank)
            out.append(Finding(entity, EntityKind(kind), worst.layer, worst.rule, worst.severity,
                               f"{kind} {entity}: every card of it on its own: {worst.message}",
                               {**{k: v for k, v in worst.evidence.items() if k != "related"}, "every_card": True,
                                "related": [{"layer": f.layer, "rule": f.rule, "severity": f.severity,
                                             "message": f.message, "entity": f.entity,
                                             "evidence": {k: v for k, v in f.evidence.items() if k != "related"}}
                                            for f in cards]}))
    return out
