"""The explainer's first look (issue 31): per tier, each card's median pair ratio as
measured (a failed pair left out) and over how many pairs, taken once from the tier's pair
summaries and kept per card: O(cards), not O(pairs).

The explanation search (:class:`sncheck.health.levels.Level`) reads every card's median
residual through :func:`card_residuals`: a card none of whose pairs a culprit of the
hypothesis acts on has every pair predicted 1, so each residual is its ratio to the bit
and its median is its first look's. Only the cards at an end of a pair a culprit acts on
are computed from their pairs (at 16,384 cards the near cards' pass read every pair of
thousands of cards again per tier for what the first look already held).

The tier's order statistics are the first look's too (:meth:`FirstLook.spread`): its
measured ratios, sorted once; under a hypothesis only the pairs a culprit acts on are
taken out and their residuals put in (:func:`residuals`), and the median and the MAD of
every residual (``Level.pair_noise``, a re-levelled tier) are selected from that sorted
order, with no column of every pair's residual made, sorted or partitioned per hypothesis.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

import numpy as np

from sncheck.health.endstats import PerCard, card_medians
from sncheck.health.explain import Tier, group_median, joined
from sncheck.health.pairview import Measured, measured_slices

if TYPE_CHECKING:
    from sncheck.health.levels import Hypothesis, Level

STEP = 1 << 22  # pairs whose ends' domains are compared at once
MASKS_KEPT = 4  # hypotheses whose acting ends are remembered per tier (the search alternates H and H + one)


class FirstLook:
    """One tier's per-card statistics: ``cards`` (codes, ascending: each card with a
    measured pair), their median ratio ``med`` and pair count ``n``; ``hold``: the tier's
    index of ends by card is built to be held (:meth:`Tier.by_card`)."""

    def __init__(self, x: Tier, n_cards: int, at_once: int, hold: bool = False) -> None:
        self.cards, self.med, self.n = card_medians(x.by_card(hold), Measured(x), at_once)
        self._row = np.full(n_cards, -1, np.int64)  # card code -> its place in cards (-1: no measured pair)
        self._row[self.cards] = np.arange(len(self.cards))
        self._acting: dict[Hashable, np.ndarray | None] = {}
        self._domains: np.ndarray | None = None  # per supernode code: its level with no culprit (NaN: none)
        self._inside: bool | None = None  # whether every pair of the tier is inside one domain
        self._sorted: np.ndarray | None = None  # every measured pair's ratio, ascending (spread)

    def of(self, cards: np.ndarray) -> PerCard:
        """The first look of ``cards`` (each once, ascending; a card with no measured pair left out)."""
        k = self._row[np.unique(cards)]
        k = k[k >= 0]
        return self.cards[k], self.med[k], self.n[k]

    def spread(self, x: Tier) -> np.ndarray:
        """Every measured pair's ratio (a failed pair left out), ascending: taken once per tier."""
        if self._sorted is None:  # (gathered a slice at a time: no column of every pair's ratio beside it)
            s, k = np.empty(len(x.a)), 0
            for _, q in measured_slices(x):
                q = q[~np.isnan(q)]
                s[k:k + len(q)] = q
                k += len(q)
            s.resize(k, refcheck=False)  # (its own buffer, shortened in place: no copy)
            s.sort()  # (in place)
            self._sorted = s
        return self._sorted

    def acting_ends(self, lv: "Level", t: str, H: "Hypothesis") -> np.ndarray | None:
        """Which cards (a mask over card codes) are an end of a pair of tier t a culprit of
        ``H`` acts on (its factor there below 1: :meth:`Level.pred` scales it); None: no
        culprit acts on the tier."""
        acting = [e for e, f in H if f.get(t, 1.0) < 1.0]
        key = tuple((e.kind, e.name) for e in acting)
        if key not in self._acting:
            mask = None
            if acting:
                x = lv.tiers[t]
                mask = np.zeros(lv.n, bool)
                for e in acting:
                    at = lv.pairs(e, t)
                    mask[x.a[at]] = True
                    mask[x.b[at]] = True
            if len(self._acting) >= MASKS_KEPT:
                del self._acting[next(iter(self._acting))]
            self._acting[key] = mask
        return self._acting[key]

    def domain_levels(self, lv: "Level", t: str) -> np.ndarray | None:
        """Per supernode code, its level in tier t with no culprit: the median of its
        cards' first looks over the cards with at least ``lv.domain_min`` pairs, NaN with
        fewer than two; None where a pair of the tier joins two domains."""
        if self._inside is None:
            x, sn = lv.tiers[t], lv.paths.sn
            self._inside = not any(bool((sn[x.a[i:i + STEP]] != sn[x.b[i:i + STEP]]).any())
                                   for i in range(0, len(x.a), STEP))
        if self._inside and self._domains is None:
            sn = lv.paths.sn
            enough = self.n >= lv.domain_min
            owners, level, count = group_median(sn[self.cards[enough]], self.med[enough])
            self._domains = np.full(len(lv.paths.supernodes), np.nan)
            self._domains[owners[count >= 2]] = level[count >= 2]
        return self._domains if self._inside else None


