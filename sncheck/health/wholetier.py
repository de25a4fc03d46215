"""A domain's tier beyond its pair bar on every pair the search left unexplained
(:class:`sncheck.health.levels.Level`): one finding for the domain, not a link per pair.

Under the cost model a pair reads the lower of its ends' factors times its path's; a
culprit explains a pair when the pair's residual (measured over predicted) is inside every
bar. When every measured pair of a tier inside a supernode is beyond a pair bar and no
candidate explains them (a bar the design itself cannot reach: ``ratio_to_design below:
1.5``, where every healthy pair reads 1.0), no entity smaller than the domain is on the
path of them all, and no factor at or below 1 makes a residual pass a bar above design: the
smallest set naming every such pair is the domain itself. Naming each pair a link "between
two otherwise healthy cards" named 2,556 links on nvl72, each quarantined and retested. The
domain's finding says its median and whether the bar is above what the design gives. Over
scale-out (every pair of the fleet beyond the bar) each domain is named so, its scale-out pairs
being those with an end in it: the fleet's domains, one finding each.
A domain with fewer than :data:`MIN_PAIRS` pairs on the tier keeps its links (one pair
cannot tell a domain from its link). Where the bar is above what the design (or the tier's
level) gives, no healthy pair can meet it: the domain's finding, where its median reads at that
reference (within OUTLIER_GAP), is about the check, not the hardware (``About.CHECK``, not judged: it gates, and is neither retested nor isolated: an
operator's rule above design must not drain a rack), and says to check the rule.

The domain at its median explains its pairs within their noise, not a pair far below that
median: a card slow inside such a domain (or a link) is a measurement the domain does not
explain. Its pairs below the median by more than :data:`OUTLIER_Z` pair noises (at least
:data:`OUTLIER_GAP`) are named apart: a card whose own such pairs are at least MIN_PAIRS and
half of its pairs there as the card, the others each as its link; the domain's message then
says how many it left to them (before, a card at 0.4 under a bar of 1.5 x design was in the
domain's finding, "no card, host or link inside it explains that", and named nowhere).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sncheck.health.explain import Culprit
from sncheck.topology import SCALE_OUT

if TYPE_CHECKING:
    from sncheck.health.levels import Level
    from sncheck.health.rules import Rule

MIN_PAIRS = 3
WHOLE = "whole_tier"  # Culprit.note of such a domain
OUTLIER_Z = 4.0     # a pair this many pair noises below its domain's median is not the domain's
OUTLIER_GAP = 0.05  # and at least this share below it (a tier whose noise reads as none)


def whole_domains(level: Level, left: dict[str, np.ndarray]) -> tuple[list[Culprit], dict[str, np.ndarray]]:
    """Of the exceptions no culprit explains (``left``: per tier, pair indices), the domains
    each of whose measured pairs on a tier is among them (at least MIN_PAIRS; scale-out: the
    pairs with an end in it): one culprit per domain over all such tiers (factor: its pairs'
    median ratio there); and the exceptions left for links (none with an end in such a domain)."""
    p = level.paths
    rest: dict[str, np.ndarray] = {}
    found: dict[int, Culprit] = {}
    out_cards: dict[int, Culprit] = {}  # card code -> the card named apart
    k = len(p.supernodes)
    for t, at in left.items():
        x = level.tiers[t]
        if not len(at):
            rest[t] = at
            continue
        # an inside tier's pair is in one domain; a scale-out pair is each of its ends' domains'
        sa, sb = p.sn[x.a], p.sn[x.b] if t == SCALE_OUT else p.sn[x.a]
        total = np.bincount(sa, minlength=k) + np.bincount(sb[sb != sa], minlength=k)
        got = np.bincount(sa[at], minlength=k) + np.bincount(sb[at][sb[at] != sa[at]], minlength=k)
        whole = (got == total) & (total >= MIN_PAIRS)
        rest[t] = at[~(whole[sa[at]] | whole[sb[at]])]
        apart: list[np.ndarray] = []
        for s in np.flatnonzero(whole).tolist():
            mine = np.flatnonzero((sa == s) | (sb == s))
            ratio = np.where(x.failed[mine], 0.0, x.ratio[mine]) / level.ref[t]  # factor units (explain.reference)
            c = found.get(s)
            if c is None:
                kind, name = ("host", p.hosts[int(p.host[p.members("supernode", s)[0]])]) \
                    if p.one_host_domain[s] else ("supernode", p.supernodes[s])
                c = found[s] = Culprit(name, kind, {}, note=WHOLE, members=p.members("supernode", s))
            median = float(np.median(ratio))
            low = ratio < median * (1.0 - _gap(level, t))
            c.factors[t] = median
            c.explains[t], c.touches[t] = mine[~low], mine
            c.peers[t] = level.level[t]
            apart.append(mine[low])
        if apart:
            low = np.unique(np.concatenate(apart))
            rest[t] = np.union1d(rest[t], _named_apart(level, t, low, out_cards))
    return list(found.values()) + list(out_cards.values()), rest


def _gap(level: Level, t: str) -> float:
    """How far below its domain's median a pair of tier t is no longer the domain's."""
    sd = level.pair_noise(t)
    return max(OUTLIER_Z * sd if np.isfinite(sd) else 0.0, OUTLIER_GAP)


def _named_apart(level: Level, t: str, low: np.ndarray, cards: dict[int, Culprit]) -> np.ndarray:
    """Pairs of tier t far below their whole domain's median (``low``): the cards most of
    whose pairs there they are (at least MIN_PAIRS) named in ``cards`` (card code -> its
    culprit, over every tier); the pairs left, each its own link, returned."""
    x, p = level.tiers[t], level.paths
    count = np.bincount(np.concatenate([x.a[low], x.b[low]]), minlength=len(p.cards))
    every = np.bincount(np.concatenate([x.a, x.b]), minlength=len(p.cards))
    named = np.flatnonzero((count >= MIN_PAIRS) & (2 * count >= every))
    for c in named.tolist():
        at = low[(x.a[low] == c) | (x.b[low] == c)]
        card = cards.setdefault(c, Culprit(p.cards[c], "card", {}, members=np.array([c])))
        card.factors[t] = float(np.median(np.where(x.failed[at], 0.0, x.ratio[at]))) / level.ref[t]
        card.explains[t], card.touches[t] = at, np.flatnonzero((x.a == c) | (x.b == c))
        card.peers[t] = level.level[t]
    return low[~(np.isin(x.a[low], named) | np.isin(x.b[low], named))]


def at_design(c: Culprit) -> bool:
    """Whether a whole domain reads at its reference (within OUTLIER_GAP of it on every tier; its
    factors are over the reference, explain.reference: design, or the tier's level above it):
    then a bar above 1 is the rule's fault, not the domain's; a domain well below it (0.5 of
    design under a bar of 1.5) is judged as hardware still (the review of stop 47)."""
    return all(f >= 1.0 - OUTLIER_GAP for f in c.factors.values())


def whole_message(c: Culprit, rule: Rule, ev: dict, n: int, bar: float, scale: float) -> str:
    """The domain's finding: the tier it is beyond on every pair, its median there, and a bar
    above what the design gives (``bar``: the rule's, in ratio units, below is worse; ``scale``:
    the judged tier's factor of 1 in the rule's units, its reference over design or its level)."""
    tier = ev.get("tier")
    f = (c.factors.get(tier, c.factor) if tier else c.factor) * scale
    ref = "of design" if rule.op == "ratio_to_design" else "of its tier's level"
    what = (f"{c.kind} {c.entity}: {rule.summary} on every one of its {n} pair tests ({tier}), their median "
            f"{f:.2f} {ref}")
    apart = len(c.touches.get(tier, ())) - len(c.explains.get(tier, ())) if tier else 0
    what += (f", besides {apart} of them far below that median, named apart" if apart else
             ": no card, host or link inside it explains that")
    if bar > 1.0:
        above = "what the design gives" if rule.op == "ratio_to_design" else "the tier's own level"
        what += f"; the bar ({bar:g} {ref}) is above {above}: check the rule"
    return what
