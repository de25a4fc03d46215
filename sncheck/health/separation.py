"""What separates a culprit from its rivals in the explanation search over level kinds
(:class:`sncheck.health.levels.Level`): the more specific entity is the culprit only where
the evidence separates it from the container holding it, and the container's members the
evidence cannot tell slow on their own are said so (README "Localization"); a card read
again against a level a culprit moved."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from sncheck.health.explain import END_KINDS, MEDIAN_SE, NEAR_Z, UPLINK, Entity, group_median, holds_cards, median
from sncheck.topology import SCALE_OUT

if TYPE_CHECKING:
    from sncheck.health.levels import Level


def wider(lv: "Level", best: tuple, tied: list[tuple[tuple, Entity]]) -> tuple:
    """The more specific candidate is preferred only where the evidence separates it: a
    container explaining as much (a supernode holding the best host) whose other cards
    measure as slow as it, within the noise, is the culprit instead. A faint domain at
    0.929 of design against its 0.93 bar: any one host of it nudged the domain's median
    over the bar and was named for the whole domain (5227 seed 2)."""
    score, e, f = best
    if e.kind not in END_KINDS or not f:
        return best
    t = min(f, key=lambda k: f[k])
    x = lv.tiers[t]
    for s, r in sorted(tied, key=lambda sr: len(sr[1].members)):
        if s[0] != score[0] or not holds_cards(r, e):
            continue
        at = x.pairs_of(np.setdiff1d(r.members, e.members))
        at = at[~e.holds(x.a[at], lv.n) & ~e.holds(x.b[at], lv.n)]  # the rest, on its own
        rest = lv.residual(t, at, lv.H)
        n_rest, n_own = int(np.sum(~np.isnan(rest))), len(lv.pairs(e, t))
        if not n_rest or not n_own:
            continue
        # in factor units (explain.reference): the rest's residuals over the tier's reference
        noise, rest = MEDIAN_SE * lv.pair_noise(t) * lv.level[t] / lv.ref[t], rest / lv.ref[t]
        if median(rest) - f[t] <= NEAR_Z * noise * math.sqrt(1 / n_own + 1 / n_rest):  # as slow as it: not told apart
            return (s, r, lv.factors(r))
        fr = lv.factors(r)
        if faint(lv, r, fr.get(t, math.nan) * lv.ref[t], t) and median(rest) - fr[t] <= NEAR_Z * noise / math.sqrt(n_rest):
            return (s, r, fr)  # the rest, without it, is the faint domain the container is: the domain first
    return best


def twin_cables(lv: "Level", best: tuple, tied: list[tuple[tuple, Entity]]) -> set[str]:
    """A leaf-to-spine cable chosen while another cable explains the same exceptions as well:
    each carries only the other's measured pairs there (na-r1's and nd-r1's uplinks to lo1, the
    one leaf pair lo1 joins them by). No measurement tells them apart, and the one named by its
    name was retested through its own other pairs, healthy, and released while the dead pairs
    stayed (reviews15 #4: the gate passed). Both are barred; their pairs are named as links."""
    score, e, _ = best
    if e.key[:1] != (UPLINK,):
        return set()
    twins = {r.name for s, r in tied if r is not e and r.key[:1] == (UPLINK,) and s[:2] == score[:2]
             and same_ground(lv, r, e)}
    return twins | {e.name} if twins else set()


def moved(lv: "Level", e: Entity, per: dict[str, np.ndarray]) -> dict[str, float]:
    """A host's or domain's factor per tier (``per``: its pairs' values there, a failed
    pair 0). Where it moved data slow at a factor beyond a bar, it is its cards at that
    factor, and a card slow at a factor makes no pair fail (README "Mock backend cost
    model": only a dead link, NIC, port or switch does): its factor on each tier is read
    from its pairs that moved data, and a tier whose every pair of it failed is none of its
    effect (hgx-pair: dgx-b whole at 0.57 and the one leaf dead under both hosts; the
    host's scale-out factor 0, read from the leaf's failed pairs, explained the dead
    fabric, and the leaf was never named). A host healthy where it moved data and dead on
    scale-out is every NIC of it down: the host. Its cards' speed acts on scale-out only
    through the NIC's cap, as a card's does (:func:`capped`)."""
    out = {t: min(1.0, median(v)) for t, v in per.items() if len(v)}
    if all((v > 0).all() for v in per.values()):
        return capped(lv, per, out)  # nothing failed
    alive = {t: min(1.0, median(v[v > 0])) for t, v in per.items() if (v > 0).any()}
    return alive if alive and lv.beyond_a_bar(e, alive) else out


def capped(lv: "Level", per: dict[str, np.ndarray], out: dict[str, float]) -> dict[str, float]:
    """A host's or domain's bandwidth factor over scale-out, its cards' speed inside through the
    NIC's cap (``min(1, s B_up / B_out)``, :meth:`Level.card_factors`), or what its scale-out pairs
    read where healthier. Slow there alone while its own NVLink-tier pairs read healthy, it is not
    its cards at that factor but its NICs, each a culprit of its own: r10-04's four NICs of one
    host at 0.5 (its intra-host and scale-up pairs 1.0) were named as the host. Its cards' speed acts
    alike on every NVLink tier (a card's one factor there, :meth:`Level.card_factors`): a 2-card host at
    0.6 whose one inside pair is a 0.3 link read 0.18 on intra_host and 0.6 on scale_up, one host
    "explaining" the link (r13-39); read as one speed, that pair is left to the link."""
    inside = [v for t, v in per.items() if t != SCALE_OUT and len(v)]
    if not inside:
        return out
    s = min(1.0, median(np.concatenate(inside)))
    out = {t: s if t != SCALE_OUT else v for t, v in out.items()}  # its cards' one speed on every NVLink tier
    if lv.model.out_cap is None or SCALE_OUT not in out:
        return out
    return {**out, SCALE_OUT: min(1.0, max(s / lv.model.out_cap, out[SCALE_OUT]))}


def faint(lv: "Level", r: Entity, level: float, t: str) -> bool:
    """A domain ``r`` whose ``level`` on an inside tier ``t`` (as its bar reads it) is beyond
    the domain bar: a host of it explaining as much is told apart from its mates, but its mates are
    that domain on their own (demo-2sn at 0.928, node003 at 0.9 in it, seed 5: the host
    named, the domain's median then 0.9301 by a hair, its 28 other cards left near their
    bars and quarantined; the domain alone explains every pair within its bars)."""
    return lv.domain_bar is not None and t != SCALE_OUT and lv.domain_of(r) >= 0 and level < lv.domain_bar


def same_ground(lv: "Level", a: Entity, b: Entity) -> bool:
    """Two candidates the measurements cannot tell apart: over the same cards (a card and
    its NIC), or shared elements on the paths of the same exceptions (two leaves that
    every measured pair crosses together)."""
    if a.kind in END_KINDS and b.kind in END_KINDS:
        return set(a.members.tolist()) == set(b.members.tolist())
    if a.kind in END_KINDS or b.kind in END_KINDS:
        return False
    return all(np.array_equal(np.intersect1d(lv.pairs(a, t), lv.pair_ex[t]),
                              np.intersect1d(lv.pairs(b, t), lv.pair_ex[t])) for t in lv.tiers)


def untold(lv: "Level", e: Entity, f: dict[str, float]) -> list[int]:
    """The members of a host or supernode culprit the evidence cannot tell slow on their
    own: in no tier where its factor is beyond the card bar have they pairs with partners
    outside it that nothing else holds slow (an HGX host's eighth card, all its NVLink
    pairs with its slow host mates and its scale-out pairs at the NIC's cap either way)."""
    bar = lv.card_bar if lv.card_bar is not None else (lv.pair_design or lv.pair_peers or 1.0)
    told: set[int] = set()
    others = [h for h in lv.H if h[0] is not e]
    for t, ft in f.items():
        if ft * lv.ref[t] / lv.level[t] >= bar:
            continue  # its effect does not show in this tier
        x = lv.tiers[t]
        at = lv.pairs(e, t)
        inside = e.holds(x.a[at], lv.n) & e.holds(x.b[at], lv.n)
        clean = lv.pred(t, at, others) >= 1.0
        for end in (x.a[at], x.b[at]):
            told |= set(end[~inside & clean & e.holds(end, lv.n)].tolist())
    return [m for m in e.members.tolist() if m not in told]


def healthy_member(lv: "Level", e: Entity, f: dict[str, float]) -> str | None:
    """A host or supernode stands for every card of it at its factor (README "Mock backend
    cost model": a card's speed acts on each tier inside its domain alike, on bandwidth's
    scale-out only through its NIC's cap). A member healthy on its own evidence is a card
    the container would take with it, and contradicts it: its pairs there with partners
    outside it that the rest of the hypothesis holds healthy read inside the card bar and
    above the container's factor by more than NEAR_Z standard errors of their median, or a
    pair of two members reads inside the card bar and healthier than the container's
    factor beyond the card bar's tolerance, its noise bar (a pair runs at its slower end:
    both are healthy; a 6-pair retest's pair noise is its slow pairs' spread). 5039 seed 9, nvl72-4rack: ra07's gpu2 at 0.85 and gpu1
    throttled to 0.8 read as the tray at 0.929 on scale-up, while gpu0 and gpu3 measured
    1.00 there on 68 pairs each; in the tray's own retest, gpu0<->gpu3 1.00 against its 0.83."""
    if e.kind not in ("host", "supernode") or len(e.members) < 2 or lv.card_bar is None:
        return None
    others = [h for h in lv.H if h[0] is not e]
    for t, ft in f.items():
        if ft >= 1.0 or (lv.model.out_cap is not None and t == SCALE_OUT):
            continue
        x, level, ref = lv.tiers[t], lv.level[t], lv.ref[t]
        at = lv.pairs(e, t)
        in_a, in_b = e.holds(x.a[at], lv.n), e.holds(x.b[at], lv.n)
        clean = ~x.failed[at] & (lv.pred(t, at, others) >= 1.0)
        mine = (in_a != in_b) & clean
        cards, med, n = group_median(np.where(in_a, x.a[at], x.b[at])[mine], x.ratio[at][mine])
        se = MEDIAN_SE * lv.pair_noise(t) / np.sqrt(np.maximum(n, 1))
        off = (n >= lv.card_min) & (med / level >= lv.card_bar) & ((med - ft * ref) / level > NEAR_Z * se)
        if off.any():
            k = int(np.argmax(np.where(off, med, -np.inf)))
            return (f"{lv.paths.cards[int(cards[k])]} measured {med[k]:.2f} of design on {int(n[k])} pairs ({t}) "
                    f"with healthy partners, not the {ft * ref:.2f} of the {e.kind}: not part of the {e.kind} finding")
        both = at[in_a & in_b & clean]
        r = x.ratio[both]
        with np.errstate(invalid="ignore"):
            off = (r / level >= lv.card_bar) & (r * lv.card_bar > ft * ref)
        if off.any():
            i = int(both[int(np.argmax(np.where(off, r, -np.inf)))])
            return (f"{lv.paths.link(int(x.a[i]), int(x.b[i]))} measured {x.ratio[i]:.2f} of design ({t}), not the "
                    f"{ft * ref:.2f} of the {e.kind} its two ends are in: not part of the {e.kind} finding")
    return None


def beside_sick(lv: "Level", link: Entity) -> bool:
    """A link culprit one of whose ends another culprit holds slow: a link of its own."""
    ends = np.array([link.key[1], link.key[2]])
    return any(e.kind in END_KINDS and e.holds(ends, lv.n).any() for e, _ in lv.H if e is not link)


def reread_cards(lv: "Level", t: str, span: float) -> None:
    """The cards no culprit holds read against the card bar of tier t again, under the
    hypothesis (``span``: the near share above it): where a culprit moved the tier's level,
    a card its first look read against the culprit's level is told from it now (hgx-pair:
    dgx-a whole at 0.494 is half the intra-host tier, and dgx-b/gpu7 at 0.91 read 1.84 of
    its peers, never a candidate). Added to the first look's, never taken from it."""
    if lv.card_bar is None:
        return
    held = [m for e, _ in lv.H if e.kind in END_KINDS for m in e.members.tolist()]
    # the cards with a measured pair (the first look's: no pass over every pair end); a
    # card none of whose pairs was measured has no residual either way
    got, med, n = lv.card_residuals(t, np.setdiff1d(lv.look(t).cards, np.array(held, np.int64)), lv.H)
    if len(got):
        ratio = med / lv.peer_level(t, got, lv.H)
        enough = n >= lv.card_min
        lv.card_ex[t] = np.union1d(lv.card_ex[t], got[(ratio < lv.card_bar) & enough])
        lv.card_near[t] = np.union1d(lv.card_near[t], got[(ratio < lv.card_bar * (1 + span)) & enough])


def refit(lv: "Level", e: Entity, f: dict[str, float]) -> list[tuple[Entity, dict[str, float]]]:
    """The hypothesis with ``e`` added, each end culprit it shares pairs with read again: an end's
    factor is its pairs over the shared culprits on their paths (README "Localization"), also
    when the shared one is found after it. A NIC at 0.4 under a leaf at 0.85, taken first, read
    0.34 (its pairs' level, the leaf's share in it): the leaf then "contradicted" it (its pairs
    1.18 of the 0.29 both predicted) and the leaf's other four NICs were named one by one
    (r13-27, both seeds)."""
    H2 = [*lv.H, (e, f)]
    if e.kind in END_KINDS:
        return H2
    saved = lv.H
    try:
        for i, (c, fc) in enumerate(saved):
            if c.kind not in END_KINDS or not any(
                    len(np.intersect1d(lv.pairs(c, t), lv.pairs(e, t), assume_unique=True)) for t in f if t in fc):
                continue
            lv.H = H2[:i] + H2[i + 1:]
            again = lv.factors(c)
            H2[i] = (c, {t: again.get(t, v) for t, v in fc.items()})
    finally:
        lv.H = saved
    return H2


OWN_PAIRS = 3  # a leaf's pairs that cross no other switch: at least these to read its factor from


def own_path(lv: "Level", e: Entity, t: str, at: np.ndarray, values: np.ndarray, clean: np.ndarray) -> np.ndarray:
    """Which of a candidate's pairs ``at`` (``clean``: those the hypothesis holds healthy but for it)
    its factor is read from: a leaf's pairs that cross no other switch (both ends under it) where
    they read healthier than all of them beyond a pair's tolerance, else ``clean``. A pair reads the
    product of the shared elements on its path, and another slow leaf's share on the pairs through
    both is not its own: gb200-4rack with pod-ab-rail0 and pod-cd-rail0 at 0.5 read each leaf at the
    0.25 of its 1,296 pairs through both, its 324 inside at 0.5 contradicted it, and 648 links were
    named. (A leaf whose inside pairs read as slow as the rest reads as before: the same pairs.)"""
    if e.key[:1] != ("leaf",) or t != SCALE_OUT or lv.pair_tol is None:
        return clean
    x = lv.tiers[t]
    own = clean & (lv.paths.leaf[x.a[at]] == e.key[1]) & (lv.paths.leaf[x.b[at]] == e.key[1])
    if own.sum() < OWN_PAIRS or own.sum() == clean.sum():
        return clean
    return own if median(values[own]) > lv.pair_tol * median(values[clean]) else clean
