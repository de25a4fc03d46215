"""Per-run summaries: what the state store keeps of a run (summaries, not rows).

One record per (kind, entity, metric): ``value`` (a median), ``spread`` (the noise of
that median: a robust standard error, MEDIAN_SE * MAD_SD * MAD / sqrt(n)) and ``n`` (how
many measurements it summarises). Kinds:

* ``tier``: p2p bandwidth and latency per link tier (entity = the tier name);
* ``collective``: busbw at the largest size per collective and group kind
  (entity ``all_reduce/domain``), and the time at the smallest size;
* ``card``: each card's median p2p bandwidth and latency over its pairs, per tier
  (metric ``p2p_bandwidth/scale_up``), and its median launch skew;
* ``host``: the median of its cards' pair bandwidth and latency per tier, and how many
  of its facts failed;
* ``link``: only the links worth keeping (the worst few per tier, and those named by
  findings): a fleet has N^2 links, and a night's store must stay small;
* ``calibration``: the design values the local backend calibrated (per tier);
* ``golden``: step time and final loss of the golden model.

Everything is computed from the result rows with the same metric functions the rules
use, so a summary and a finding agree on what "a card's bandwidth" is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sncheck.health.explain import MAD_SD, MEDIAN_SE
from sncheck.health.metrics import METRICS, kind_rows, rows_context
from sncheck.health.rankrows import rank_rows
from sncheck.model import LINK_SEP, About, EntityKind, RunRecord, Severity, card_of, link_id, split_link

KINDS = ("tier", "collective", "card", "host", "link", "calibration", "golden")
WORST_LINKS = 16          # per tier and metric, kept every run
SE_MEDIAN = MEDIAN_SE * MAD_SD  # MAD -> sd (normal), sd of a median = MEDIAN_SE sd / sqrt(n)


@dataclass(frozen=True)
class Summary:
    kind: str
    entity: str
    metric: str
    value: float
    spread: float
    n: int


def _se(values: np.ndarray) -> float:
    """Robust standard error of the median of ``values`` (0 for one value)."""
    if len(values) < 2:
        return 0.0
    mad = float(np.median(np.abs(values - np.median(values))))
    return SE_MEDIAN * mad / math.sqrt(len(values))


def _grouped(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Median, robust standard error and count of ``value`` per group, vectorized."""
    g = frame.groupby(keys, observed=True)["value"]
    med = g.median().rename("median")
    dev = (frame["value"] - frame.groupby(keys, observed=True)["value"].transform("median")).abs()
    mad = dev.groupby([frame[k] for k in keys], observed=True).median().rename("mad")
    n = g.count().rename("n")
    out = pd.concat([med, mad, n], axis=1).reset_index()
    out["se"] = _se_of(out["mad"], out["n"])
    return out


def _se_of(mad: pd.Series, n: pd.Series) -> np.ndarray:
    """Each group's robust standard error of its median from its MAD and count (0 for one value)."""
    return np.where(n > 1, SE_MEDIAN * mad / np.sqrt(n.clip(lower=1)), 0.0)


def card_pair_values(cells: pd.DataFrame, culprits: frozenset[str] | set[str] = frozenset()) -> pd.DataFrame:
    """Each measured pair twice, once per end: columns card, tier, value. A pair whose
    other end is a culprit card (``culprits``) says nothing of this one: it is left out of
    this end's values (a control measured beside a slow host keeps its own level)."""
    ok = cells[~cells["failed"]] if "failed" in cells else cells
    src, dst = ok["src"].astype(str), ok["dst"].astype(str)
    parts = []
    for me, other in ((src, dst), (dst, src)):
        keep = ~(other.isin(culprits) & ~me.isin(culprits)).to_numpy(bool) if culprits else slice(None)
        parts.append(pd.DataFrame({"card": me.to_numpy()[keep], "tier": ok["tier"].astype(str).to_numpy()[keep],
                                   "value": ok["value"].to_numpy()[keep]}))
    both = pd.concat(parts, ignore_index=True)
    return both[both["value"].notna()]


def tier_noise(frame: pd.DataFrame) -> pd.Series:
    """Robust sd of one pair's value in each tier (MAD_SD x MAD over the tier's pairs)."""
    med = frame.groupby("tier", observed=True)["value"].transform("median")
    return MAD_SD * (frame["value"] - med).abs().groupby(frame["tier"], observed=True).median()


