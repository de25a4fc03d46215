"""Findings from pair tests: localize the bad pairs (:mod:`localize`) and describe each
culprit with its evidence, judged per tier: the tier it was found bad in, that tier's
measured and expected values, and a breakdown where it spans several tiers."""

from __future__ import annotations

import math
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sncheck.health.findings import jsonable
from sncheck.health.localize import LinkBar, localize
from sncheck.health.metrics import METRICS, DetectContext
from sncheck.model import EntityKind, Finding, card_of
from sncheck.topology import SCALE_OUT
from sncheck.model import split_link

if TYPE_CHECKING:
    from sncheck.health.rules import Rule


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
        self.tiers = cells["tier"].astype(str).to_numpy() if "tier" in cells.columns else None
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
        elif kind == "nic":
            members = [card_of(entity)]
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
        at = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.intp)
        if kind == "nic" and self.tiers is not None:  # a NIC carries its card's scale-out pairs
            at = at[self.tiers[at] == SCALE_OUT]
        return at


def pair_findings(cells: pd.DataFrame, rule: "Rule", ctx: DetectContext,
                  flagged: Mapping[str, set[str]] | AbstractSet[str] = frozenset(),
                  expected: float | None = None) -> list[Finding]:
    """Localize bad pairs (column ``bad``) and cards flagged by a score (each with the
    tiers it was flagged in) into findings. The evidence names the tier the culprit
    was judged in and that tier's expected value (its design, else the median of its
    pairs), with a per-tier breakdown where the culprit spans several tiers."""
    unit = METRICS[rule.metric].unit
    culprits = localize(cells, ctx.topo, flagged, link_bar=_link_bar(rule))
    if not culprits:
        return []
    touching = _Touching(cells, ctx)
    values = cells["value"].to_numpy(float)
    tiers = touching.tiers if touching.tiers is not None else np.full(len(cells), "")
    design = cells["design"].to_numpy(float) if "design" in cells else None
    out = []
    for c in culprits:
        at = touching.rows(c.entity, c.kind)
        n_touching = len(at)
        per_tier = _tier_breakdown(c, at, values, tiers, design, expected, flagged)
        tier = _judged_tier(per_tier, rule)
        measured = per_tier[tier]["measured"] if tier is not None else jsonable(
            c.cells["value"].median() if not c.cells.empty else _median(values[at]))
        exp = per_tier[tier]["expected"] if tier is not None else jsonable(expected)
        failed = int(c.cells["failed"].sum()) if "failed" in c.cells else 0
        where = f" ({tier})" if tier else ""
        if c.note == "unlocalised":
            link = c.cells["link"].iloc[0] if len(c.cells) else ""
            what = (f"card or link, not localised: {c.entity} or {link}: {rule.summary}; measured against too "
                    f"few peers to tell the card from its link")
        elif c.kind == "link" and c.note == "independent":
            what = f"link {c.entity}: {rule.summary}{where}, well below what its two ends explain"
        elif c.kind == "link":
            what = f"link {c.entity}: {rule.summary}{where} between two otherwise healthy cards"
        elif c.kind == "nic":
            share = f"on {len(c.cells)} of {n_touching}" if len(c.cells) else f"across its {n_touching}"
            what = (f"nic {c.entity} (serving {card_of(c.entity)}): {rule.summary} over the scale-out "
                    f"network {share} pair tests there; its pairs inside the domain are healthy")
        elif c.cells.empty:
            what = f"{c.kind} {c.entity}: {rule.summary}{where} across its pairs as a whole"
        else:
            what = f"{c.kind} {c.entity}: {rule.summary} on {len(c.cells)} of {n_touching} pair tests{where}"
        if failed:
            what += f" ({failed} carried nothing)"
        worst = c.cells.sort_values("value").head(5) if not c.cells.empty else c.cells
        evidence = {
            "measured": measured, "expected": exp, "unit": unit, "tier": tier,
            "bad_pairs": int(len(c.cells)), "pairs": n_touching,
            "worst": [{"link": link, "value": jsonable(value)}
                      for link, value in zip(worst["link"].tolist(), worst["value"].tolist())] if len(worst) else [],
        }
        if len(per_tier) > 1:
            evidence["tiers"] = per_tier
        if c.note == "independent":
            evidence["independent"] = True
        if c.note == "unlocalised":
            evidence["localised"] = False
            evidence["link"] = str(c.cells["link"].iloc[0]) if len(c.cells) else None
        out.append(Finding(c.entity, EntityKind(c.kind), rule.layer, rule.name, rule.severity, what, evidence))
    return out


