"""Symptoms a pair shows or not (latency spikes, corrupted payloads, wrong results), and
cards flagged on their own evidence: who explains them (:mod:`sncheck.health.explain`).

A card (or, seen only over the scale-out network while its pairs inside its domain are
clean, its NIC) is the culprit when it explains two or more of the pairs that showed the
symptom, with different partners, the card explaining most first; a host, supernode or
leaf switch when every one of its members is a culprit on its own; what is left is links.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from sncheck.health.explain import MIN_PARTNERS, Culprit, Paths, Tier
from sncheck.health.metrics import shared_categories
from sncheck.health.pairgroups import codes
from sncheck.topology import SCALE_OUT


def explain_rates(tiers: Mapping[str, Tier], paths: Paths, given: np.ndarray | None = None) -> list[Culprit]:
    """The culprits of a symptom kind. ``given``: card codes found already for this symptom
    (``DetectContext.shown``: another suspect of a retest's wave, named by this rule): each
    explains the symptoms of its pairs whatever their number, and is no culprit again. A
    retest measures a link's end with few controls: r12-27's corrupting card, its one control
    pair corrupted in its dead link's retest, was named a new link "between two otherwise
    healthy cards" (one partner is no card) and isolated."""
    return _Rate(tiers, paths).run(given)


class _Rate:
    """Symptoms a pair shows or not (spikes, corruption): see the module docstring."""

    def __init__(self, tiers: Mapping[str, Tier], paths: Paths) -> None:
        self.tiers, self.paths = tiers, paths

    def run(self, given: np.ndarray | None = None) -> list[Culprit]:
        left = {t: x.exceptions() for t, x in self.tiers.items()}
        for t, x in self.tiers.items():  # the symptoms of culprits found already: theirs
            at = left[t]
            if given is not None and len(given) and len(at):
                left[t] = at[~(np.isin(x.a[at], given) | np.isin(x.b[at], given))]
        cards: dict[int, dict[str, np.ndarray]] = {}  # card code -> tier -> exception pairs it explains
        nics: set[int] = set()
        while True:
            best = None
            for t, x in self.tiers.items():
                at = left[t]
                if not len(at):
                    continue
                ends = np.concatenate([x.a[at], x.b[at]])
                for code in np.unique(ends):
                    mine = at[(x.a[at] == code) | (x.b[at] == code)]
                    partners = np.unique(np.where(x.a[mine] == code, x.b[mine], x.a[mine]))
                    if len(partners) >= MIN_PARTNERS and (best is None or len(mine) > best[0]):
                        best = (len(mine), int(code))
            if best is None:
                break
            code = best[1]
            cards[code] = {}
            for t, x in self.tiers.items():
                at = left[t]
                mine = (x.a[at] == code) | (x.b[at] == code)
                cards[code][t] = at[mine]
                left[t] = at[~mine]
            if self._nic_only(code, cards[code]):
                nics.add(code)
        out = self._lift(cards, nics)
        for t, x in self.tiers.items():
            for i in left[t]:
                out.append(Culprit(self.paths.link(int(x.a[i]), int(x.b[i])), "link", {t: 1.0},
                                   {t: np.array([i])}, {t: np.array([i])}, rate=True))
        return out

    def _nic_only(self, code: int, explains: dict[str, np.ndarray]) -> bool:
        """A card whose symptoms show only over the scale-out network while its pairs
        inside its domain, measured, show none: its NIC."""
        if not len(explains.get(SCALE_OUT, ())) or any(len(v) for t, v in explains.items() if t != SCALE_OUT):
            return False
        out = self.tiers[SCALE_OUT]
        rate = len(explains[SCALE_OUT]) / max(1, len(out.pairs_of(np.array([code]))))
        inside = sum(len(x.pairs_of(np.array([code]))) for t, x in self.tiers.items() if t != SCALE_OUT)
        return inside > 0 and (1 - rate) ** inside < 0.05

    def _lift(self, cards: dict[int, dict[str, np.ndarray]], nics: set[int]) -> list[Culprit]:
        def rates(codes: np.ndarray) -> tuple[dict[str, float], dict[str, np.ndarray], dict[str, np.ndarray]]:
            factors, explains, touches = {}, {}, {}
            for t, x in self.tiers.items():
                mine = np.unique(np.concatenate([cards[c].get(t, np.zeros(0, np.int64)) for c in codes.tolist()]))
                seen = x.pairs_of(codes)
                if len(seen):
                    factors[t], explains[t], touches[t] = len(mine) / len(seen), mine, seen
            return factors, explains, touches

        return [Culprit(entity, kind, *rates(members), members=members, rate=True)
                for kind, entity, members in containers(set(cards) - nics, nics, self.paths)]


def rows_read(cells: pd.DataFrame, beyond: np.ndarray) -> pd.DataFrame:
    """The rows of a symptom kind's frame its search reads, ``beyond``: which rows showed
    the symptom (``pairview.beyond_bound``). Its exceptions are the pairs with such a row,
    and it weighs by their own pairs only the cards that show it with MIN_PARTNERS
    partners or more in a tier (:class:`_Rate`: each card it names does; a host,
    supernode or leaf it names holds only such cards; what is left are the exceptions'
    links). Kept: every row of an exception and of a pair at such a card; no other. A
    fleet with a few corrupted pairs summarises a few cards' pairs, not tens of millions
    (issue 31)."""
    keep = read_mask(cells, beyond)
    return cells if keep is None else cells[keep]


def read_mask(cells: pd.DataFrame, beyond: np.ndarray) -> np.ndarray | None:
    """Which rows :func:`rows_read` keeps (None: all). A row ``beyond`` does not mark counts
    for nothing but its own place: of a frame's rows, the mask of a selection of them is
    this mask over the frame with ``beyond`` False outside the selection, and the
    selection (sncheck.health.p2ptiers)."""
    beyond = np.asarray(beyond, bool)
    if beyond.all() or not len(cells):
        return None
    ends = shared_categories(cells["src"], cells["dst"])  # (the p2p frame's own: no copy)
    src, dst = (e.cat.codes.to_numpy() for e in ends)  # (a missing card: -1, the masks' last place)
    n = len(ends[0].cat.categories)
    showed = np.zeros(n + 1, bool)
    showed[src[beyond]] = True
    showed[dst[beyond]] = True
    showed[n] = False  # (a missing card: in no topology)
    # the rows between two cards that showed it: each one's pair (tier, lower end, higher end) as a number
    at = np.flatnonzero(showed[src] & showed[dst])
    tier, _ = codes(cells["tier"].iloc[at])
    a, b = src[at].astype(np.int64), dst[at].astype(np.int64)
    pair = (tier * (n + 1) + np.minimum(a, b)) * (n + 1) + np.maximum(a, b)
    shown = np.unique(pair[beyond[at]])  # the exceptions
    pair_tier, rest = np.divmod(shown, (n + 1) ** 2)
    # a card's exceptions (each pair once per tier) are its partners there
    owner, k = np.unique(np.concatenate([pair_tier, pair_tier]) * (n + 1)
                         + np.concatenate([rest // (n + 1), rest % (n + 1)]), return_counts=True)
    named = np.zeros(n + 1, bool)
    named[owner[k >= MIN_PARTNERS] % (n + 1)] = True
    keep = named[src]
    keep |= named[dst]
    keep[at[np.isin(pair, shown)]] = True
    return None if keep.all() else keep


def containers(cards: set[int], nics: set[int], paths: Paths) -> list[tuple[str, str, np.ndarray]]:
    """Culprit cards (and NICs) as the fewest entities, each ``(kind, entity, members)``: a
    supernode or a host every card of which is a culprit on its own; a host or a leaf
    switch every NIC of which is; what is left, each card and NIC."""
    out: list[tuple[str, str, np.ndarray]] = []
    done: set[int] = set()
    for s in sorted({int(paths.sn[c]) for c in cards}):
        members = np.flatnonzero(paths.sn == s)
        if len(np.unique(paths.host[members])) > 1 and set(members.tolist()) <= cards:
            out.append(("supernode", paths.supernodes[s], members))
            done |= set(members.tolist())
    for group in (cards, nics):
        for h in sorted({int(paths.host[c]) for c in group if c not in done}):
            members = np.flatnonzero(paths.host == h)
            if len(members) > 1 and set(members.tolist()) <= group:
                out.append(("host", paths.hosts[h], members))
                done |= set(members.tolist())
    for leaf in sorted({int(paths.leaf[c]) for c in nics if c not in done and paths.leaf[c] >= 0}):
        members = np.flatnonzero(paths.leaf == leaf)
        if len(members) > 1 and set(members.tolist()) <= nics:
            out.append(("switch", f"leaf:{paths.leaves[leaf]}", members))
            done |= set(members.tolist())
    for c in sorted((cards | nics) - done):
        out.append(("nic", paths.nic(c), np.array([c])) if c in nics else ("card", paths.cards[c], np.array([c])))
    return out
