"""The slow-drift detector: a card whose own level falls run after run.

Greyhound and FALCON look for sustained mean shifts rather than single bad samples.
Here a card (per link tier) is judged against its own first recorded level in the
state store, not against its peers: a card at 0.94 of its first night passes every
per-run bar (it is within 7% of its peers) and still gets a warning when

* the card has at least ``min_runs`` runs on record, this one included;
* every run in the last ``min_runs`` (after the first) is below the first level;
* this run is below ``below`` x the first level (``above`` for latency);
* and the fall is beyond its noise: more than ``z`` robust standard errors of the two
  medians (``sqrt(se_first^2 + se_now^2)``).

The history comes from :mod:`sncheck.health.history` (earlier runs' ``card`` summaries); a run
without ``--state-dir`` has none and the op finds nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from sncheck.config.inventory import tier_design
from sncheck.health.findings import jsonable
from sncheck.health.metrics import METRICS, DetectContext
from sncheck.health.culprits import flagged_findings, flagged_tiers
from sncheck.health.summaries import card_levels
from sncheck.model import About, Basis, EntityKind, Finding, Severity
from sncheck.topology import host_of, natural_key

if TYPE_CHECKING:
    from sncheck.health.rules import Rule


def card_series(ctx: DetectContext, card: str, key: str) -> list[tuple[float, float]]:
    """Earlier (value, spread) of ``card``'s summary ``key``, oldest first."""
    hist = (ctx.history or {}).get("cards", {}).get(card, {}).get(key) or []
    return [(v, s) for v, s in hist if v is not None and math.isfinite(v)]


def compares(rule: "Rule", ctx: DetectContext) -> bool:
    """Whether a rule against history has what it compares with in this context (a stored
    baseline of its metric, per card for card_baseline; the state store's history; this
    machine's first calibration). Without it the rule reads no rows and finds nothing, so
    an evaluation keeps no metric frame for it (sncheck.health.rules.evaluate)."""
    if rule.op in ("baseline_regression", "card_baseline"):
        # a baseline named: the rule runs, and says what it holds nothing for (baseline_unjudged)
        return ctx.baseline is not None
    if rule.op == "drift":
        return bool(ctx.history)
    if rule.op == "calibration_regression":
        return bool((ctx.history or {}).get("calibration"))
    return True


