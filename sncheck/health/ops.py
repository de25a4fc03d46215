"""Rule ops: pure functions ``(rows, rule, ctx) -> list[Finding]``.

Each op reads its rule's metric (see :mod:`metrics`), decides what is bad, and names
culprits. Over pair metrics the bad pairs are localized (C4D): one bad pair is a link,
a card bad with most partners is the card, all cards of a host alike is the host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np
import pandas as pd

from .findings import Finding
from .localize import localize
from .metrics import ENTITIES, GROUPS, METRICS, PAIRS, DetectContext, jsonable

if TYPE_CHECKING:
    from .rules import Rule

REQUIRED = object()


@dataclass(frozen=True)
class Param:
    type: type | tuple
    default: object = REQUIRED
    help: str = ""
    choices: tuple = ()


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


def _compare(values: pd.Series, rule: "Rule") -> pd.Series:
    if "below" in rule.params:
        return values < rule.params["below"]
    return values > rule.params["above"]


def _bound(rule: "Rule") -> tuple[str, float]:
    return ("below", rule.params["below"]) if "below" in rule.params else ("above", rule.params["above"])


# ------------------------------------------------------------------ findings from pairs
def _touching(cells: pd.DataFrame, entity: str, kind: str, ctx: DetectContext) -> pd.DataFrame:
    if kind == "link":
        return cells[cells["link"] == entity]
    members = ({entity} if kind == "card" else set(ctx.topo.cards_of_host(entity)) if kind == "host"
               else set(ctx.topo.cards_of_supernode(entity)))
    return cells[cells["src"].isin(members) | cells["dst"].isin(members)]


def pair_findings(cells: pd.DataFrame, rule: "Rule", ctx: DetectContext, flagged: set[str] = frozenset(),
                  expected: float | None = None) -> list[Finding]:
    """Localize bad pairs (column ``bad``) and cards flagged by a score into findings."""
    unit = METRICS[rule.metric].unit
    out = []
    for c in localize(cells, ctx.topo, flagged):
        touching = _touching(cells, c.entity, c.kind, ctx)
        if "design" in touching and expected is None:
            exp = jsonable(touching["design"].median())
        else:
            exp = jsonable(expected if expected is not None else touching["value"].median())
        measured = jsonable((c.cells if not c.cells.empty else touching)["value"].median())
        failed = int(c.cells["failed"].sum()) if "failed" in c.cells else 0
        if c.kind == "link":
            what = f"link {c.entity}: {rule.summary} between two otherwise healthy cards"
        elif c.cells.empty:
            what = f"{c.kind} {c.entity}: {rule.summary} across its pairs as a whole"
        else:
            what = f"{c.kind} {c.entity}: {rule.summary} on {len(c.cells)} of {len(touching)} pair tests"
        if failed:
            what += f" ({failed} carried nothing)"
        worst = c.cells.sort_values("value").head(5) if not c.cells.empty else c.cells
        out.append(Finding(c.entity, c.kind, rule.layer, rule.name, rule.severity, what, {
            "measured": measured, "expected": exp, "unit": unit,
            "bad_pairs": int(len(c.cells)), "pairs": int(len(touching)),
            "worst": [{"link": r.link, "value": jsonable(r.value)} for r in worst.itertuples()],
        }))
    return out


def entity_findings(frame: pd.DataFrame, bad: pd.Series, rule: "Rule", expected=None) -> list[Finding]:
    unit = METRICS[rule.metric].unit
    out = []
    for r in frame[bad].itertuples():
        measured = getattr(r, "measured", r.value)
        exp = getattr(r, "expected", expected)
        message = getattr(r, "message", None) or f"{r.kind} {r.entity}: {rule.summary} ({jsonable(r.value)} {unit})"
        evidence = {"measured": jsonable(measured), "expected": jsonable(exp), "unit": unit}
        for extra in ("fact", "tool", "status"):
            if getattr(r, extra, None) is not None and not (isinstance(getattr(r, extra), float)
                                                             and math.isnan(getattr(r, extra))):
                evidence[extra] = getattr(r, extra)
        out.append(Finding(r.entity, r.kind, rule.layer, rule.name, rule.severity, message, evidence))
    return out


# ------------------------------------------------------------------------------- the ops
def ratio_to_design(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    cells = ctx.metric(rule.metric, rows)
    if cells.empty or "design" not in cells or cells["design"].isna().all():
        return []
    bad = cells["failed"] | _compare(cells["value"] / cells["design"], rule)
    return pair_findings(cells.assign(bad=bad), rule, ctx)


def peer_outlier(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    metric = METRICS[rule.metric]
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    method, per = rule.params["method"], rule.params["per"]
    min_peers, min_excess = rule.params["min_peers"], rule.params["min_excess"]

    def score(values: pd.Series) -> pd.Series:
        if method == "ratio":
            return values / values.median()
        return robust_z(values)

    if metric.shape == ENTITIES:
        if len(frame) < min_peers:
            return []
        s = score(frame["value"].astype(float))
        excess = (frame["value"] - frame["value"].median()).abs()
        bad = _compare(s, rule) & (excess >= min_excess)
        return entity_findings(frame.assign(value=frame["value"]), bad, rule, expected=jsonable(frame["value"].median()))

    ok = frame[~frame["failed"]].copy()
    ok["score"] = ok.groupby("tier")["value"].transform(lambda v: score(v) if len(v) >= min_peers else 1.0 if method == "ratio" else 0.0)
    if per == "pair":
        bad = frame["failed"] | frame.index.isin(ok.index[_compare(ok["score"], rule)])
        return pair_findings(frame.assign(bad=bad), rule, ctx)
    card_score = _card_scores(ok, method, min_peers)
    flagged = set(card_score.index[_compare(card_score, rule)])
    if not flagged:
        return []
    return pair_findings(ok.assign(bad=False), rule, ctx, flagged=flagged)


SMALL_DOMAIN_PAIRS = 256


def _card_scores(ok: pd.DataFrame, method: str, min_peers: int) -> pd.Series:
    """Per card: the median of its own row and column (so one bad link never moves it)
    against the median of the pairs it is not part of.

    Leaving the card out matters in a small domain: with 4 cards a slow card is half of
    all pairs and drags the tier median towards itself. In a big domain a card's share
    of the pairs is negligible and the tier score is used as it is.
    """
    both = pd.concat([ok[["src", "value", "score", "tier"]].rename(columns={"src": "card"}),
                      ok[["dst", "value", "score", "tier"]].rename(columns={"dst": "card"})])
    counts = both.groupby("card", observed=True)["score"].count()
    scores = both.groupby("card", observed=True)["score"].median()
    sizes = ok.groupby("tier", observed=True)["value"].transform("size")
    small = ok[sizes < SMALL_DOMAIN_PAIRS]
    if method == "ratio" and not small.empty:
        for card in pd.unique(pd.concat([small["src"], small["dst"]])):
            mine = (small["src"] == card) | (small["dst"] == card)
            others = small.loc[~mine, "value"]
            if len(others) >= 1 and mine.sum() >= min_peers:
                scores[card] = small.loc[mine, "value"].median() / others.median()
    return scores[counts >= min_peers]


def baseline_regression(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """Below a fraction of a stored baseline (per tier, or per card where the baseline
    keeps one: a card judged against its own history)."""
    base = (ctx.baseline or {}).get("metrics", {}).get(rule.metric)
    cells = ctx.metric(rule.metric, rows)
    if not base or cells.empty:
        return []
    if rule.params["key"] == "card" and base.get("card"):
        per_card = base["card"]  # tier -> card -> value
        ref = pd.Series([min(per_card.get(t, {}).get(a, math.nan), per_card.get(t, {}).get(b, math.nan))
                         for a, b, t in zip(cells["src"], cells["dst"], cells["tier"])], index=cells.index)
    else:
        ref = cells["tier"].map(base.get("tier", {}))
    bad = cells["failed"] | _compare(cells["value"] / ref, rule)
    return pair_findings(cells.assign(bad=bad.fillna(False)), rule, ctx, expected=jsonable(ref.median()))


def counter_nonzero(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    if "facts" in rule.params and "fact" in frame:
        frame = frame[frame["fact"].isin(rule.params["facts"])]
    elif "not_facts" in rule.params and "fact" in frame:
        frame = frame[~frame["fact"].isin(rule.params["not_facts"])]
    if frame.empty:
        return []
    bad = frame["value"].fillna(0) > 0
    if METRICS[rule.metric].shape == PAIRS:
        return pair_findings(frame.assign(bad=bad), rule, ctx, expected=0)
    return entity_findings(frame, bad, rule, expected=0)


def threshold(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    bad = _compare(frame["value"].astype(float), rule)
    if METRICS[rule.metric].shape == PAIRS:
        return pair_findings(frame.assign(bad=bad), rule, ctx, expected=_bound(rule)[1])
    return entity_findings(frame, bad, rule, expected=_bound(rule)[1])


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
        out.append(Finding(r.entity, r.kind, r.layer, name, rule.severity, r.message, ev))
    return out


def golden_band(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """Replica curves against the reference: a per-step relative band plus a final-loss
    band; NaN or inf fails. A failing replica whose cards were then trained alone names
    the card whose own run diverged."""
    if not ctx.reference:
        return []
    verdicts = golden_verdicts(ctx.metric(rule.metric, rows), ctx.reference)
    solo_bad = {v.group.removeprefix("card:"): v for v in verdicts.itertuples() if v.stage == "solo" and not v.ok}
    solo_ran = {v.group.removeprefix("card:") for v in verdicts.itertuples() if v.stage == "solo"}
    out = []
    for v in verdicts.itertuples():
        if v.stage != "group" or v.ok:
            continue
        culprits = [c for c in v.members if c in solo_bad]
        for c in culprits:
            out.append(Finding(c, "card", "golden", rule.name, rule.severity,
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
            out.append(Finding(entity, ekind, "golden", rule.name, rule.severity, f"{v.group}: {v.reason}{why}",
                               {"measured": jsonable(v.final), "expected": jsonable(v.ref_final), "unit": "loss"}))
    return out


def golden_verdicts(curves: pd.DataFrame, reference: dict) -> pd.DataFrame:
    """Per replica: within band or not, and why (also used by the golden layer)."""
    cols = ["group", "stage", "ok", "reason", "final", "ref_final", "members"]
    if curves.empty:
        return pd.DataFrame(columns=cols)
    ref = np.asarray(reference["loss"], dtype=float)
    band = reference.get("band", {})
    step_rel, final_rel = band.get("step_rel", 0.05), band.get("final_rel", 0.03)
    out = []
    for c in curves.itertuples():
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
            if abs(loss[n - 1] - ref[n - 1]) / abs(ref[n - 1]) > final_rel:
                ok, reason = False, f"final loss {loss[n - 1]:.4g} outside {final_rel:.1%} of {ref[n - 1]:.4g}"
            elif rel[worst] > step_rel:
                ok, reason = False, f"step {worst} loss {loss[worst]:.4g} outside {step_rel:.1%} of {ref[worst]:.4g}"
        out.append({"group": c.group, "stage": c.stage, "ok": ok, "reason": reason,
                    "final": float(loss[-1]), "ref_final": float(ref[n - 1]), "members": c.members})
    return pd.DataFrame(out, columns=cols)


BOUND = {"below": Param((int, float), None, "bad when the value is below this"),
         "above": Param((int, float), None, "bad when the value is above this")}

OPS: dict[str, Op] = {op.name: op for op in (
    Op("ratio_to_design", ratio_to_design, (PAIRS,), dict(BOUND), ("below", "above"),
       "value over the tier's design value (e.g. below 0.8 of design bandwidth)"),
    Op("peer_outlier", peer_outlier, (PAIRS, ENTITIES), {
        **BOUND,
        "method": Param(str, "ratio", "ratio to the peer median, or robust_z = 0.6745 (x - median) / MAD",
                        ("ratio", "robust_z")),
        "per": Param(str, "pair", "pairs: judge each pair, or each card by the median of its pairs",
                     ("pair", "card")),
        "min_peers": Param(int, 3, "fewest peers for a median to mean anything"),
        "min_excess": Param((int, float), 0.0, "entities: also at least this far from the median"),
    }, ("below", "above"), "against peers of the same tier (pairs) or all entities"),
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
                          "which statuses count"),
    }, (), "not run, unreachable, timed out, tool missing, parse failed"),
    Op("golden_band", golden_band, (GROUPS,), {}, (), "golden loss curve within the reference band"),
)}


def _register_drift() -> None:
    from .drift import calibration_regression, card_baseline, drift  # registered here so OPS lists every op

    OPS["drift"] = Op("drift", drift, (PAIRS,), {
        **BOUND,
        "min_runs": Param(int, 3, "runs on record, this one included, before a drift can be called"),
        "min_pairs": Param(int, 3, "fewest pairs of a card in a tier for its median to count"),
        "z": Param((int, float), 3.0, "the fall must exceed this many standard errors (its noise)"),
    }, ("below", "above"), "a card against its own first recorded level (history in the state store)")
    OPS["calibration_regression"] = Op("calibration_regression", calibration_regression, (PAIRS,), {
        **BOUND,
        "min_pairs": Param(int, 1, "fewest pairs of a card in a tier for its median to count"),
    }, ("below", "above"), "each card against the design values calibrated on this machine's first "
       "recorded run (local backend; state store)")
    OPS["card_baseline"] = Op("card_baseline", card_baseline, (PAIRS,), {
        **BOUND,
        "min_pairs": Param(int, 1, "fewest pairs of a card in a tier for its median to count"),
    }, ("below", "above"), "each card's median over its pairs against its value in the baseline "
       "(for noisy pairs: shared CPU cores)")


_register_drift()

