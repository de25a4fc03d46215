"""The stress layer's pairwise narrowing read as pair metrics: each pair's busbw or time over its
tier's level, the level its controls' (pairs with no suspect end), and where a tier has no control
its design (the cost model's prediction for a pair).

Design is the control where none exists: with every card a suspect (inv-dualrail: a ToR-style leaf
holding both rails, both cross groups slow, all 24 cards suspects) the level fell back to the median
of all pairs, and with 108 of 200 scale-out pairs through a leaf at 0.4 that median WAS the leaf's:
its pairs read 1.0 "of their peers", the healthy ones 2.5, and a leaf at 0.4 passed the nightly
(reviews20 #2). Such a tier's bandwidth-bound pairs are read against what design predicts for two
ranks (``t = k(2) alpha + F(2) n beta``, busbw ``1 / (2 alpha / n + beta)``, as
:func:`sncheck.health.groups._judge` reads a lone group), at the collective group rule's design bar
(``design_below`` 0.5 of design is the pair rule's ``below`` 0.8 of :data:`DESIGN_LEVEL`, the
tier's level in design units): a pair below half of design is evidence by itself, as the cross
group that raised it was, and a culprit's factor is its slowdown against design.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sncheck.config.inventory import tier_design
from sncheck.health.groups import BANDWIDTH_BOUND, DEFAULTS
from sncheck.store.frames import kind_rows

if TYPE_CHECKING:
    from sncheck.health.metrics import DetectContext

# a tier's level (design units) where design is its control: the pair rule's peer bar (0.8) of it is the group
# rule's design bar (0.5)
DESIGN_LEVEL = DEFAULTS["design_below"] / DEFAULTS["below"]
CELLS = ["src", "dst", "link", "tier", "value", "failed"]


def pairs_of(rows: pd.DataFrame, ctx: "DetectContext") -> pd.DataFrame:
    """Rows of the stress layer's pairwise narrowing pass, with their pair identity; once
    per evaluation (three metrics read them). Callers get a shallow copy, as from _p2p."""
    key = ("_pairs", id(rows))
    if ctx.cache is not None and key in ctx.cache:
        return ctx.cache[key].copy(deep=False)
    coll = kind_rows(rows, "collective")
    if coll.empty or "group_kind" not in coll:
        return pd.DataFrame()
    pairs = coll[coll["group_kind"] == "pair"].copy()
    if pairs.empty:
        return pairs
    # Each pair has a row per collective and size: parse each distinct group once.
    codes, groups = pd.factorize(pairs["group"].astype(str))
    ends = [g.removeprefix("pair:").split("<->", 1) for g in groups.tolist()]
    src = np.array([e[0] for e in ends], dtype=object)
    dst = np.array([e[1] if len(e) > 1 else None for e in ends], dtype=object)
    pairs["src"], pairs["dst"] = src[codes], dst[codes]
    pairs["link"] = ctx.topo.link_ids(pairs["src"], pairs["dst"])
    pairs["tier"] = ctx.topo.tiers(pairs["src"], pairs["dst"])
    pairs["failed"] = pairs["status"] != "ok"
    if ctx.cache is not None:
        ctx.cache[key] = pairs
    return pairs.copy(deep=False)


def pair_ratio(rows: pd.DataFrame, ctx: "DetectContext", column: str, large: bool) -> pd.DataFrame:
    """Per pair: its worst size's median ``column`` over its tier's level (``large``: busbw at
    bandwidth-bound sizes, else time at latency-bound ones); on the pairs of a tier read against
    design (module doc) its busbw over design's and ``design`` 1 (:func:`sncheck.health.pairview.summarise`
    gives that tier the level :data:`DESIGN_LEVEL`)."""
    pairs = pairs_of(rows, ctx)
    if pairs.empty:
        return pd.DataFrame(columns=CELLS)
    key = ["collective", "size_bytes", "tier"]
    level = pairs.groupby(key)[column].transform("median")
    alone = None
    if apart := ctx.apart_cards():
        # a retest (or the narrowing): the level is its controls' (pairs with no end of the subject's) where it
        # has any. A leaf slow above 256 MiB was the median of its retest's 9 scale-out pairs (6 through it),
        # read 1.0 of it at its worst size and was released (r10-09).
        theirs = pairs["src"].isin(apart).to_numpy(bool) | pairs["dst"].isin(apart).to_numpy(bool)
        controls = pairs[column].where(~theirs).groupby([pairs[k] for k in key], observed=True).transform("median")
        if large:
            alone = _design_alone(pairs, ctx, column, controls)
        level = controls.fillna(level)
    pairs["ratio"] = pairs[column] / level
    if alone is not None:  # value in design units
        pairs["ratio"] = pairs["ratio"].where(~alone, pairs[column] / _predicted(pairs, ctx))
    sized = pairs[pairs["size_bytes"] >= ctx.large_bytes] if large else pairs[pairs["size_bytes"] <= ctx.small_bytes]
    if alone is not None:  # (a tier read against design: only where design bounds the size)
        sized = sized[~alone[sized.index] | np.isfinite(_predicted(sized, ctx))]
    out = pairs.groupby("link").agg(src=("src", "first"), dst=("dst", "first"), tier=("tier", "first"),
                                    failed=("failed", "any")).reset_index()
    if large:  # its worst size: a fault acting above a message size shows at the larger alone (r8-29)
        value = sized.groupby(["link", "size_bytes"], observed=True)["ratio"].median().groupby(level=0).min()
    else:
        value = sized.groupby("link")["ratio"].median()
    out["value"] = out["link"].map(value)
    if alone is not None:
        by_design = set(pairs.loc[alone, "tier"].astype(str))
        out["design"] = np.where(out["tier"].astype(str).isin(by_design), 1.0, np.nan)
    return out


def _predicted(pairs: pd.DataFrame, ctx: "DetectContext") -> pd.Series:
    """Each row's busbw (GB/s) as its tier's design predicts it for two ranks, where that is
    bandwidth-bound (the latency term under :data:`BANDWIDTH_BOUND` of the time); else NaN."""
    designs = {t: tier_design(ctx.design, str(t)) for t in pairs["tier"].unique()}
    lat = pairs["tier"].map({t: d.latency_us if d and d.latency_us else np.nan for t, d in designs.items()})
    bw = pairs["tier"].map({t: d.bandwidth_GBps if d and d.bandwidth_GBps else np.nan for t, d in designs.items()})
    alpha = 2 * lat.astype(float) / pairs["size_bytes"].astype(float)  # us a byte, as groups._judge's p alpha / n
    beta = 1.0 / (bw.astype(float) * 1e3)  # GB/s: 1e3 bytes a us
    x = (alpha + beta).where(alpha <= BANDWIDTH_BOUND * (alpha + beta))
    return 1.0 / (x * 1e3)


def _design_alone(pairs: pd.DataFrame, ctx: "DetectContext", column: str, controls: pd.Series) -> pd.Series | None:
    """The rows of the tiers read against design (None if none): with no control at any
    bandwidth-bound size, design bounding every pair of the tier at some size (each pair then has a
    value against design), and the median pair below :data:`DESIGN_LEVEL` of design there (the
    level is a culprit's own: most pairs cross it). Where the median pair reads within design's bar
    it stays the level: one link at 0.6 among a host's six pairs reads 0.6 of it, and would read
    within design's bar (0.5) by itself."""
    big = (pairs["size_bytes"] >= ctx.large_bytes).to_numpy(bool)
    if not big.any():
        return None
    predicted = _predicted(pairs, ctx)
    bounded = np.isfinite(predicted).to_numpy(bool) & big
    if not bounded.any():
        return None
    tiers = pairs["tier"].astype(str)
    no_control = ~controls[big].notna().groupby(tiers[big]).any()
    every = pd.Series(bounded).groupby(pairs["link"].to_numpy()).any().groupby(
        pairs.groupby("link")["tier"].first().astype(str)).all()
    to_design = (pairs[column] / predicted)[bounded].groupby(tiers[bounded]).median()
    judged = [t for t, none in no_control.items() if none and bool(every.get(t, False))
              and to_design.get(t, np.inf) < DESIGN_LEVEL]
    return tiers.isin(judged) if judged else None
