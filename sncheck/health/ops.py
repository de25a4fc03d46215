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

from sncheck.health import injob
from sncheck.health.findings import Finding
from sncheck.health.localize import localize
from sncheck.topology import split_link
from sncheck.health.metrics import ENTITIES, GROUPS, METRICS, PAIRS, DetectContext, jsonable

if TYPE_CHECKING:
    from sncheck.health.rules import Rule

REQUIRED = object()


@dataclass(frozen=True)
class Param:
    type: type | tuple
    default: object = REQUIRED
    help: str = ""
    choices: tuple = ()
    check: Callable[[object], str | None] | None = None  # what is wrong with a value, or None


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
class _Touching:
    """Which pairs touch an entity, as row positions: one factorize of the pair ends and
    one sort of the rows by each end's card code, then each culprit's rows are looked up
    per card (never a scan of every pair per culprit)."""

    def __init__(self, cells: pd.DataFrame, ctx: DetectContext) -> None:
        src, dst = cells["src"], cells["dst"]
        if isinstance(src.dtype, pd.CategoricalDtype) and src.dtype == dst.dtype:
            self.src, self.dst = src.cat.codes.to_numpy(), dst.cat.codes.to_numpy()
            self.cards = pd.Index(src.cat.categories.astype(str), dtype=object)
        else:
            codes, uniques = pd.factorize(pd.concat([src.astype(str), dst.astype(str)], ignore_index=True))
            self.src, self.dst = codes[:len(cells)], codes[len(cells):]
            self.cards = pd.Index(uniques, dtype=object)
        self.ctx = ctx
        self._by: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _rows_by(self, end: str) -> tuple[np.ndarray, np.ndarray]:
        """Row positions sorted by the card code at ``end``, and where each code starts."""
        if end not in self._by:
            codes = self.src if end == "src" else self.dst
            order = np.argsort(codes, kind="stable")
            starts = np.searchsorted(codes[order], np.arange(len(self.cards) + 1))
            self._by[end] = (order, starts)
        return self._by[end]

    def _at(self, end: str, code: int) -> np.ndarray:
        order, starts = self._rows_by(end)
        return order[starts[code]:starts[code + 1]]

    def rows(self, entity: str, kind: str) -> np.ndarray:
        """Positions of the pairs that touch ``entity`` (a link: that pair's), ascending."""
        if kind == "link":
            members = list(split_link(entity))
        elif kind == "card":
            members = [entity]
        elif kind == "host":
            members = self.ctx.topo.cards_of_host(entity)
        else:
            members = self.ctx.topo.cards_of_supernode(entity)
        codes = self.cards.get_indexer(members)
        codes = codes[codes >= 0]
        if kind == "link":
            if len(codes) < 2:
                return np.zeros(0, dtype=np.intp)
            a, b = codes[0], codes[1]
            ab, ba = self._at("src", a), self._at("src", b)
            return np.unique(np.concatenate([ab[self.dst[ab] == b], ba[self.dst[ba] == a]]))
        parts = [self._at(end, c) for c in codes for end in ("src", "dst")]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.intp)


def pair_findings(cells: pd.DataFrame, rule: "Rule", ctx: DetectContext, flagged: set[str] = frozenset(),
                  expected: float | None = None) -> list[Finding]:
    """Localize bad pairs (column ``bad``) and cards flagged by a score into findings."""
    unit = METRICS[rule.metric].unit
    culprits = localize(cells, ctx.topo, flagged)
    if not culprits:
        return []
    touching = _Touching(cells, ctx)
    values = cells["value"].to_numpy(float)
    design = cells["design"].to_numpy(float) if "design" in cells else None
    out = []
    for c in culprits:
        at = touching.rows(c.entity, c.kind)
        n_touching = len(at)
        if design is not None and expected is None:
            exp = jsonable(_median(design[at]))
        else:
            exp = jsonable(expected if expected is not None else _median(values[at]))
        measured = jsonable(c.cells["value"].median() if not c.cells.empty else _median(values[at]))
        failed = int(c.cells["failed"].sum()) if "failed" in c.cells else 0
        if c.kind == "link":
            what = f"link {c.entity}: {rule.summary} between two otherwise healthy cards"
        elif c.cells.empty:
            what = f"{c.kind} {c.entity}: {rule.summary} across its pairs as a whole"
        else:
            what = f"{c.kind} {c.entity}: {rule.summary} on {len(c.cells)} of {n_touching} pair tests"
        if failed:
            what += f" ({failed} carried nothing)"
        worst = c.cells.sort_values("value").head(5) if not c.cells.empty else c.cells
        out.append(Finding(c.entity, c.kind, rule.layer, rule.name, rule.severity, what, {
            "measured": measured, "expected": exp, "unit": unit,
            "bad_pairs": int(len(c.cells)), "pairs": n_touching,
            "worst": [{"link": link, "value": jsonable(value)}
                      for link, value in zip(worst["link"].tolist(), worst["value"].tolist())] if len(worst) else [],
        }))
    return out