def domain_levels(lv: "Level", t: str, sns: np.ndarray, H: "Hypothesis") -> np.ndarray:
    """Each domain's level in an inside tier (the median of its cards' medians over their
    pairs in the domain, over the cards with enough pairs): from the first look for a
    domain none of whose pairs a culprit acts on, where every pair of the tier is inside
    one domain (each card's pairs in its domain are then all its pairs); from the domain's
    pairs (:func:`from_pairs`) for the others."""
    first = lv.look(t)
    levels = first.domain_levels(lv, t)
    if levels is None:
        return from_pairs(lv, t, sns, H)
    out = levels[sns]
    acting = first.acting_ends(lv, t, H)
    if acting is not None:
        again = np.isin(sns, lv.paths.sn[acting])
        if again.any():
            out[again] = from_pairs(lv, t, sns[again], H)
    return out


def from_pairs(lv: "Level", t: str, sns: np.ndarray, H: "Hypothesis") -> np.ndarray:
    """Each domain's level in tier t under ``H``, from the pairs with an end in it."""
    x = lv.tiers[t]
    out = np.full(len(sns), np.nan)
    for i, s in enumerate(sns.tolist()):
        at = x.pairs_of(lv.paths.members("supernode", s))
        q = lv.residual(t, at, H)
        _, med, n = group_median(np.concatenate([x.a[at], x.b[at]]), np.concatenate([q, q]))
        med = med[n >= lv.domain_min]
        if len(med) >= 2:
            out[i] = float(np.median(med))
    return out


def card_residuals(lv: "Level", t: str, cards: np.ndarray, H: "Hypothesis",
                   compute: Callable[[np.ndarray], PerCard]) -> PerCard:
    """Per card of ``cards`` with a measured pair in tier t: its median residual under
    ``H`` and over how many pairs (ascending by card): the first look's where no culprit
    acts on the card's pairs, ``compute``'s (from the card's pairs) where one does."""
    cards = np.unique(np.asarray(cards, np.int64))
    first = lv.look(t)
    acting = first.acting_ends(lv, t, H)
    if acting is None:
        return first.of(cards)
    again = acting[cards]
    if not again.any():
        return first.of(cards)
    got, med, n = joined([first.of(cards[~again]), compute(cards[again])])
    order = np.argsort(got, kind="stable")
    return got[order], med[order], n[order]


def acting_pairs(lv: "Level", t: str, H: "Hypothesis") -> np.ndarray:
    """The pairs of tier t a culprit of ``H`` acts on (its factor there below 1), each once, ascending."""
    acting = [lv.pairs(e, t) for e, f in H if f.get(t, 1.0) < 1.0]
    return np.unique(np.concatenate(acting)) if acting else np.zeros(0, np.int64)


def residuals(lv: "Level", t: str, H: "Hypothesis") -> np.ndarray:
    """Every measured residual of tier t under ``H`` (``lv.residual`` of every pair, NaN
    left out), ascending: the first look's sorted ratios (a pair no culprit scales is
    predicted 1: its residual is its ratio), less the ratios of the pairs a culprit acts
    on, plus their residuals. The same values as sorting every pair's residual; no culprit
    acting on the tier: the first look's own array, not a copy."""
    x = lv.tiers[t]
    s = lv.look(t).spread(x)
    at = acting_pairs(lv, t, H)
    if not len(at):
        return s
    out = np.where(x.failed[at], np.nan, x.ratio[at])
    out = np.sort(out[~np.isnan(out)])
    # one copy of each value taken out: equal values' first places in s, in turn
    first = np.searchsorted(s, out, "left")
    keep = np.ones(len(s), bool)
    keep[first + np.arange(len(out)) - np.searchsorted(out, out, "left")] = False
    put = lv.residual(t, at, H)
    put = np.sort(put[~np.isnan(put)])
    rest = s[keep]
    return np.insert(rest, np.searchsorted(rest, put), put)


def sorted_median(s: np.ndarray) -> float:
    """The median of ascending values ``s`` (NaN if none), as :func:`sncheck.health.explain.median` gives it."""
    n = len(s)
    return float((s[(n - 1) // 2] + s[n // 2]) / 2) if n else math.nan


def spread_noise(s: np.ndarray, level: float) -> float:
    """The MAD of ``s / level`` (``s`` ascending, ``level`` > 0), to the bit as
    ``median(abs(r - median(r)))`` of ``r = s / level``: dividing by a positive level keeps
    the order, and the distances to the median are two sorted runs (those below it, read
    backwards, and the rest), whose middle values are selected by bisection."""
    n = len(s)
    if not n:
        return math.nan
    m = (s[(n - 1) // 2] / level + s[n // 2] / level) / 2
    split = bisect.bisect_left(range(n), True, key=lambda i: bool(s[i] / level >= m))

    def below(i: int) -> float:
        return abs(s[split - 1 - i] / level - m)

    def above(i: int) -> float:
        return abs(s[split + i] / level - m)

    def kth(k: int) -> float:
        """The k-th smallest (from 0) of the two runs (lengths split and n - split)."""
        p, q = split, n - split
        lo, hi = max(0, k + 1 - q), min(k + 1, p)
        while True:
            i = (lo + hi) // 2
            j = k + 1 - i
            if i < p and j > 0 and above(j - 1) > below(i):
                lo = i + 1
            elif i > 0 and j < q and below(i - 1) > above(j):
                hi = i - 1
            else:
                return max(below(i - 1) if i > 0 else -math.inf, above(j - 1) if j > 0 else -math.inf)

    return float((kth((n - 1) // 2) + kth(n // 2)) / 2)