def card_levels(cells: pd.DataFrame, culprits: frozenset[str] | set[str] = frozenset()) -> pd.DataFrame:
    """Per card and tier: the median of its pair values, its noise and its count (a
    card's pairs with a culprit card left out: :func:`card_pair_values`).

    The noise is the standard error of that median with the tier's pooled spread
    (MEDIAN_SE x sd_tier / sqrt(n)): a card has few pairs in some tiers (three host mates),
    too few to estimate its own spread.
    """
    ok = cells[~cells["failed"] & cells["value"].notna()] if "failed" in cells else cells
    if ok.empty:
        return pd.DataFrame(columns=["card", "tier", "median", "se", "n"])
    ok = ok.assign(tier=ok["tier"].astype(str))
    sd = tier_noise(ok)
    both = card_pair_values(ok, culprits)
    out = both.groupby(["card", "tier"], observed=True)["value"].agg(["median", "count"]).reset_index()
    out = out.rename(columns={"count": "n"})
    out["se"] = MEDIAN_SE * out["tier"].map(sd).astype(float) / np.sqrt(out["n"].clip(lower=1))
    return out


def culprit_cards(record: RunRecord, cards: "pd.Series") -> set[str]:
    """Of ``cards`` (the cards in a run's rows), those its hardware findings (warning or
    critical) name: a card, a NIC's card, every card of a host or of a supernode."""
    sn_hosts = {s["name"]: set(s["hosts"]) for s in (record.topology or {}).get("supernodes") or []}
    named: set[str] = set()
    hosts: set[str] = set()
    for f in record.findings:
        if f.severity.rank < Severity.WARNING.rank or f.about != About.HARDWARE:
            continue
        if f.entity_kind in (EntityKind.CARD, EntityKind.NIC):
            named.add(card_of(f.entity))
        elif f.entity_kind == EntityKind.HOST:
            hosts.add(f.entity)
        elif f.entity_kind == EntityKind.SUPERNODE:
            hosts |= sn_hosts.get(f.entity, set())
    seen = pd.Series(pd.unique(cards.astype(str)))
    return named | set(seen[seen.str.rsplit("/", n=1).str[0].isin(hosts)]) if hosts else named


def summarize(record: RunRecord, rows: pd.DataFrame) -> list[Summary]:
    """Every summary of one run (see the module docstring)."""
    out: list[Summary] = []
    if rows is None or rows.empty or (isinstance(rows, pd.DataFrame) and "kind" not in rows):
        rows = pd.DataFrame(columns=["kind"])  # (a run's RowFrames, or one frame with a kind column)
    keep_links = {f.entity for f in record.findings if f.entity_kind == EntityKind.LINK}
    for metric in ("p2p_bandwidth", "p2p_latency"):
        cells = METRICS[metric].fn(rows, rows_context())
        if cells.empty:
            continue
        ok = cells[~cells["failed"] & cells["value"].notna()].copy()
        if ok.empty:
            continue
        ok["tier"] = ok["tier"].astype(str)
        culprits = culprit_cards(record, pd.concat([ok["src"], ok["dst"]]))
        sd = tier_noise(ok)
        for r in _grouped(ok, ["tier"]).itertuples():
            out.append(Summary("tier", r.tier, metric, float(r.median), float(r.se), int(r.n)))
        for r in card_levels(ok, culprits).itertuples():
            out.append(Summary("card", r.card, f"{metric}/{r.tier}", float(r.median), float(r.se), int(r.n)))
        both = card_pair_values(ok, culprits)
        both["host"] = both["card"].str.rsplit("/", n=1).str[0]
        per_host = both.groupby(["host", "tier"], observed=True)["value"].agg(["median", "count"]).reset_index()
        for r in per_host.itertuples():
            se = MEDIAN_SE * float(sd.get(r.tier, 0.0)) / math.sqrt(max(int(r.count), 1))
            out.append(Summary("host", r.host, f"{metric}/{r.tier}", float(r.median), se, int(r.count)))
        # Links: the worst few per tier (lowest bandwidth, highest latency), and those named.
        worst = (ok.sort_values("value", ascending=metric == "p2p_bandwidth")
                 .groupby("tier", observed=True).head(WORST_LINKS))
        chosen = pd.concat([worst, _named_links(ok, keep_links)])
        chosen["link"] = [link_id(str(a), str(b)) for a, b in zip(chosen["src"], chosen["dst"])]
        for r in chosen.drop_duplicates("link").itertuples():
            out.append(Summary("link", r.link, metric, float(r.value), float(sd.get(r.tier, 0.0)), 1))
    out += _collectives(rows)
    out += _ranks(rows)
    out += _facts(rows)
    out += _golden(rows)
    for tier, d in (record.design or {}).items():
        if isinstance(d, dict) and d.get("source") == "calibrated":
            for key in ("bandwidth_GBps", "latency_us"):
                if isinstance(d.get(key), (int, float)):
                    out.append(Summary("calibration", tier, key, float(d[key]), 0.0, 1))
    return [s for s in out if math.isfinite(s.value)]


