"""Rule ops: pure functions ``(rows, rule, ctx) -> list[Finding]``.

Each op reads its rule's metric (see :mod:`metrics`), decides what is bad, and names
culprits. Over pair metrics the bad pairs are localized (C4D): one bad pair is a link,
a card bad with most partners is the card, all cards of a host alike is the host.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np
import pandas as pd

from sncheck.health import fabric, injob, kernel
from sncheck.health.culprits import _bound, _compare, _median, entity_findings, flagged_tiers, pair_findings
from sncheck.health.drift import calibration_regression, card_baseline, drift
from sncheck.health.findings import jsonable
from sncheck.health.metrics import ENTITIES, GROUPS, METRICS, PAIRS, DetectContext, shared_categories
from sncheck.model import Basis, EntityKind, Finding
from sncheck.topology import SCALE_OUT

if TYPE_CHECKING:
    from sncheck.health.rules import Rule

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
    cells = ctx.metric(rule.metric, rows)
    if cells.empty or "design" not in cells or cells["design"].isna().all():
        return []
    if rule.params.get("per") == "supernode":
        return _domains_to_design(cells, rule, ctx)
    bad = cells["failed"] | _compare(cells["value"] / cells["design"], rule)
    return pair_findings(cells.assign(bad=bad), rule, ctx)


def _domains_to_design(cells: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """Each scale-up domain as a whole, per tier, against that tier's design: a domain is
    bad when its median card (each card's level: the median over its pairs inside the
    domain) is beyond the bar, so one slow card in a small domain is the card, never its
    domain (each other card's median is over mostly healthy pairs), while a whole rack at
    0.9 is (no healthy peers inside it to be told by). Not its best card: of 72 cards the
    best one's median sits some deviations above the domain's level, and a rack at 0.92
    read as "the best at 93.5%" passed. A domain of one host is named as the host."""
    inside = cells[(cells["tier"].astype(str) != SCALE_OUT).to_numpy(bool) & ~cells["failed"].to_numpy(bool)]
    if inside.empty:
        return []
    table = ctx.topo.card_table["supernode"]
    both = pd.DataFrame({"card": np.concatenate([inside["src"].astype(str), inside["dst"].astype(str)]),
                         "tier": np.tile(inside["tier"].astype(str).to_numpy(), 2),
                         "ratio": np.tile((inside["value"] / inside["design"]).to_numpy(float), 2)})
    both["sn"] = table.reindex(both["card"]).to_numpy()
    per_card = both.groupby(["sn", "tier", "card"])["ratio"].agg(["median", "size"]).reset_index()
    per_card = per_card[per_card["size"] >= rule.params["min_pairs"]]
    below = "below" in rule.params
    levels = per_card.groupby(["sn", "tier"]).agg(
        best=("median", "max" if below else "min"), level=("median", "median"), cards=("card", "size"),
        pairs=("size", "sum")).reset_index()
    levels = levels[levels["cards"] >= 2]
    bad = _compare(levels["level"], rule).to_numpy(bool)
    unit = METRICS[rule.metric].unit
    design = inside.groupby(inside["tier"].astype(str))["design"].median()
    out: dict[str, Finding] = {}
    for r in levels[bad].sort_values("pairs", ascending=False).itertuples():  # the tier with most pairs first
        hosts = ctx.topo.hosts_of_supernode(r.sn)
        entity, kind = (hosts[0], "host") if len(hosts) == 1 else (r.sn, "supernode")
        if entity in out:
            continue
        exp = float(design[r.tier])
        out[entity] = Finding(entity, EntityKind(kind), rule.layer, rule.name, rule.severity,
                              f"{kind} {entity}: {rule.summary}: its {r.tier} pairs at {r.level:.1%} of design "
                              f"(the median of its {r.cards} cards measured, the best at {r.best:.1%})",
                              {"measured": jsonable(r.level * exp), "expected": jsonable(exp), "unit": unit,
                               "tier": r.tier, "cards": int(r.cards), "domain": str(r.sn)})
    return list(out.values())


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

    keep = ~frame["failed"].to_numpy(bool)
    ok = frame[[c for c in frame.columns if c != "link"]]  # links are only read for bad pairs
    ok = (ok if keep.all() else ok[keep]).copy(deep=False)
    # The per-pair and the per-card rule of a metric score the same pairs: once.
    key = ("tier_scores", rule.metric, method, min_peers, id(frame))
    scores = ctx.cache.get(key) if ctx.cache is not None else None
    if scores is None:
        scores = _tier_scores(ok, method, min_peers)
        if ctx.cache is not None:
            ctx.cache[key] = scores
    ok["score"] = scores
    if per == "pair":
        bad = ~keep
        bad[np.flatnonzero(keep)[_compare(ok["score"], rule).to_numpy(bool)]] = True
        return pair_findings(frame.assign(bad=bad), rule, ctx)
    card_score = _card_scores(ok, method, min_peers)
    flagged = flagged_tiers(card_score[_compare(card_score["score"], rule).to_numpy(bool)])
    if not flagged:
        return []
    return pair_findings(ok.assign(bad=False), rule, ctx, flagged=flagged)


def _tier_scores(ok: pd.DataFrame, method: str, min_peers: int) -> pd.Series:
    """Each pair's score against the pairs of its tier: the ratio to the tier median, or
    the robust z; neutral where a tier has too few pairs. Grouped by tier code (a
    handful of tiers), each statistic one numpy pass over the tier's values."""
    codes, _ = pd.factorize(ok["tier"])
    values = ok["value"].to_numpy(float)
    med, mad, size = (np.full(len(values), np.nan) for _ in range(3))
    for k in range(codes.max() + 1 if len(codes) else 0):
        at = codes == k
        v = values[at]
        med[at] = _median(v)
        mad[at] = _median(np.abs(v - med[at]))
        size[at] = len(v)
    if method == "ratio":
        scores, neutral = values / med, 1.0
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            z = 0.6745 * (values - med) / mad
        scores, neutral = np.where((mad != 0) & ~np.isnan(mad), z, 0.0), 0.0
    return pd.Series(np.where(size >= min_peers, scores, neutral), index=ok.index)


SMALL_DOMAIN_PAIRS = 256


def _card_scores(ok: pd.DataFrame, method: str, min_peers: int) -> pd.DataFrame:
    """Per card and tier: the median of the scores of its pairs in that tier (so one bad
    link never moves it), where it has at least ``min_peers`` pairs there. Columns card,
    tier, score. Tiers are never pooled: a card's scale-up and scale-out pairs have
    different design values, and each is judged against its own tier only.

    Leaving the card out matters in a small tier: with 4 cards a slow card is half of
    all pairs and drags the tier median towards itself. In a big tier a card's share of
    the pairs is negligible and the tier score is used as it is.
    """
    src, dst = ok["src"], ok["dst"]
    if not (isinstance(src.dtype, pd.CategoricalDtype) and src.dtype == dst.dtype):
        src, dst = shared_categories(src, dst)
    cats = src.cat.categories
    tier_codes, tier_names = pd.factorize(ok["tier"].astype(str))
    nt = max(len(tier_names), 1)
    # Each pair counts for both its cards: (card, tier) keys and scores twice over.
    card = np.concatenate([src.cat.codes.to_numpy(), dst.cat.codes.to_numpy()]).astype(np.int64)
    key = card * nt + np.concatenate([tier_codes, tier_codes])
    score = ok["score"].to_numpy(float)
    by = pd.Series(np.concatenate([score, score])).groupby(key)
    counts, scores = by.count(), by.median()
    out = pd.DataFrame({"card": np.asarray(cats.astype(str))[scores.index.to_numpy() // nt],
                        "tier": np.asarray(tier_names, dtype=object)[scores.index.to_numpy() % nt],
                        "score": scores.to_numpy(float), "n": counts.to_numpy()})
    if method == "ratio":
        sizes = pd.Series(tier_codes).value_counts()
        for code in sizes.index[sizes.to_numpy() < SMALL_DOMAIN_PAIRS]:
            out = _leave_out_scores(ok[tier_codes == code], str(tier_names[code]), out, min_peers)
    return out[out["n"] >= min_peers].reset_index(drop=True)


def _leave_out_scores(small: pd.DataFrame, tier: str, scores: pd.DataFrame, min_peers: int) -> pd.DataFrame:
    """In a small tier (fewer than SMALL_DOMAIN_PAIRS pairs), each card's median over
    the median of every other pair of that tier, as one card x pair matrix."""
    codes, cards = pd.factorize(pd.concat([small["src"].astype(str), small["dst"].astype(str)],
                                          ignore_index=True))
    n = len(small)
    ids = np.arange(len(cards))[:, None]
    mine = (codes[:n][None, :] == ids) | (codes[n:][None, :] == ids)  # cards x pairs
    values = small["value"].to_numpy(float)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a card whose values are all NaN
        own = np.nanmedian(np.where(mine, values, np.nan), axis=1)
        others = np.nanmedian(np.where(mine, np.nan, values), axis=1)
    keep = ((~mine).sum(axis=1) >= 1) & (mine.sum(axis=1) >= min_peers)
    left_out = dict(zip(pd.Index(cards.astype(str))[keep], (own / others)[keep]))
    at = (scores["tier"] == tier).to_numpy(bool) & scores["card"].isin(left_out.keys()).to_numpy(bool)
    scores = scores.copy()
    scores.loc[at, "score"] = scores.loc[at, "card"].map(left_out).to_numpy(float)
    return scores


def _per_card_reference(cells: pd.DataFrame, per_card: dict) -> pd.Series:
    """A pair's baseline from its cards' own histories: the lower of the two (as
    Python's ``min(a, b)``: a when b is NaN, NaN when a is). One lookup per tier."""
    a = np.full(len(cells), np.nan)
    b = np.full(len(cells), np.nan)
    tiers = cells["tier"].astype(str).to_numpy()
    for tier, values in per_card.items():  # per tier (a handful), never per pair
        at = tiers == tier
        if at.any() and values:
            table = pd.Series(values, dtype=float)
            a[at] = table.reindex(cells["src"][at].astype(str)).to_numpy()
            b[at] = table.reindex(cells["dst"][at].astype(str)).to_numpy()
    return pd.Series(np.where(b < a, b, a), index=cells.index)


def baseline_regression(rows: pd.DataFrame, rule: "Rule", ctx: DetectContext) -> list[Finding]:
    """Below a fraction of a stored baseline (per tier, or per card where the baseline
    keeps one: a card judged against its own history)."""
    base = (ctx.baseline or {}).get("metrics", {}).get(rule.metric)
    cells = ctx.metric(rule.metric, rows)
    if not base or cells.empty:
        return []
    if rule.params["key"] == "card" and base.get("card"):
        ref = _per_card_reference(cells, base["card"])  # tier -> card -> value
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
        out.append(Finding(r.entity, r.kind, r.layer, name, rule.severity, r.message, ev, basis=Basis.NOT_MEASURED))
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


def golden_verdicts(curves: pd.DataFrame, reference: dict) -> pd.DataFrame:
    """Per replica: within band or not, and why (also used by the golden layer)."""
    cols = ["group", "stage", "ok", "reason", "final", "ref_final", "members"]
    if curves.empty:
        return pd.DataFrame(columns=cols)
    ref = np.asarray(reference["loss"], dtype=float)
    step_rel, final_rel = band_of(reference)
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
            if outside_band(loss[n - 1:n], ref[n - 1:n], final_rel)[0]:
                ok, reason = False, f"final loss {loss[n - 1]:.4g} outside {final_rel:.1%} of {ref[n - 1]:.4g}"
            elif outside_band(loss[:n], ref[:n], step_rel).any():
                ok, reason = False, f"step {worst} loss {loss[worst]:.4g} outside {step_rel:.1%} of {ref[worst]:.4g}"
        out.append({"group": c.group, "stage": c.stage, "ok": ok, "reason": reason,
                    "final": float(loss[-1]), "ref_final": float(ref[n - 1]), "members": c.members})
    return pd.DataFrame(out, columns=cols)


BOUND = {"below": Param((int, float), None, "bad when the value is below this"),
         "above": Param((int, float), None, "bad when the value is above this")}

OPS: dict[str, Op] = {op.name: op for op in (
    Op("ratio_to_design", ratio_to_design, (PAIRS,), {
        **BOUND,
        "per": Param(str, "pair", "judge each pair, or each scale-up domain by the median of its pairs "
                     "inside it (scope: supernode)", ("pair", "supernode")),
        "min_pairs": Param(int, 3, "per supernode: fewest pairs of a domain in a tier for its median to count"),
    }, ("below", "above"), "value over the tier's design value (e.g. below 0.8 of design bandwidth)"),
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
    # In-job signals (sncheck watch): sncheck/health/injob.py
    Op("straggler", injob.straggler, (ENTITIES,), {
        "share_above": Param((int, float), 1.5, "last in collectives at least this many times its share (1/n)"),
        "blame_above": Param((int, float), 0.3, "and its group waited for it this share of its time"),
        "min_collectives": Param(int, 8, "fewest collectives every member recorded"),
    }, (), "a rank that enters its group's collectives last, against its peers (Flight Recorder)"),
    Op("behind_peers", injob.behind_peers, (ENTITIES,), {
        "min_peer_share": Param((int, float), 1.0, "share of its peers that entered the collective it did not"),
    }, (), "a rank that never entered a collective its peers entered (Flight Recorder)"),
    Op("p2p_unmatched", injob.p2p_unmatched, (ENTITIES,), {}, (),
       "a rank that never posted the send or recv its peer posted (Flight Recorder, NCCL)"),
    Op("ras_states", injob.ras_states, (ENTITIES,), {
        "states": Param(list, ["INCOMPLETE", "MISMATCH", "NOCOMM", "DEAD", "ERROR"], "which RAS states count"),
    }, (), "states NCCL RAS reports, on the rank's card"),
    # Against history: sncheck/health/drift.py (the state store's runs and baselines)
    Op("drift", drift, (PAIRS,), {
        **BOUND,
        "min_runs": Param(int, 3, "runs on record, this one included, before a drift can be called"),
        "min_pairs": Param(int, 3, "fewest pairs of a card in a tier for its median to count"),
        "z": Param((int, float), 3.0, "the fall must exceed this many standard errors (its noise)"),
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
        "above": Param((int, float), 0, "fires when the value is above this"),
        "of": Param(str, "growth", "growth: how much it grew during the run; before: its value when "
                                   "the run began", ("growth", "before")),
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