def _median(values: np.ndarray) -> float:
    """The median skipping NaN (as ``Series.median``); NaN when nothing is left."""
    values = values[~np.isnan(values)]
    return float(np.median(values)) if len(values) else math.nan


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
    flagged = set(card_score.index[_compare(card_score, rule)])
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


def _card_scores(ok: pd.DataFrame, method: str, min_peers: int) -> pd.Series:
    """Per card: the median of its own row and column (so one bad link never moves it)
    against the median of the pairs it is not part of.

    Leaving the card out matters in a small domain: with 4 cards a slow card is half of
    all pairs and drags the tier median towards itself. In a big domain a card's share
    of the pairs is negligible and the tier score is used as it is.
    """
    src, dst = ok["src"], ok["dst"]
    if isinstance(src.dtype, pd.CategoricalDtype) and src.dtype == dst.dtype:
        # Each pair counts for both its cards: codes and scores twice over, no index.
        card = pd.Categorical.from_codes(np.concatenate([src.cat.codes.to_numpy(), dst.cat.codes.to_numpy()]),
                                         dtype=src.dtype)
        score = ok["score"].to_numpy(float)
        by_card = pd.Series(np.concatenate([score, score]), name="score").groupby(pd.Series(card, name="card"),
                                                                               observed=True)
    else:
        both = pd.concat([ok[["src", "score"]].rename(columns={"src": "card"}),
                          ok[["dst", "score"]].rename(columns={"dst": "card"})])
        by_card = both.groupby("card", observed=True)["score"]
    counts, scores = by_card.count(), by_card.median()
    sizes = ok.groupby("tier", observed=True)["value"].transform("size")
    small = ok[(sizes < SMALL_DOMAIN_PAIRS).to_numpy()]
    if method == "ratio" and not small.empty:
        scores = _leave_out_scores(small, scores, min_peers)
    return scores[counts >= min_peers]


def _leave_out_scores(small: pd.DataFrame, scores: pd.Series, min_peers: int) -> pd.Series:
    """In small tiers (fewer than SMALL_DOMAIN_PAIRS pairs in all), each card's median
    over the median of every other small-tier pair, as one card x pair matrix."""
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
    out = scores.astype(float).to_numpy().copy()
    at = scores.index.get_indexer(pd.Index(cards.astype(str))[keep])
    out[at[at >= 0]] = (own / others)[keep][at >= 0]
    return pd.Series(out, index=scores.index, name=scores.name)


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
    # In-job signals (sncheck watch): sncheck/health/injob.py
    Op("straggler", injob.straggler, (ENTITIES,), {
        "share_above": Param((int, float), 1.5, "last in collectives at least this many times its share (1/n)"),
        "blame_above": Param((int, float), 0.3, "and its group waited for it this share of its time"),
        "min_collectives": Param(int, 8, "fewest collectives every member recorded"),
    }, (), "a rank that enters its group's collectives last, against its peers (Flight Recorder)"),
    Op("behind_peers", injob.behind_peers, (ENTITIES,), {
        "min_peer_share": Param((int, float), 1.0, "share of its peers that entered the collective it did not"),
    }, (), "a rank that never entered a collective its peers entered (Flight Recorder)"),
    Op("ras_states", injob.ras_states, (ENTITIES,), {
        "states": Param(list, ["INCOMPLETE", "MISMATCH", "NOCOMM", "DEAD", "ERROR"], "which RAS states count"),
    }, (), "states NCCL RAS reports, on the rank's card"),
)}


def _register_drift() -> None:
    from sncheck.health.drift import calibration_regression, card_baseline, drift  # registered here so OPS lists every op

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


def _register_fabric() -> None:
    from sncheck.health import fabric  # counters and kernel logs (registered here so OPS lists every op)

    OPS.update(fabric.ops(Op, Param, REQUIRED))
    METRICS.update(fabric.METRICS)


_register_fabric()