def _named_links(cells: pd.DataFrame, links: set[str]) -> pd.DataFrame:
    """The pairs of ``cells`` whose link is among ``links`` (a pair's link is its ends'
    ``link_id``: computed for the pairs between named links' cards only)."""
    cards = {c for link in links if LINK_SEP in link for c in split_link(link)}
    if not cards:
        return cells.iloc[:0]
    maybe = cells[cells["src"].isin(cards).to_numpy(bool) & cells["dst"].isin(cards).to_numpy(bool)]
    return maybe[[link_id(str(a), str(b)) in links for a, b in zip(maybe["src"], maybe["dst"])]]


def _collectives(rows: pd.DataFrame) -> list[Summary]:
    coll = kind_rows(rows, "collective")
    if coll.empty or "group_kind" not in coll:
        return []
    coll = coll[(coll["status"] == "ok") & (coll["group_kind"] != "pair")]
    out = []
    for (name, gk), g in coll.groupby(["collective", "group_kind"]):
        big = g[g["size_bytes"] == g["size_bytes"].max()]
        per_group = big.groupby("group")["busbw_GBps"].median().to_numpy(dtype=float)
        if len(per_group):
            out.append(Summary("collective", f"{name}/{gk}", "busbw_GBps", float(np.median(per_group)),
                               _se(per_group), len(per_group)))
        small = g[g["size_bytes"] == g["size_bytes"].min()]
        per_group = small.groupby("group")["time_us"].median().to_numpy(dtype=float)
        if len(per_group):
            out.append(Summary("collective", f"{name}/{gk}", "small_time_us", float(np.median(per_group)),
                               _se(per_group), len(per_group)))
    return out


def _ranks(rows: pd.DataFrame) -> list[Summary]:
    """Each card's median skew over the collectives (the pairs' rows left out), its robust
    standard error and count, as :func:`_grouped` gives them: over the rank rows' codes and
    values, a run of cards at a time (sncheck.health.rankrows), no frame of every rank row."""
    ranks = rank_rows(rows)
    codes, median, mad, n = ranks.card_medians(ranks.collectives(), spread=True)
    keep = n > 0  # (a card all of whose skews are missing: no value, as the frame's dropna left it)
    out = pd.DataFrame({"card": ranks.cards[codes[keep]].astype(str), "median": median[keep], "mad": mad[keep],
                        "n": n[keep]}).sort_values("card", kind="stable")
    out["se"] = _se_of(out["mad"], out["n"])
    return [Summary("card", r.card, "skew_us", float(r.median), float(r.se), int(r.n)) for r in out.itertuples()]


def _facts(rows: pd.DataFrame) -> list[Summary]:
    facts = kind_rows(rows, "host_fact")
    if facts.empty:
        return []
    bad = ~((facts["status"] == "ok") & facts["ok"].fillna(False).astype(bool))
    counts = bad.groupby(facts["host"].astype(str)).agg(["sum", "count"])
    return [Summary("host", h, "facts_bad", float(r["sum"]), 0.0, int(r["count"]))
            for h, r in counts.iterrows()]


def _golden(rows: pd.DataFrame) -> list[Summary]:
    g = kind_rows(rows, "golden")
    if g.empty or "step" not in g:
        return []
    g = g[g.get("stage", "group") == "group"] if "stage" in g else g
    if g.empty:
        return []
    last = g[g["step"] == g["step"].max()]["loss"].astype(float).to_numpy()
    times = g["step_time_s"].astype(float).dropna().to_numpy() if "step_time_s" in g else np.array([])
    out = [Summary("golden", "model", "final_loss", float(np.median(last)), _se(last), len(last))]
    if len(times):
        out.append(Summary("golden", "model", "step_time_s", float(np.median(times)), _se(times), len(times)))
    return out
