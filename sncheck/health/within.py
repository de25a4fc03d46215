"""A pair through a named culprit is that culprit's symptom only within the culprit's own measured factor.

A pairwise collective mixes both ends' compute and launch with the path (culprits.DERIVED): a pair
through a culprit named already (an earlier layer's, a retest's other suspect: ``DetectContext.known``)
said nothing of its other end, and was dropped whole. That held the culprit to explain any slowness of
its pairs, however far past its own measurement: a NIC measured at 0.85 "explained" its card's pair at
0.3 over a degraded scale-out link, and under a critical gate the link passed (review18 #9).

Under the mock's cost model (README "Mock backend cost model") a pair runs at the lower of its two ends'
factors (card speed; over the scale-out network also each end's rail NIC) times the factor of every
link and switch on its path. So a pair's bandwidth over its tier's level (``pair_busbw``'s value), divided
by what the named culprits on it predict is what is left for anything else: a pair the culprits explain
reads about 1 and is judged healthy, and the excess of one they do not is judged as if unexplained. A
culprit's factor is what these pairs measure of it where three or more of its pairs through no other
culprit say it (their median, at most 1; the scale-out network apart, where a card's speed shows only
through its NIC's cap): a transient card, healthy again in its link's retest, explains nothing of that
link's pair there (release18 LEFT: a card at 0.7 hid the 0.3x link to its mate on a two-card host). Else
it is its finding's (``DetectContext.factors``: ``evidence.factor``). A culprit
with no measured factor (a dead link, a host down, a retest's suspect judged afresh) explains its pairs
whole, as before; a pair that failed outright too (a slow culprit moves bytes: a failure is no factor's).

A link between two cards measured by its pair tests reads the mean of its two directions (``p2p_bandwidth``:
half the noise of either), but a collective's edge carries both ways and runs at its slower direction (README
"Mock backend cost model"; a ring or a tree sends over both): a link slow one way (0.3 out, 1.0 back, read 0.65)
explains a group through it down to 0.3. Its factor for what it explains (:func:`measured_factors`) is its slow
direction's (:func:`one_way`, evidence ``one_way_factor``): r13-42's cross group at 0.31 read beyond the link's
0.65, and the leaf above it was named and isolated.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

import numpy as np
import pandas as pd

from sncheck.health.metrics import DetectContext, cards_held
from sncheck.model import CARD_ENDS, link_id, on_fabric, split_link
from sncheck.topology import SCALE_OUT, SCALE_UP

WITHIN = "pair_busbw"  # the derived pair metric judged within its culprits' factors (a bandwidth over its tier's level)


def out_cap(ctx: DetectContext) -> float | None:
    """The NIC's cap on a card's speed over scale-out (the scale-out design over the scale-up one: a card
    at s moves ``min(1, s / cap)`` of the scale-out design, the mock's ``min(B_out, s B_up)``), or None."""
    up, out = ctx.design.get(SCALE_UP), ctx.design.get(SCALE_OUT)
    if up is None or out is None or not up.bandwidth_GBps or not out.bandwidth_GBps:
        return None
    return out.bandwidth_GBps / up.bandwidth_GBps


def within_culprits(cells: pd.DataFrame, ctx: DetectContext) -> pd.DataFrame:
    """The pairs of a derived pair metric (columns src, dst, tier, value, failed) that the known
    culprits leave to be judged: those through no culprit as they are, those through culprits that
    all have a measured factor over what those factors predict; the rest (a culprit with no factor,
    a failed pair through one) are the culprits' symptom, left out."""
    if cells.empty:
        return cells
    a, b = cells["src"].astype(str).to_numpy(), cells["dst"].astype(str).to_numpy()
    tier = cells["tier"].astype(str).to_numpy()
    out = tier == SCALE_OUT
    none = np.zeros(len(cells), bool)
    failed = cells["failed"].fillna(False).to_numpy(bool) if "failed" in cells else none
    value = cells["value"].astype(float).to_numpy()
    judged = np.logical_or.reduce([_through(e, k, a, b, ctx) for e, k in ctx.known if e == ctx.subject]
                                  + [none])  # a retest's subject's pairs measure no other culprit
    hits, whole = {}, none.copy()  # (whole: through one with no measured factor, explained whole)
    for entity, kind in ctx.known:
        if entity != ctx.subject:
            hit = _through(entity, kind, a, b, ctx)
            if entity not in ctx.factors:
                whole |= hit
            else:  # a NIC carries its card's scale-out pairs alone
                hits[(entity, kind)] = hit & out if kind == "nic" else hit
    on = np.logical_or.reduce([*hits.values(), none])
    cap = out_cap(ctx)
    if not on.any():
        return cells[~whole] if whole.any() else cells
    # each tier's level of the pairs through no culprit (a spine over half the pairs of its tier set their median)
    clean = ~on & ~whole & ~judged & ~failed & np.isfinite(value)
    for t in np.unique(tier[on]):
        if (clean & (tier == t)).sum() >= 3:
            value = np.where(tier == t, value / np.median(value[clean & (tier == t)]), value)
    ends, path = np.ones(len(cells)), np.ones(len(cells))  # the lower end's factor, the path's product
    count = np.sum(list(hits.values()), axis=0)  # how many culprits each pair is through
    for (entity, kind), hit in hits.items():
        # its factor as these pairs measure it (a transient card healthy again in a retest), where three or more
        # of its pairs through no other culprit say it; else as its finding measured it
        others = (count - hit > 0) | whole | judged | failed
        factor = np.full(len(a), float(ctx.factors[entity]))
        for side in (~out, out):  # the scale-out network apart: a card's speed shows there through the NIC's cap
            alone = hit & side & ~others & np.isfinite(value)
            if alone.sum() >= 3:
                factor[side] = min(1.0, float(np.median(value[alone])))
        if cap is not None and kind in CARD_ENDS:
            # its speed s shows over scale-out only as min(1, s / cap): a transient card healthy again inside
            # explains nothing of its scale-out pairs a slow leaf above it halves (card-hides-its-leaf)
            speed = float(np.median(factor[hit & ~out])) if (hit & ~out).any() else float(ctx.factors[entity])
            factor[out] = np.minimum(1.0, np.maximum(factor[out], speed / cap))
        if kind == "link" or on_fabric(entity, kind):
            path = np.where(hit, path * factor, path)
        else:
            ends = np.where(hit, np.minimum(ends, factor), ends)
    drop = whole | (on & failed)
    kept = cells.assign(value=value / np.where(on, ends * path, 1.0))
    return kept[~drop] if drop.any() else kept


def _median(column: pd.Series) -> float:
    x = column.to_numpy(float, na_value=np.nan)
    x = x[np.isfinite(x)]
    return float(np.median(x)) if len(x) else np.nan


def _through(entity: str, kind: str, a: np.ndarray, b: np.ndarray, ctx: DetectContext) -> np.ndarray:
    """Which pairs (ends ``a``, ``b``) one culprit is on: a switch's or cable's by the fabric's routes, a
    link's its own pair, a card's, NIC's, host's or supernode's those with an end among its cards."""
    if on_fabric(entity, kind):
        return ctx.topo.fabric.through_any([entity], a, b)
    if kind == "link":
        return np.fromiter((link_id(x, y) == entity for x, y in zip(a, b)), bool, len(a))
    held = cards_held(entity, kind, ctx.topo)
    return np.isin(a, held) | np.isin(b, held) if held else np.zeros(len(a), bool)


def measured_factors(findings) -> dict[str, float]:
    """Each culprit finding's measured factor (its ``evidence.factor``, between 0 and 1; a link slow one way: its
    slow direction's, ``one_way_factor``), by entity: what it explains of the pairs and groups through it
    (:func:`within_culprits`, ``groups.beyond_culprits``)."""
    return {f.entity: float(x) for f in findings
            if isinstance(x := f.evidence.get(ONE_WAY, f.evidence.get("factor")), (int, float)) and 0 < x < 1}


ONE_WAY = "one_way_factor"
APART = 0.9  # a pair's slow direction under this share of its fast one: the two differ beyond the noise (2% each)
DIRECTIONS = ["src", "dst", "bw_GBps", "bw_rev_GBps"]


def one_way(findings: list, rules: Set[str], frames: Any) -> None:
    """Give each card link finding of a pair bandwidth rule (``rules``: their names) whose pair's two directions
    differ beyond the noise its slow direction's factor for collectives (evidence ``one_way_factor``): its
    factor (the two directions' mean over the level) times its pair's slow direction over that mean, each
    direction the median of the pair's rows in ``frames`` (a layer's rows: ``RowFrames`` or ``PartFrames``)."""
    for f in findings:
        factor = f.evidence.get("factor")
        if f.entity_kind != "link" or f.rule not in rules or on_fabric(f.entity, f.entity_kind) \
                or not isinstance(factor, (int, float)) or not 0 < factor < 1:
            continue
        a, b = split_link(f.entity)
        ways: list[list[pd.Series]] = [[], []]  # a to b, b to a (a row measured b to a: its reverse is a to b)
        for i, (src, dst) in enumerate(((a, b), (b, a))):
            p = frames.where(src=src, dst=dst).kind("p2p", DIRECTIONS)
            if not p.empty and {"bw_GBps", "bw_rev_GBps"} <= set(p):
                ways[i].append(p["bw_GBps"])
                ways[1 - i].append(p["bw_rev_GBps"])
        lo, hi = sorted(_median(pd.concat(w)) if w else np.nan for w in ways)
        if np.isfinite(lo) and np.isfinite(hi) and hi > 0 and lo < APART * hi:
            f.evidence[ONE_WAY] = round(float(factor) * 2 * lo / (lo + hi), 4)


def rests_on(f, named: list, ctx: DetectContext) -> list[str]:
    """Of the culprits ``named`` (findings), those a pair finding ``f`` was judged within: on one of its worst
    pairs (its evidence's ``worst``), with a measured factor (``ctx.factors``). Its retest waits for theirs
    (sncheck.run.isolation): a transient one released explains nothing of its pairs there, a confirmed one
    its factor (a NIC under a transient leaf, named beyond the leaf's 0.5, read 0.8 of its bar in its
    retest through the leaf's stale factor, and was released beside it)."""
    pairs = [str(w.get("link", "")) for w in f.evidence.get("worst") or () if isinstance(w, dict)]
    ends = [p.split("<->") for p in pairs if p.count("<->") == 1]
    if not ends:
        return []
    a, b = np.array([e[0] for e in ends], object), np.array([e[1] for e in ends], object)
    return [g.entity for g in named if g.entity != f.entity and g.entity in ctx.factors
            and _through(g.entity, str(g.entity_kind), a.astype(str), b.astype(str), ctx).any()]
