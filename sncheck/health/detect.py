"""Detectors: pure functions from result rows (DataFrames) to findings.

They see only measured rows, the topology and the design values, never a fault plan,
so they run unchanged on mock, local and SSH results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..inventory import TierDesign
from ..topology import Topology, host_of, link_id
from .findings import Finding
from .localize import localize


@dataclass(frozen=True)
class Thresholds:
    bw_design_ratio: float = 0.8     # a pair below 80% of design bandwidth is bad
    bw_peer_ratio: float = 0.8       # ... or below 80% of the median of its tier
    lat_design_ratio: float = 2.0    # a pair above 2x design latency is bad
    lat_peer_ratio: float = 2.0      # ... or above 2x the median of its tier
    jitter_ratio: float = 3.0        # a pair's p99 latency above 3x its own median
    card_bw_score: float = 0.93      # a card whose pairs' median is below 93% of peers (faint)
    card_lat_score: float = 1.3      # a card whose pairs' median latency is 1.3x peers
    group_bw_ratio: float = 0.8      # a collective below 80% of its peer groups' busbw
    group_lat_ratio: float = 2.0     # small-message time above 2x peers
    large_bytes: int = 1 << 20       # from here busbw is bandwidth-bound
    small_bytes: int = 64 << 10      # up to here time is latency-bound
    skew_z: float = 5.0              # robust z of a rank's median launch skew
    skew_floor_us: float = 5.0       # ... and at least this far above the median
    golden_step_time_ratio: float = 1.2


DEFAULT = Thresholds()
BW_RULE = "p2p-bandwidth-below-design"


def robust_z(x: pd.Series) -> pd.Series:
    """0.6745 (x - median) / MAD; 0 where the MAD is 0."""
    med = x.median()
    mad = (x - med).abs().median()
    if not mad or math.isnan(mad):
        return pd.Series(0.0, index=x.index)
    return 0.6745 * (x - med) / mad


# ---------------------------------------------------------------------------- host facts
def detect_host_facts(rows: pd.DataFrame) -> list[Finding]:
    facts = _kind(rows, "host_fact")
    out = []
    for r in facts[~facts["ok"].astype(bool)].itertuples():
        if r.fact == "reachable":
            out.append(Finding(r.host, "host", "connectivity", "host-unreachable", "critical",
                               r.message or f"{r.host} is unreachable",
                               {"measured": "unreachable", "expected": "reachable", "unit": None}))
            continue
        status = r.status if r.status != "ok" else "mismatch"
        rule = f"host-fact-{r.fact.replace('_', '-')}" if status == "mismatch" else f"host-fact-{status.replace('_', '-')}"
        severity = "critical" if status in ("mismatch", "timeout") else "warning"
        out.append(Finding(r.host, "host", "connectivity", rule, severity,
                           r.message or f"{r.host}: {r.fact} is {r.value!r}, expected {r.expected!r}",
                           {"measured": _jsonable(r.value), "expected": _jsonable(r.expected),
                            "unit": None, "fact": r.fact, "tool": getattr(r, "tool", None)}))
    return out


def detect_not_run(rows: pd.DataFrame, topo: Topology) -> list[Finding]:
    """Anything that should have run and did not is a finding, never a pass."""
    out = []
    for r in _kind(rows, "not_run").itertuples():
        entity, kind = r.entity, r.entity_kind
        if kind == "group":  # report at a level the contract knows: the hosts involved
            hosts = sorted({host_of(c) for c in _group_members(entity, topo)}) or [entity]
            entity, kind = (hosts[0], "host") if len(hosts) == 1 else (entity, "supernode")
        out.append(Finding(entity, kind, r.layer, f"not-run-{r.status.replace('_', '-')}",
                           "critical", r.message, {"measured": r.status, "expected": "ran", "unit": None}))
    return out


def _group_members(group_id: str, topo: Topology) -> list[str]:
    kind, _, rest = group_id.partition(":")
    if kind == "host" and rest in topo.inventory.hosts:
        return topo.cards_of_host(rest)
    if kind == "card":
        return [rest]
    return []


# ------------------------------------------------------------------------------ p2p matrix
def detect_p2p(rows: pd.DataFrame, topo: Topology, design: dict[str, TierDesign],
               th: Thresholds = DEFAULT) -> list[Finding]:
    p2p = _kind(rows, "p2p")
    p2p = p2p[p2p["status"] != "unreachable"].copy() if not p2p.empty else p2p
    if p2p.empty:
        return []
    p2p["bw"] = p2p[["bw_GBps", "bw_rev_GBps"]].astype(float).min(axis=1, skipna=True)
    failed = p2p["status"] != "ok"
    p2p["design_bw"] = p2p["tier"].map(lambda t: _design(design, t, "bandwidth_GBps"))
    p2p["design_lat"] = p2p["tier"].map(lambda t: _design(design, t, "latency_us"))
    p2p["bw_peer"] = p2p["bw"] / p2p.groupby("tier")["bw"].transform("median")
    p2p["lat_peer"] = p2p["lat_us"].astype(float) / p2p.groupby("tier")["lat_us"].transform("median")
    p2p["bw_design"] = p2p["bw"] / p2p["design_bw"]
    p2p["lat_design"] = p2p["lat_us"].astype(float) / p2p["design_lat"]

    out: list[Finding] = []
    # Bandwidth (and pairs that carried nothing at all).
    bad_bw = failed | (p2p["bw_design"] < th.bw_design_ratio) | (p2p["bw_peer"] < th.bw_peer_ratio)
    faint = _card_scores(p2p, "bw_peer", low=True) < th.card_bw_score
    out += _findings_from_cells(p2p.assign(bad=bad_bw), topo, set(faint[faint].index), "bandwidth", th)
    # Latency.
    ok = p2p[~failed]
    bad_lat = (ok["lat_design"] > th.lat_design_ratio) | (ok["lat_peer"] > th.lat_peer_ratio)
    slow_lat = _card_scores(ok, "lat_peer", low=False) > th.card_lat_score
    out += _findings_from_cells(ok.assign(bad=bad_lat), topo, set(slow_lat[slow_lat].index), "latency", th)
    # Latency spikes (tail), where the backend measured a tail.
    if "lat_p99_us" in ok and ok["lat_p99_us"].notna().any():
        # Spikiness of a pair against its own median, so a steadily slow card is not jitter.
        tail = ok["lat_p99_us"].astype(float) / ok["lat_us"].astype(float)
        out += _findings_from_cells(ok.assign(bad=tail > th.jitter_ratio), topo, set(), "jitter", th)
    # Data integrity.
    checked = ok[ok["checksum_ok"].notna()]
    if not checked.empty:
        bad_data = ~checked["checksum_ok"].astype(bool)
        out += _findings_from_cells(checked.assign(bad=bad_data), topo, set(), "data", th)
    return out


def _card_scores(cells: pd.DataFrame, column: str, low: bool) -> pd.Series:
    """Per card, the median of its pairs' peer ratios (a card's own row and column)."""
    if cells.empty:
        return pd.Series(dtype=float)
    both = pd.concat([cells[["src", column]].rename(columns={"src": "card"}),
                      cells[["dst", column]].rename(columns={"dst": "card"})])
    scores = both.groupby("card")[column].median()
    # A score needs enough pairs to be a median of something.
    counts = both.groupby("card")[column].count()
    neutral = 1.0
    return scores.where(counts >= 3, neutral)


SYMPTOM_RULES = {
    "bandwidth": ("p2p-bandwidth-below-design", "GB/s"),
    "latency": ("p2p-latency-above-design", "us"),
    "jitter": ("p2p-latency-spikes", "us"),
    "data": ("p2p-data-corruption", "pairs"),
}


def _findings_from_cells(cells: pd.DataFrame, topo: Topology, flagged: set[str], symptom: str,
                         th: Thresholds) -> list[Finding]:
    rule, unit = SYMPTOM_RULES[symptom]
    out = []
    for c in localize(cells, topo, flagged):
        touching = _touching(cells, c.entity, c.kind, topo)
        measured, expected = _measure(touching, c.cells, symptom)
        severity = "critical"
        if symptom in ("bandwidth", "latency") and c.kind != "link" and c.cells.empty:
            severity = "warning"  # faint: found by the per-card score, every pair within bounds
        if symptom == "jitter":
            severity = "warning"
        what = {"bandwidth": "bandwidth low", "latency": "latency high",
                "jitter": "latency spikes", "data": "data corrupted"}[symptom]
        msg = (f"{c.kind} {c.entity}: {what} on {len(c.cells)} of {len(touching)} pair tests"
               if c.kind != "link" else f"link {c.entity}: {what} between two otherwise healthy cards")
        if c.kind != "link" and c.cells.empty:
            msg = f"{c.kind} {c.entity}: {what} on its pairs as a whole ({measured} {unit} against {expected})"
        out.append(Finding(c.entity, c.kind, "connectivity", rule, severity, msg,
                           {"measured": measured, "expected": expected, "unit": unit,
                            "bad_pairs": int(len(c.cells)), "pairs": int(len(touching)),
                            "worst": _worst(c.cells, symptom)}))
    return out


def _touching(cells: pd.DataFrame, entity: str, kind: str, topo: Topology) -> pd.DataFrame:
    if kind == "link":
        return cells[cells["link"] == entity]
    if kind == "card":
        members = {entity}
    elif kind == "host":
        members = set(topo.cards_of_host(entity))
    else:
        members = set(topo.cards_of_supernode(entity))
    return cells[cells["src"].isin(members) | cells["dst"].isin(members)]


def _measure(touching: pd.DataFrame, bad: pd.DataFrame, symptom: str):
    if symptom == "bandwidth":
        return _r(touching["bw"].median()), _r(touching["design_bw"].median())
    if symptom == "latency":
        return _r(touching["lat_us"].astype(float).median()), _r(touching["design_lat"].median())
    if symptom == "jitter":
        return _r(touching["lat_p99_us"].astype(float).median()), _r(touching["lat_us"].astype(float).median())
    return int(len(bad)), 0


def _worst(bad: pd.DataFrame, symptom: str) -> list[dict]:
    cols = {"bandwidth": ["link", "bw", "status"], "latency": ["link", "lat_us"],
            "jitter": ["link", "lat_p99_us"], "data": ["link", "checksum_ok"]}[symptom]
    take = bad[cols].head(5)
    return [{k: _jsonable(v) for k, v in rec.items()} for rec in take.to_dict("records")]


# ------------------------------------------------------------------------------ stress
def failing_groups(rows: pd.DataFrame, th: Thresholds = DEFAULT) -> dict[str, set[str]]:
    """Group ids that failed validation, timed out, or ran slow against their peers."""
    coll = _kind(rows, "collective")
    if coll.empty:
        return {"wrong": set(), "slow": set()}
    coll = coll[coll["group_kind"] != "pair"]
    wrong = set(coll.loc[(coll["wrong"].fillna(0) > 0), "group"])
    slow = set(coll.loc[coll["status"] != "ok", "group"])
    ok = coll[coll["status"] == "ok"].copy()
    if not ok.empty:
        key = ["collective", "group_kind", "size_bytes"]
        ok["bw_ratio"] = ok["busbw_GBps"] / ok.groupby(key)["busbw_GBps"].transform("median")
        ok["t_ratio"] = ok["time_us"] / ok.groupby(key)["time_us"].transform("median")
        peers = ok.groupby(key)["group"].transform("nunique")
        large = ok[(ok["size_bytes"] >= th.large_bytes) & (peers >= 3)]
        small = ok[(ok["size_bytes"] <= th.small_bytes) & (peers >= 3)]
        slow |= set(large.groupby("group")["bw_ratio"].median().loc[lambda s: s < th.group_bw_ratio].index)
        slow |= set(small.groupby("group")["t_ratio"].median().loc[lambda s: s > th.group_lat_ratio].index)
    return {"wrong": wrong, "slow": slow}


def suspect_cards(rows: pd.DataFrame, groups: dict[str, tuple[str, ...]], topo: Topology,
                  th: Thresholds = DEFAULT, limit: int = 64) -> set[str]:
    """Cards worth a pairwise narrowing pass: where failing host and rail groups cross."""
    out: set[str] = set()
    for failed in failing_groups(rows, th).values():
        hosts = [set(groups[g]) for g in failed if g.startswith("host:") and g in groups]
        rails = [set(groups[g]) for g in failed if g.startswith("rail:") and g in groups]
        if hosts and rails:
            out |= {c for h in hosts for r in rails for c in h & r}
        elif hosts or rails:
            out |= set().union(*hosts, *rails)
        else:
            out |= {c for g in failed if g in groups for c in groups[g]}
    if len(out) > limit:
        return set(sorted(out, key=lambda c: c)[:limit])
    return out


def detect_pairs(rows: pd.DataFrame, topo: Topology, th: Thresholds = DEFAULT) -> list[Finding]:
    """Localize from the pairwise narrowing pass of the stress layer."""
    coll = _kind(rows, "collective")
    if coll.empty:
        return []
    pairs = coll[coll["group_kind"] == "pair"].copy()
    if pairs.empty:
        return []
    members = pairs["group"].str.removeprefix("pair:").str.split("<->", regex=False)
    pairs["src"] = members.str[0]
    pairs["dst"] = members.str[1]
    pairs["link"] = [link_id(a, b) for a, b in zip(pairs["src"], pairs["dst"])]
    pairs["tier"] = [topo.tier(a, b) for a, b in zip(pairs["src"], pairs["dst"])]
    failed = pairs["status"] != "ok"
    key = ["collective", "size_bytes", "tier"]
    pairs["bw_ratio"] = pairs["busbw_GBps"] / pairs.groupby(key)["busbw_GBps"].transform("median")
    pairs["t_ratio"] = pairs["time_us"] / pairs.groupby(key)["time_us"].transform("median")
    per_link = pairs.groupby("link").agg(
        src=("src", "first"), dst=("dst", "first"),
        failed=("status", lambda s: bool((s != "ok").any())),
        wrong=("wrong", lambda s: int(s.fillna(0).sum())),
        bw_ratio=("bw_ratio", lambda s: s[pairs.loc[s.index, "size_bytes"] >= th.large_bytes].median()),
        t_ratio=("t_ratio", lambda s: s[pairs.loc[s.index, "size_bytes"] <= th.small_bytes].median()),
        busbw=("busbw_GBps", "max"),
    ).reset_index()
    del failed
    out = []
    for symptom, bad, rule in (
        ("bandwidth", per_link["failed"] | (per_link["bw_ratio"] < th.group_bw_ratio), "collective-pair-slow"),
        ("latency", per_link["t_ratio"] > th.group_lat_ratio, "collective-pair-latency"),
        ("data", per_link["wrong"] > 0, "collective-wrong-results"),
    ):
        for c in localize(per_link.assign(bad=bad), topo):
            touching = _touching(per_link, c.entity, c.kind, topo)
            if symptom == "data":
                measured, expected, unit = int(c.cells["wrong"].sum()), 0, "wrong elements"
            elif symptom == "bandwidth":
                measured, expected, unit = _r(c.cells["bw_ratio"].median()), 1.0, "x peer busbw"
            else:
                measured, expected, unit = _r(c.cells["t_ratio"].median()), 1.0, "x peer time"
            what = {"bandwidth": "slow", "latency": "slow on small messages", "data": "wrong results"}[symptom]
            out.append(Finding(c.entity, c.kind, "stress", rule, "critical",
                               f"{c.kind} {c.entity}: {what} in {len(c.cells)} of {len(touching)} pairwise collectives",
                               {"measured": measured, "expected": expected, "unit": unit,
                                "bad_pairs": int(len(c.cells)), "pairs": int(len(touching))}))
    return out


def detect_stragglers(rows: pd.DataFrame, th: Thresholds = DEFAULT) -> list[Finding]:
    """A rank that starts collectives late, consistently: judge by launch skew."""
    ranks = _kind(rows, "rank")
    if ranks.empty or ranks["card"].nunique() < 3:
        return []
    ranks = ranks[~ranks["group"].str.startswith("pair:")]
    per_card = ranks.groupby("card")["skew_us"].median()
    z = robust_z(per_card)
    excess = per_card - per_card.median()
    out = []
    for card in per_card.index[(z > th.skew_z) & (excess > th.skew_floor_us)]:
        out.append(Finding(card, "card", "stress", "collective-straggler", "warning",
                           f"card {card} starts collectives {excess[card]:.1f} us after its peers (median launch skew)",
                           {"measured": _r(per_card[card]), "expected": _r(per_card.median()), "unit": "us",
                            "robust_z": _r(z[card])}))
    return out


# ------------------------------------------------------------------------------ golden
def golden_verdicts(rows: pd.DataFrame, reference: dict) -> pd.DataFrame:
    """Per golden group: within band or not, and why."""
    g = _kind(rows, "golden")
    if g.empty:
        return pd.DataFrame(columns=["group", "stage", "ok", "reason", "final", "ref_final", "step_time_s"])
    ref = np.asarray(reference["loss"], dtype=float)
    band = reference.get("band", {})
    step_rel, final_rel = band.get("step_rel", 0.05), band.get("final_rel", 0.03)
    out = []
    for (group, stage), rows_g in g.groupby(["group", "stage"], sort=True):
        loss = rows_g.sort_values("step")["loss"].astype(float).to_numpy()
        n = min(len(loss), len(ref))
        ok, reason = True, "within band"
        if not np.all(np.isfinite(loss)):
            ok, reason = False, f"loss became non-finite at step {int(np.argmax(~np.isfinite(loss)))}"
        elif stage == "solo":
            # A single card trains on its own shard: judge divergence, not the band.
            if loss[-1] > max(ref[0], 1.5 * ref[n - 1]):
                ok, reason = False, f"loss diverged to {loss[-1]:.3g}"
        else:
            rel = np.abs(loss[:n] - ref[:n]) / np.abs(ref[:n])
            worst = int(np.argmax(rel))
            if abs(loss[n - 1] - ref[n - 1]) / abs(ref[n - 1]) > final_rel:
                ok, reason = False, f"final loss {loss[n - 1]:.4g} outside {final_rel:.1%} of {ref[n - 1]:.4g}"
            elif rel[worst] > step_rel:
                ok, reason = False, f"step {worst} loss {loss[worst]:.4g} outside {step_rel:.1%} of {ref[worst]:.4g}"
        out.append({"group": group, "stage": stage, "ok": ok, "reason": reason,
                    "final": float(loss[-1]), "ref_final": float(ref[n - 1]),
                    "step_time_s": float(rows_g["step_time_s"].median())})
    return pd.DataFrame(out)


def detect_golden(rows: pd.DataFrame, reference: dict | None, topo: Topology,
                  th: Thresholds = DEFAULT) -> list[Finding]:
    if not reference:
        return []
    verdicts = golden_verdicts(rows, reference)
    out = []
    solo_bad = {v.group.removeprefix("card:"): v for v in verdicts.itertuples() if v.stage == "solo" and not v.ok}
    solo_ran = {v.group.removeprefix("card:") for v in verdicts.itertuples() if v.stage == "solo"}
    for v in verdicts.itertuples():
        if v.stage != "group":
            continue
        members = _group_members(v.group, topo)
        if not v.ok:
            culprits = [c for c in members if c in solo_bad]
            if culprits:
                for c in culprits:
                    out.append(Finding(c, "card", "golden", "golden-loss-out-of-band", "critical",
                                       f"card {c}: golden model {solo_bad[c].reason} when it takes part "
                                       f"(group {v.group}: {v.reason})",
                                       {"measured": _r(solo_bad[c].final), "expected": _r(v.ref_final), "unit": "loss"}))
            elif not (set(members) & solo_ran):
                host = v.group.removeprefix("host:")
                out.append(Finding(host, "host", "golden", "golden-loss-out-of-band", "critical",
                                   f"{v.group}: {v.reason}",
                                   {"measured": _r(v.final), "expected": _r(v.ref_final), "unit": "loss"}))
        ref_t = reference.get("step_time_s")
        if ref_t and v.step_time_s > th.golden_step_time_ratio * ref_t and v.group.startswith("host:"):
            host = v.group.removeprefix("host:")
            out.append(Finding(host, "host", "golden", "golden-step-time-regression", "warning",
                               f"{v.group}: step time {v.step_time_s * 1e3:.1f} ms against {ref_t * 1e3:.1f} ms golden",
                               {"measured": _r(v.step_time_s), "expected": _r(ref_t), "unit": "s"}))
    return out


# ------------------------------------------------------------------------------ helpers
def _kind(rows: pd.DataFrame, kind: str) -> pd.DataFrame:
    if rows.empty or "kind" not in rows:
        return pd.DataFrame()
    return rows[rows["kind"] == kind]


def _design(design: dict[str, TierDesign], tier: str, attr: str) -> float:
    d = design.get(tier) or (design.get("scale_up") if tier == "intra_host" else None)
    return getattr(d, attr) if d else float("nan")


def _r(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else round(x, 4)


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return _r(v)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, float) and math.isnan(v):
        return None
    return v