def drift(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    if not compares(rule, ctx):
        return []
    cells = ctx.metric(rule.metric, rows)
    if cells.empty:
        return []
    p = rule.params
    low = "below" in p
    bound = p["below"] if low else p["above"]
    # A card a named culprit holds (a slow host's) has drifted by that culprit: its symptom;
    # and its pairs say nothing of the cards at their other ends. So do the pairs through a
    # named link or switch (a slow spine's): its symptom, not their ends' drift.
    # (a retest's own suspect is judged: only the others are known)
    cells = cells[~ctx.explained_pairs(cells["src"], cells["dst"])]
    now = card_levels(cells, ctx.culprit_cards())
    now = now[(now["n"] >= p["min_pairs"]) & ~now["card"].isin(ctx.culprit_cards(subject=False))]
    unit = METRICS[rule.metric].unit
    worst: dict[str, tuple[float, Finding]] = {}
    for r in now.itertuples():
        earlier = card_series(ctx, r.card, f"{rule.metric}/{r.tier}")
        points = earlier + [(float(r.median), float(r.se))]
        if len(points) < p["min_runs"] or not earlier:
            continue
        first, first_se = points[0]
        if not first or not math.isfinite(first):
            continue
        ratio = r.median / first
        window = points[-(p["min_runs"] - 1):]
        sustained = all((v < first) if low else (v > first) for v, _ in window)
        noise = math.hypot(first_se, r.se)
        beyond = abs(r.median - first) > p["z"] * noise
        bad = ratio < bound if low else ratio > bound
        if not (sustained and beyond and bad):
            continue
        series = [jsonable(v) for v, _ in points]
        f = Finding(r.card, EntityKind.CARD, rule.layer, rule.name, rule.severity,
                    f"card {r.card}: {rule.summary}: {r.tier} pairs at {ratio:.1%} of its first recorded level "
                    f"over {len(points)} runs ({' -> '.join(f'{v:.4g}' for v, _ in points)} {unit}; "
                    f"noise {noise:.2g})",
                    {"measured": jsonable(r.median), "expected": jsonable(first), "unit": unit,
                     "tier": r.tier, "ratio_to_first": jsonable(ratio), "runs": len(points),
                     "series": series, "noise": jsonable(noise)})
        score = -abs(r.median - first) / noise if noise > 0 else -math.inf  # the best-evidenced tier
        if r.card not in worst or score < worst[r.card][0]:
            worst[r.card] = (score, f)
    return [f for _, f in worst.values()]


def calibration_regression(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """Each card's median pair value against the design values this machine calibrated
    on its first recorded run (the local backend calibrates on every run, so judging a
    run only against itself cannot see a machine that became uniformly slower).
    Flagged cards are localized like any card: all cards of the host alike is the host."""
    if not compares(rule, ctx):
        return []
    first = (ctx.history or {}).get("calibration") or {}
    key = "bandwidth_GBps" if METRICS[rule.metric].unit == "GB/s" else "latency_us"
    cells = ctx.metric(rule.metric, rows)
    if cells.empty:
        return []

    def ref(tier: str) -> float:
        d = tier_design(first, tier) or {}
        v = d.get(key)
        return float(v) if v else math.nan

    p = rule.params
    low = "below" in p
    levels = card_levels(cells)
    levels = levels[levels["n"] >= p["min_pairs"]]
    if levels.empty:
        return []
    levels = levels.assign(ref=levels["tier"].map(ref))
    ratio = levels["median"] / levels["ref"]
    bad = (ratio < p["below"]) if low else (ratio > p["above"])
    flagged = flagged_tiers(levels[bad.fillna(False).to_numpy(bool)])
    if not flagged:
        return []
    ok = cells[~cells["failed"]] if "failed" in cells else cells
    expected = jsonable(levels["ref"].median())
    out = flagged_findings(ok, flagged, rule, ctx, expected=expected)
    for f in out:
        f.evidence["first_calibration"] = first
    return out


def card_baseline(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """Each card's median pair value (per tier) against its value in the baseline.

    The median over a card's pairs, not each pair: where single pairs are noisy (worker
    ranks sharing CPU cores move 20-30% pair to pair), a per-pair bar near the baseline
    flags noise, while a card (or a whole machine) that became slower moves its median."""
    if not compares(rule, ctx):
        return []
    base = ((ctx.baseline or {}).get("metrics") or {}).get(rule.metric) or {}
    per_card = base.get("card") or {}
    cells = ctx.metric(rule.metric, rows)
    if cells.empty:
        return []
    p = rule.params
    levels = card_levels(cells)
    levels = levels[levels["n"] >= p["min_pairs"]]
    ref = pd.Series([(per_card.get(t) or {}).get(c, math.nan) for c, t in zip(levels["card"], levels["tier"])],
                    index=levels.index, dtype=float)
    if ref.notna().any():  # a card it has no level of (left out: named in its run, review18 #10): its tier's
        per_tier = base.get("tier") or {}
        ref = ref.fillna(levels["tier"].astype(str).map(per_tier).astype(float))
    unjudged = baseline_unjudged(levels["card"][ref.isna()], rule, ctx) if ref.isna().any() else []
    if ref.isna().all():
        return unjudged
    ratio = levels["median"] / ref
    bad = (ratio < p["below"]) if "below" in p else (ratio > p["above"])
    flagged = flagged_tiers(levels[bad.fillna(False).to_numpy(bool)])
    if not flagged:
        return unjudged
    ok = cells[~cells["failed"]] if "failed" in cells else cells
    out = flagged_findings(ok, flagged, rule, ctx, expected=jsonable(ref.median()))
    for f in out:
        f.evidence["baseline_runs"] = (ctx.baseline or {}).get("runs")
    return unjudged + out


BASELINE_NOT_JUDGED = "baseline-not-judged"


def baseline_unjudged(cards: Iterable[str], rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """A baseline named for the run that holds no value for any pair or card the rule measured (its
    metric missing or misspelt, its ``metrics`` empty, only other cards' values): the rule judged
    nothing and the run passed, exit 0 (hostile round 23, H23-05). Not judged is never a pass: one
    critical finding a supernode, as a baseline that cannot be found (run.runner.baseline_not_judged)."""
    sns = sorted({ctx.topo.supernode_of_host(host_of(c)) for c in map(str, cards)}, key=natural_key)
    name = (ctx.baseline or {}).get("_path") or (ctx.baseline or {}).get("name") or "the baseline"
    return [Finding(sn, EntityKind.SUPERNODE, rule.layer, BASELINE_NOT_JUDGED, Severity.CRITICAL,
                    f"{sn} not compared with {name} by {rule.name}: it holds no {rule.metric} value for any "
                    "pair or card measured here (made from other runs' metrics or cards?)",
                    {"measured": "nothing to compare with", "expected": f"{rule.metric} in {name}", "unit": None},
                    basis=Basis.NOT_JUDGED, about=About.CHECK)
            for sn in sns]


BASELINE_OPS = ("baseline_regression", "card_baseline")


def baseline_unmeasured(name: str, rules: Iterable["Rule"], rules_source: str, playbook: str,
                        layers: list[str], supernodes: Iterable[str]) -> list[Finding]:
    """A baseline named for a run whose playbook measures no metric a rule against a baseline
    reads (the nightly's stress and golden layers, no pair rows): nothing was compared and the
    run passed, exit 0, a fleet-wide 20% regression with it (reviews19 #5). The mirror of
    :func:`baseline_unjudged` (a baseline that holds nothing measured): one critical finding a
    supernode, the metrics named. A baseline holds connectivity's pair levels only
    (:data:`sncheck.health.baseline.BASELINE_METRICS`)."""
    readers = [r for r in rules if r.op in BASELINE_OPS]
    read = sorted({r.metric for r in readers if r.layer in (*layers, "any")})
    if read or not layers:
        return []
    if readers:
        wanted = sorted({r.metric for r in readers})
        why = (f"{playbook} measures no {' or '.join(wanted)} (its layers: {', '.join(layers)}; "
               f"the rules read it from the {' and '.join(sorted({r.layer for r in readers}))} layer)")
    else:
        why = f"the rules {rules_source} hold no rule against a baseline (op {' or '.join(BASELINE_OPS)})"
    return [Finding(sn, EntityKind.SUPERNODE, layers[0], BASELINE_NOT_JUDGED, Severity.CRITICAL,
                    f"{sn} not compared with baseline {name}: {why}: the baseline was not compared. Run a "
                    "playbook that measures what it holds against it, or name no baseline for this one.",
                    {"measured": "nothing the baseline holds", "expected": f"baseline {name}", "unit": None},
                    basis=Basis.NOT_JUDGED, about=About.CHECK)
            for sn in supernodes]