def _link_bar(rule: "Rule") -> LinkBar | None:
    """A ratio rule's bar, for a link worse than its two ends explain (localize.LinkBar).
    Pair tests only: a p2p pair's value is set by its slower end, so its ends' levels
    explain it; a pairwise collective mixes both ends' compute and latency."""
    if METRICS[rule.metric].layer != "connectivity":
        return None
    if rule.op == "ratio_to_design" or (rule.op == "peer_outlier" and rule.params.get("method") == "ratio"
                                        and rule.params.get("per") == "pair"):
        side, bound = _bound(rule)
        below = side == "below"
        # A bar on the wrong side of 1 (below 1.5x design) says nothing about one pair
        # against its ends: every pair would be "well below" them.
        return LinkBar(below, float(bound)) if (bound < 1 if below else bound > 1) else None
    return None


def _tier_breakdown(c, at: np.ndarray, values: np.ndarray, tiers: np.ndarray, design: np.ndarray | None,
                    expected, flagged) -> dict[str, dict]:
    """Per tier the culprit's pairs touch: measured (its bad pairs' median, else all its
    pairs'), expected (the tier's design, else the given value, else the tier's median)
    and how many of its pairs are bad."""
    bad_tiers = c.cells["tier"].astype(str).to_numpy() if "tier" in c.cells and len(c.cells) else np.array([])
    bad_values = c.cells["value"].to_numpy(float) if len(c.cells) else np.array([])
    marks = flagged.get(c.entity) if isinstance(flagged, Mapping) else None
    out: dict[str, dict] = {}
    for t in sorted(set(tiers[at].tolist())):
        mine = at[tiers[at] == t]
        in_bad = bad_values[bad_tiers == t]
        if design is not None and expected is None and np.isfinite(design[mine]).any():
            exp = _median(design[mine])
        elif expected is not None:
            exp = expected
        else:
            exp = _median(values[tiers == t])
        out[t] = {"measured": jsonable(_median(in_bad) if len(in_bad) and np.isfinite(in_bad).any()
                                       else _median(values[mine])),
                  "expected": jsonable(exp), "bad_pairs": int(len(in_bad)), "pairs": int(len(mine)),
                  **({"flagged": True} if marks and t in marks else {})}
    return out


def _judged_tier(per_tier: dict[str, dict], rule: "Rule") -> str | None:
    """The tier the culprit was judged bad in: the one with the most bad pairs (or
    flagged), then the one furthest from its expected value."""
    if not per_tier:
        return None
    below = "below" in rule.params

    def worst(t: str) -> tuple:
        d = per_tier[t]
        m, e = d["measured"], d["expected"]
        ratio = m / e if isinstance(m, (int, float)) and isinstance(e, (int, float)) and e else 1.0
        return (d["bad_pairs"] + (1 if d.get("flagged") else 0), -ratio if below else ratio)

    return max(per_tier, key=worst)


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


def flagged_tiers(levels: pd.DataFrame) -> dict[str, set[str]]:
    """Card -> the tiers it was found bad in, from rows with columns card and tier."""
    out: dict[str, set[str]] = {}
    for card, tier in zip(levels["card"].astype(str), levels["tier"].astype(str)):
        out.setdefault(card, set()).add(tier)
    return out
