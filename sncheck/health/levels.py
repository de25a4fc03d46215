"""The explanation search over level kinds (bandwidth, latency, collective speed): see
:mod:`sncheck.health.explain` for the model, the bars and the search.

The state is the hypothesis ``H``: culprits, each with a factor per tier. Everything is
judged over the exceptions (pairs, cards and domains beyond a bar) and over the pairs of
the candidates and culprits, read through ``pairs_of``: never every pair of a fleet,
except a tier's level when culprits hold a large share of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from sncheck.health.explain import (CARD, DESIGN, DOMAIN, END_KINDS, EVERY_TIER_MOVES, MAD_SD, MEDIAN_SE, NEAR_Z,
                                    PAIR, PEERS, UPLINK, Bars, CostModel, Culprit, Entity, Paths, Rival, Tier,
                                    count_beyond, entity_of, group_median, holds_cards, joined, median, on_path,
                                    pairs_on, reference, specific, speeds, unlocalised, uplinks)
from sncheck.health.firstlook import FirstLook, card_residuals, domain_levels, residuals, sorted_median, spread_noise
from sncheck.health.greedy import exchange, search
from sncheck.health.pairview import measured_below
from sncheck.health.separation import beside_sick, moved, own_path, reread_cards, untold
from sncheck.health.wholetier import whole_domains
from sncheck.topology import SCALE_OUT

Hypothesis = list[tuple[Entity, dict[str, float]]]
SMALL_TIER = 256  # pairs: below this a card's peers are the tier's other pairs, its own left out
NEAR_SPAN = 0.1  # candidates: cards whose raw median is within this share above the card bar
CARD_CHUNK = 4096  # cards whose residuals are taken at once (every temporary is a column of their pairs)
ENDS_AT_ONCE = 1 << 21  # pair ends whose cards' medians are taken at once (endstats.card_medians)


class Level:
    def __init__(self, tiers: Mapping[str, Tier], paths: Paths, bars: Bars, model: CostModel,
                 listed: frozenset[str] = frozenset()) -> None:  # listed: explain.alone
        self.tiers, self.paths, self.bars, self.model, self.listed = tiers, paths, bars, model, listed
        self.n = len(paths.cards)
        self.H: Hypothesis = []
        self.level0 = {t: (x.level if math.isfinite(x.level) and x.level > 0 else 1.0) for t, x in tiers.items()}
        self.level = dict(self.level0)
        self.ref = {t: reference(v) for t, v in self.level0.items()}  # a factor's 1, design units (reference)
        self.pair_design, self.pair_peers = bars.bound(PAIR, DESIGN), bars.bound(PAIR, PEERS)
        self.card_bar = bars.bound(CARD, PEERS)
        self.card_min = max([b.min_pairs for b in bars.of(CARD)] or [1])
        self.domain_bar = bars.bound(DOMAIN, DESIGN)
        self.domain_min = max([b.min_pairs for b in bars.of(DOMAIN)] or [1])
        self.pair_tol = bars.tolerance(PAIR)
        self.card_tol = 1.0 / self.card_bar if self.card_bar else None
        self.lost: list[tuple[Entity, str]] = []   # candidates a measurement contradicted, and how
        self.ties: dict[str, list[Entity]] = {}    # culprit -> rivals explaining the same, not told apart
        self.barred: set[str] = set()  # cables no measurement tells from another (separation.twin_cables)
        self.entities: dict[tuple, Entity] = {}
        self.on: dict[tuple[str, str], np.ndarray] = {}
        self.looks: dict[str, FirstLook] = {}
        self.pair_ex: dict[str, np.ndarray] = {}  # tier -> its exceptions' pairs (initial)
        self.noise: dict[tuple, float] = {}  # (tier, hypothesis) -> one pair's noise over its level (pair_noise)
        self.blockers: list[str] = []  # culprits that blocked a larger candidate (greedy.exchange)
        self.evaluations = 0  # candidates evaluated, every search (greedy.step)

    # ---- entities
    def entity(self, kind: str, code: int, other: int = -1) -> Entity:
        key = (kind, code, other)
        if key not in self.entities:
            self.entities[key] = entity_of(self.paths, kind, code, other)
        return self.entities[key]

    def pairs(self, e: Entity, t: str) -> np.ndarray:
        key = (e.name, t)
        if key not in self.on:
            self.on[key] = pairs_on(e, self.tiers[t], self.paths)
        return self.on[key]

    # ---- predictions and states
    def pred(self, t: str, at: np.ndarray, H: Hypothesis, ends: bool = True) -> np.ndarray:
        x = self.tiers[t]
        a, b = x.a[at], x.b[at]
        end_a, end_b, shared = np.ones(len(at)), np.ones(len(at)), np.ones(len(at))
        links: list[tuple[int, float]] = []
        for e, f in H:
            ft = f.get(t, 1.0)
            if ft >= 1.0 or (e.kind in END_KINDS and not ends):
                continue
            if e.key[:1] == ("link",):  # one pair's: all of them at once, below
                links.append((e.key[1] * self.n + e.key[2], ft))
            elif e.kind in END_KINDS:
                end_a = np.where(e.holds(a, self.n), np.minimum(end_a, ft), end_a)
                end_b = np.where(e.holds(b, self.n), np.minimum(end_b, ft), end_b)
            else:
                shared = np.where(on_path(e, self.paths, a, b), shared * ft, shared)
        if links:
            links.sort()
            keys, factors = np.array([k for k, _ in links], np.int64), np.array([f for _, f in links])
            code = np.minimum(a, b).astype(np.int64) * self.n + np.maximum(a, b)
            k = np.minimum(np.searchsorted(keys, code), len(keys) - 1)
            shared = np.where(keys[k] == code, shared * factors[k], shared)
        return np.minimum(end_a, end_b) * shared

    def residual(self, t: str, at: np.ndarray, H: Hypothesis) -> np.ndarray:
        x = self.tiers[t]
        pred = self.pred(t, at, H)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((pred > 0) & ~x.failed[at], x.ratio[at] / pred, np.nan)

    def state(self, t: str, at: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(unexplained, contradicted) for pairs ``at`` under predictions ``pred``."""
        x = self.tiers[t]
        failed, r = x.failed[at], x.ratio[at]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(pred > 0, r / pred, np.inf)
        bad = np.zeros(len(at), bool)
        if self.pair_design is not None:
            bad |= q < self.pair_design
        if self.pair_peers is not None:
            bad |= q / self.level[t] < self.pair_peers
        unexplained = np.where(failed, pred > 0, bad)
        contradicted = ~failed & (pred <= 0)
        if self.pair_tol is not None:
            contradicted |= ~failed & (pred < 1) & (q / self.level[t] > self.pair_tol) & (q > self.pair_tol)
        return unexplained, contradicted

    def card_residuals(self, t: str, cards: np.ndarray, H: Hypothesis) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per card of ``cards`` with pairs in tier t: its median residual (measured over predicted,
        in design units), over how many pairs, by card (firstlook.card_residuals); against the
        card bar it is read over the tier's level (its peers)."""
        return card_residuals(self, t, cards, H, lambda again: joined(
            [self._card_residuals(t, again[i:i + CARD_CHUNK], H) for i in range(0, len(again), CARD_CHUNK)]))

    def _card_residuals(self, t: str, cards: np.ndarray, H: Hypothesis) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = self.tiers[t]
        at = x.pairs_of(cards)
        q = self.residual(t, at, H)
        mask = np.zeros(self.n, bool)
        mask[cards] = True
        in_a, in_b = mask[x.a[at]], mask[x.b[at]]
        return group_median(np.concatenate([x.a[at][in_a], x.b[at][in_b]]), np.concatenate([q[in_a], q[in_b]]))

    def peer_level(self, t: str, cards: np.ndarray, H: Hypothesis) -> np.ndarray | float:
        """What each of ``cards`` is compared with on the card bar: its tier's level; in a
        small tier (a retest, a domain of a few cards) the median of the tier's other pairs,
        its own left out (with 4 cards, one slow card is half the pairs and drags the
        median towards itself)."""
        x = self.tiers[t]
        if len(x.a) >= SMALL_TIER or not len(cards):
            return self.level[t]
        q = self.residual(t, np.arange(len(x.a)), H)
        out = np.full(len(cards), self.level[t])
        for i, c in enumerate(np.asarray(cards).tolist()):
            level = median(q[(x.a != c) & (x.b != c) & x.peers])
            if not math.isnan(level):
                out[i] = level
        return out

    def look(self, t: str) -> FirstLook:
        """Tier t's first look: each card's median pair ratio as measured (a failed pair left out), over how many pairs."""
        if t not in self.looks:
            # a kind with a pair beyond a bar weighs candidates, each read in every tier
            # (factors: pairs_of): the first look's index of ends is the one they are read
            # through; a kind without holds none (8 bytes a pair: a clean kind's tiers)
            hold = any(len(at) for at in self.pair_ex.values())
            self.looks[t] = FirstLook(self.tiers[t], self.n, ENDS_AT_ONCE, hold)
        return self.looks[t]

    def domain_levels(self, t: str, sns: np.ndarray, H: Hypothesis) -> np.ndarray:
        """Each domain's level in an inside tier: the median of its cards' medians over their
        pairs in the domain (against design), over the cards with enough pairs; the first
        look's where no culprit acts on the domain (firstlook.domain_levels)."""
        return domain_levels(self, t, np.asarray(sns, np.int64), H)

    # ---- exceptions
    def initial(self) -> None:
        self.pair_ex = {t: x.exceptions() for t, x in self.tiers.items()}
        self.card_ex = {t: np.zeros(0, np.int64) for t in self.tiers}
        self.card_near = {t: np.zeros(0, np.int64) for t in self.tiers}
        self.domain_ex = {t: np.zeros(0, np.int64) for t in self.tiers}
        for t in self.tiers:
            if self.card_bar is not None:
                first = self.look(t)
                cards, med, n = first.cards, first.med, first.n
                ratio = med / self.peer_level(t, cards, [])
                self.card_ex[t] = cards[(ratio < self.card_bar) & (n >= self.card_min)]
                self.card_near[t] = cards[(ratio < self.card_bar * (1 + NEAR_SPAN)) & (n >= self.card_min)]
            if self.domain_bar is not None and t != SCALE_OUT:
                # the domains of the cards with a measured pair (the first look's, which the
                # levels read anyway; a domain with none has no level)
                sns = np.unique(self.paths.sn[self.look(t).cards])
                self.domain_ex[t] = sns[self.domain_levels(t, sns, []) < self.domain_bar]

    def left(self, H: Hypothesis, scope: dict[str, np.ndarray] | None = None, domains: bool = True) -> int:
        """How many exceptions ``H`` leaves unexplained: all, or those among ``scope``'s
        pairs and their cards (a candidate's own measurements)."""
        out = 0
        for t, x in self.tiers.items():
            at = self.pair_ex[t] if scope is None else np.intersect1d(self.pair_ex[t], scope.get(t, ()),
                                                                       assume_unique=True)
            if len(at):
                out += int(self.state(t, at, self.pred(t, at, H))[0].sum())
            cards = self.card_ex[t]
            if scope is not None and len(cards):
                mine = scope.get(t, np.zeros(0, np.int64))
                cards = cards[np.isin(cards, np.concatenate([x.a[mine], x.b[mine]]))]
            if len(cards):
                got, med, _ = self.card_residuals(t, cards, H)
                out += int((med / self.peer_level(t, got, H) < (self.card_bar or 0.0)).sum())
            if domains and len(self.domain_ex[t]):
                out += int((self.domain_levels(t, self.domain_ex[t], H) < self.domain_bar).sum())
        return out

    # ---- candidates
    def candidates(self) -> list[tuple[int, Entity]]:
        """The entities on the paths of the unexplained exceptions, each with how many of them
        it could explain at most, most first (links last: one each)."""
        p = self.paths
        bound: dict[tuple, int] = {}
        links: list[tuple] = []

        def count(kind: str, codes: np.ndarray) -> None:
            if len(codes):
                uniq, k = np.unique(codes, return_counts=True)
                for c, n in zip(uniq.tolist(), k.tolist()):
                    bound[(kind, c)] = bound.get((kind, c), 0) + n

        for t, x in self.tiers.items():
            at = self.pair_ex[t]
            at = at[self.state(t, at, self.pred(t, at, self.H))[0]] if len(at) else at
            a, b = x.a[at], x.b[at]
            count("card", np.concatenate([a, b]))
            if t == SCALE_OUT:
                count("nic", np.concatenate([a, b]))
                la, lb = p.leaf[a], p.leaf[b]
                count("leaf", np.concatenate([la, lb[lb != la]]))
                if p.spines:
                    s = p.spine(a, b)
                    count("spine", s[s >= 0])
                    count(UPLINK, uplinks(p, a, b, s))
            ha, hb = p.host[a], p.host[b]
            count("host", np.concatenate([ha, hb[hb != ha]]))
            sa, sb = p.sn[a], p.sn[b]
            count("supernode", np.concatenate([sa, sb[sb != sa]]))
            links += [(int(i), int(j)) for i, j in zip(a.tolist(), b.tolist())]
            cards = self.card_ex[t]
            if len(cards):
                got, med, _ = self.card_residuals(t, cards, self.H)
                got = got[med / self.peer_level(t, got, self.H) < (self.card_bar or 0.0)]
                for kind, codes in (("card", got), ("host", p.host[got]), ("supernode", p.sn[got])):
                    count(kind, codes)
                if t == SCALE_OUT:  # and their leaves: a faint leaf is its NICs' medians alone
                    count("nic", got)
                    leaf = p.leaf[got]
                    count("leaf", leaf[leaf >= 0])
                    if p.spines:  # and what every pair of those leaves may cross: a spine, its uplinks
                        count_beyond(count, p, leaf[leaf >= 0])
            if len(self.domain_ex[t]):
                sns = self.domain_ex[t][self.domain_levels(t, self.domain_ex[t], self.H) < self.domain_bar]
                count("supernode", sns)  # and each host in it, which may be all the domain measured
                count("host", np.concatenate([np.unique(p.host[p.members("supernode", s)]) for s in sns.tolist()]
                                             or [np.zeros(0, np.int64)]))
        out = []
        chosen = {e.name for e, _ in self.H} | self.barred
        for (kind, code), n in bound.items():
            if kind == "supernode" and p.one_host_domain[code]:
                kind, code = "host", int(p.host[p.members("supernode", code)[0]])  # a domain of one host: the host
            elif kind == "host" and len(p.members("host", code)) < 2:
                continue  # a host of one card: that card
            e = self.entity(kind, code)
            if e.name not in chosen:
                out.append((n, e))
        out.sort(key=lambda ne: (-ne[0], specific(ne[1]), ne[1].name))
        seen = set()
        for i, j in links:
            e = self.entity("link", i, j)
            if e.name not in chosen and e.name not in seen:
                seen.add(e.name)
                out.append((1, e))
        return out

    def factors(self, e: Entity) -> dict[str, float]:
        """The candidate's factor on each tier it has pairs on: the median of its pairs
        whose other elements the current hypothesis holds healthy (a failed pair is 0), over
        the tier's reference (explain.reference: its healthy pairs' level, at least design)."""
        per: dict[str, np.ndarray] = {}
        for t, x in self.tiers.items():
            at = self.pairs(e, t)
            if not len(at):
                continue
            rest = self.pred(t, at, self.H)
            values = np.where(x.failed[at], 0.0, x.ratio[at]) / self.ref[t]
            clean = own_path(self, e, t, at, values, rest >= 1.0)
            # else, pred being min(ends) * shared, an end is over the shared culprits only
            rest = self.pred(t, at, self.H, ends=False) if e.kind in END_KINDS and not clean.any() else rest
            per[t] = values[clean] if clean.any() else values / np.where(rest > 0, rest, 1.0)
        if e.kind == "card" and per:
            return self.card_factors(per)
        out = moved(self, e, per) if e.kind in ("host", "supernode") else {t: min(1.0, median(v)) for t, v in per.items() if len(v)}
        sn = self.domain_of(e)
        for t in out if sn >= 0 and self.domain_bar is not None else ():
            # a domain's level as its bar reads it (its cards' medians' median), not its pairs'
            # median: at 0.9295 against 0.93 by that reading and 0.9301 by this one, the domain
            # was an exception no candidate of its could be beyond (a host of it was named)
            level = float(self.domain_levels(t, np.array([sn]), self.H)[0]) if t != SCALE_OUT else math.nan
            out[t] = min(1.0, level / self.ref[t]) if math.isfinite(level) else out[t]
        return out

    def domain_of(self, e: Entity) -> int:
        """The domain an end entity is (a supernode, a host alone in its domain), or -1."""
        if e.kind not in ("supernode", "host") or not len(e.members):
            return -1
        sn = int(self.paths.sn[e.members[0]])
        whole = e.kind == "supernode" or bool(self.paths.one_host_domain[sn])
        return sn if whole and len(self.paths.members("supernode", sn)) == len(e.members) else -1

    def card_factors(self, per: dict[str, np.ndarray]) -> dict[str, float]:
        """A card's factor over the tiers its speed acts on (explain.speeds); over scale-out the NIC
        caps it (bandwidth), it lies between its inside factor and 1 (pairwise collectives:
        CostModel.out_between), or it acts there too (latency)."""
        inside = [v for t, v in per.items() if t != SCALE_OUT]
        if self.model.out_cap is None and not (self.model.out_between and inside and SCALE_OUT in per):
            return speeds(per, self.pair_peers, self.pair_design)
        if not inside:  # never measured inside its domain: the card cannot be told from its NIC
            return {t: min(1.0, median(v)) for t, v in per.items()}
        s = min(1.0, median(np.concatenate(inside)))
        out = speeds({t: v for t, v in per.items() if t != SCALE_OUT}, self.pair_peers, self.pair_design)
        if SCALE_OUT in per:
            # healthier there than its speed lets them: its NVLinks down (n_c: NVLink pairs only; r7-31)
            floor = s if self.model.out_cap is None else s / self.model.out_cap
            out[SCALE_OUT] = min(1.0, max(floor, median(per[SCALE_OUT])))
        return out

    def beyond_a_bar(self, e: Entity, f: dict[str, float]) -> bool:
        """A culprit is beyond some bar itself (a pair's, a card's, a domain's): an entity
        whose factor is inside every bar explains nothing the rules call bad."""
        for b in self.bars.bars:
            if b.scope == DOMAIN and e.kind not in ("host", "supernode"):
                continue
            if b.scope == CARD and e.kind == "link":
                continue
            for t, ft in f.items():
                level = self.peer_level(t, e.members, self.H) if len(e.members) else self.level[t]
                measured = ft * self.ref[t]  # in design units (explain.reference)
                if (measured if b.ref == DESIGN else measured / float(np.min(level))) < b.level or ft <= 0:
                    return True
        return False

    def contradiction(self, e: Entity, f: dict[str, float], H2: Hypothesis) -> str | None:
        """How adding ``e`` contradicts a measurement, or None: a pair (or a member card of a
        host, supernode or switch) healthier than it predicts beyond the bars."""
        for t, x in self.tiers.items():
            at = self.pairs(e, t)
            if not len(at) or f.get(t, 1.0) >= 1.0:
                continue
            if len(e.members) > 1 and self.card_tol is not None:
                cards, med, n = self.card_residuals(t, e.members, H2)
                off = (med / self.ref[t] > self.card_tol) & (n >= self.card_min)
                if off.any():
                    k = int(np.argmax(np.where(off, med, -np.inf)))
                    return (f"{self.paths.cards[int(cards[k])]} measured {med[k] * f[t]:.2f} "
                            f"of design on {int(n[k])} pairs ({t}): not part of the {e.kind} finding")
            pred = self.pred(t, at, H2)
            contra = self.state(t, at, pred)[1]
            if contra.any():
                which = np.flatnonzero(contra)
                i = at[which[0]]
                more = f" and {len(which) - 1} more pairs" if len(which) > 1 else ""
                return (f"{self.paths.link(int(x.a[i]), int(x.b[i]))} measured {x.ratio[i]:.2f} of design on "
                        f"{t}{more}, not the {pred[which[0]] * self.ref[t]:.2f} it predicts")
        return None

    # ---- the search (sncheck.health.greedy: its steps and what bounds their cost)
    def run(self) -> list[Culprit]:
        total = exchange(self, search(self))
        return self.culprits(total)

    def start(self, barred: frozenset[str] = frozenset()) -> None:
        """No culprit yet, nothing ``barred`` but those: a search begins (again)."""
        self.H, self.lost, self.ties, self.barred, self.blockers = [], [], {}, set(barred), []
        self.level, self.noise = dict(self.level0), {}
        self.initial()

    def relevel(self) -> None:
        """A culprit over a large share of a tier moves the tier's level (one domain slow of
        two): read it again as the median residual."""
        for t, x in self.tiers.items():
            touched = sum(len(self.pairs(e, t)) for e, f in self.H if f.get(t, 1.0) < 1.0)
            if touched >= EVERY_TIER_MOVES * len(x.a):
                level = sorted_median(residuals(self, t, self.H))
                if math.isfinite(level) and level > 0:
                    self.level[t] = level
                reread_cards(self, t, NEAR_SPAN)

    def prune(self) -> None:
        """Drop each culprit the others explain without it, last first. Without a culprit
        every prediction is as high or higher, so on a tier of SMALL_TIER pairs or more
        (whose peers are its level) nothing is explained that was not: a link whose pair the
        others leave unexplained is kept unread, and one is judged over its pair and its two
        cards' medians alone (a search ending with hundreds of links read every exception
        once a link: sncheck.health.greedy)."""
        for i in range(len(self.H) - 1, -1, -1):
            rest = self.H[:i] + self.H[i + 1:]
            e = self.H[i][0]
            scope = {t: self.pairs(e, t) for t in self.tiers} if e.key[:1] == ("link",) else None
            if scope is not None and any(len(at) and len(self.tiers[t].a) < SMALL_TIER for t, at in scope.items()):
                scope = None
            if scope is not None and any(self.state(t, at, self.pred(t, at, rest))[0].any()
                                         and not self.state(t, at, self.pred(t, at, self.H))[0].any()
                                         for t, at in scope.items() if len(at)):
                continue  # its pair unexplained without it: one more exception left
            if self.left(rest, scope) <= self.left(self.H, scope):
                self.H = rest

    def culprits(self, left: int) -> list[Culprit]:
        out = []
        for e, f in self.H:
            explains, touches = {}, {}
            for t in self.tiers:
                at = self.pairs(e, t)
                if len(at):
                    touches[t] = at
                    explains[t] = np.intersect1d(at, self.pair_ex[t], assume_unique=True) if t in f else at[:0]
            rivals = [Rival(r.name, r.kind, why) for r, why in self.lost if holds_cards(r, e)]
            rivals += [Rival(r.name, r.kind, "explains the same measurements: the evidence cannot tell them apart")
                       for r in self.ties.get(e.name, [])]
            note = "independent" if e.key[:1] == ("link",) and beside_sick(self, e) else ""
            peers = {t: float(np.min(self.peer_level(t, e.members, self.H))) if len(e.members) else self.level[t]
                     for t in touches}
            not_told = untold(self, e, f) if e.kind in ("host", "supernode") else []
            rivals += [Rival(self.paths.cards[m], "card", "measured only beside its own "
                             f"{e.kind}'s cards where its effect shows: the evidence cannot tell it from them")
                       for m in not_told[:2]]
            out.append(Culprit(e.name, e.kind, {t: v for t, v in f.items() if t in touches}, explains, touches,
                               rivals[:4], note, separated=not self.ties.get(e.name) and not not_told,
                               members=e.members, peers=peers, near=self.near_named(e, f)))
        out += self._leftover_links({c.entity for c in out}) if left else []
        for c in out:  # named, but within the noise of the bar it is beyond: re-measured (sncheck.run.nearbar)
            if c.kind == "link" and not c.note and len(c.touches) == 1:
                [(t, at)] = c.touches.items()
                near = self.near_pair(t, int(at[0]), [h for h in self.H if h[0].name != c.entity]) \
                    if len(at) == 1 else None
                c.near = {t: near} if near is not None and near["beyond"] else {}
        found = unlocalised(out, self.tiers, self.paths, self.model)
        return found + self.near() + self.near_links({c.entity for c in found})

    def near(self) -> list[Culprit]:
        """Cards no culprit holds whose median residual (over their peers' level) is inside
        the card bar by less than NEAR_Z standard errors of that median: the tier's pair
        noise (its ratios' MAD, as a standard deviation) over the root of the card's pairs.
        One per card, in the tier where it is nearest the bar."""
        if self.card_bar is None:
            return []
        held = {m for e, _ in self.H if e.kind in END_KINDS for m in e.members.tolist()}
        best: dict[int, tuple[float, str, dict[str, float]]] = {}
        for t, x in self.tiers.items():
            cards = np.array([c for c in self.card_near[t].tolist() if c not in held], np.int64)
            if not len(cards):
                continue
            got, med, n = self.card_residuals(t, cards, self.H)
            ratio = med / self.peer_level(t, got, self.H)
            se = MEDIAN_SE * self.pair_noise(t) / np.sqrt(np.maximum(n, 1))
            for k in np.flatnonzero((ratio >= self.card_bar) & (ratio < self.card_bar + NEAR_Z * se)
                                    & (n >= self.card_min)).tolist():
                gap = (ratio[k] - self.card_bar) / se[k]
                c = int(got[k])
                if c not in best or gap < best[c][0]:
                    best[c] = (gap, t, {"ratio": float(ratio[k]), "se": float(se[k]), "pairs": int(n[k]),
                                        "bar": float(self.card_bar)})
        out = []
        for c, (_, t, near) in sorted(best.items()):
            at = self.tiers[t].pairs_of(np.array([c]))
            out.append(Culprit(self.paths.cards[c], "card", {t: near["ratio"] * self.level[t] / self.ref[t]}, {}, {t: at},
                               note="near", members=np.array([c]), peers={t: self.level[t]}, near={t: near}))
        return out

    def pair_noise(self, t: str) -> float:
        """One pair's noise in tier t over its level: the MAD of its residuals under the
        hypothesis, as a standard deviation (a card's median over n pairs: MEDIAN_SE times it
        over root n). Not the raw ratios': mi355-pod's leaf at 0.55 under half a tier made its
        MAD 0.1, and each healthy card of its rails read near the card bar. Selected from the
        first look's sorted ratios with the acting pairs' residuals put in (firstlook.residuals)."""
        key = (t, tuple((e.name, f.get(t, 1.0)) for e, f in self.H))
        if key not in self.noise:
            self.noise[key] = MAD_SD * spread_noise(residuals(self, t, self.H), self.level[t])
        return self.noise[key]

    def near_named(self, e: Entity, f: Mapping[str, float]) -> dict[str, dict]:
        """A card culprit beyond the card bar, in every tier where it is, by less than NEAR_Z
        standard errors of its median (named, but not clear of the noise): the tier where
        it is furthest beyond, as :meth:`near` says it (``beyond``: 1); else {}."""
        if self.card_bar is None or e.kind != "card":
            return {}
        others = [h for h in self.H if h[0] is not e]
        best: dict[str, dict] = {}
        for t in f:
            got, med, n = self.card_residuals(t, e.members, others)
            if not len(got) or n[0] < self.card_min:
                continue
            ratio = float(med[0] / np.min(self.peer_level(t, got, others)))
            se = MEDIAN_SE * self.pair_noise(t) / math.sqrt(int(n[0]))
            if ratio >= self.card_bar:
                continue  # not beyond it in this tier
            if ratio <= self.card_bar - NEAR_Z * se or not math.isfinite(ratio) or not self.precise(se, self.card_bar):
                return {}  # clear of the noise beyond it (or on a tier too noisy to say): no doubt to re-measure
            if not best or ratio < next(iter(best.values()))["ratio"]:
                best = {t: {"ratio": ratio, "se": se, "pairs": int(n[0]), "bar": float(self.card_bar), "beyond": 1}}
        return best

    def pair_margins(self, t: str, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pair residuals ``q`` (design units) against each pair bar: per pair, its margin to
        the bar it is nearest inside (or furthest beyond: the lowest margin), that bar's
        level and whether it is against design (else the tier's level), in that bar's units."""
        values, bars, design = [], [], []
        if self.pair_design is not None:
            values.append(q - self.pair_design)
            bars.append(self.pair_design)
            design.append(True)
        if self.pair_peers is not None:
            values.append(q / self.level[t] - self.pair_peers)
            bars.append(self.pair_peers)
            design.append(False)
        if not values:
            return np.zeros(0), np.zeros(0), np.zeros(0, bool)
        margins = np.vstack(values)
        k = np.argmin(np.where(np.isnan(margins), np.inf, margins), axis=0)
        at = np.arange(len(q))
        return margins[k, at], np.asarray(bars)[k], np.asarray(design)[k]

    def precise(self, se: float, bar: float) -> bool:
        """Whether a noise band of NEAR_Z standard errors is narrow against the bar (within
        NEAR_SPAN of it): on a noisier tier (a shared CPU machine's pairs) a pair or card
        within the noise of its bar is the tier's noise, and re-measuring each would be
        re-measuring the tier; there the rule's one look and the old retest judge."""
        return math.isfinite(se) and NEAR_Z * se < NEAR_SPAN * bar

    @staticmethod
    def _near_pair(margin: float, bar: float, design: bool, sd: float) -> dict:
        return {"ratio": float(bar + margin), "se": float(sd), "pairs": 1, "bar": float(bar),
                "ref": DESIGN if design else PEERS, "beyond": int(margin < 0)}

    def near_pair(self, t: str, i: int, H: Hypothesis) -> dict | None:
        """Pair ``i`` of tier t (a link) within NEAR_Z of the tier's pair noise of its
        nearest pair bar (or beyond every pair bar it is beyond by less), its residual under
        ``H``: how near, else None."""
        if self.tiers[t].failed[i]:
            return None
        margin, bar, design = (v[0] for v in self.pair_margins(t, self.residual(t, np.array([i]), H)))
        sd = self.pair_noise(t)
        if not math.isfinite(margin) or not self.precise(sd, bar) or abs(margin) >= NEAR_Z * sd:
            return None
        return self._near_pair(margin, bar, bool(design), sd)

    def near_links(self, named: set[str]) -> list[Culprit]:
        """Pairs no culprit explains whose residual is inside a pair bar by less than NEAR_Z
        of the tier's pair noise: each a link named only as near its bar. (A pair whose
        prediction a culprit scales is left out: its residual carries that culprit's factor's
        error too, so it cannot be told near on its own, and the culprit's retest re-measures
        it. A residual is never below its pair's ratio: pairs whose ratio is over NEAR_SPAN
        above every bar are left out unread; a healthy fleet has none.)"""
        top = max([b for b in (self.pair_design, self.pair_peers) if b is not None] or [0.0])
        out = []
        for t, x in self.tiers.items():
            cand = measured_below(x, top * (1 + NEAR_SPAN) * max(1.0, self.level[t]))  # (a slice at a time)
            cand = cand[self.pred(t, cand, self.H) >= 1.0]
            if not top or not len(cand):
                continue
            sd = self.pair_noise(t)
            margin, bar, design = self.pair_margins(t, self.residual(t, cand, self.H))
            with np.errstate(invalid="ignore"):
                keep = (margin >= 0) & (margin < NEAR_Z * sd) & (NEAR_Z * sd < NEAR_SPAN * bar)
            for k in np.flatnonzero(keep).tolist():
                i = int(cand[k])
                link = self.paths.link(int(x.a[i]), int(x.b[i]))
                if link in named:
                    continue
                named.add(link)
                out.append(Culprit(link, "link", {t: float(x.ratio[i]) / self.ref[t]}, {}, {t: np.array([i])}, note="near",
                                   peers={t: self.level[t]}, near={t: self._near_pair(margin[k], bar[k], design[k], sd)}))
        return out

    def _leftover_links(self, named: set[str]) -> list[Culprit]:
        """Exceptions no candidate explains without contradicting a measurement: each its
        own link, but a domain's every pair of a tier is the domain (wholetier)."""
        left = {t: at[self.state(t, at, self.pred(t, at, self.H))[0]] if len(at) else at
                for t, at in self.pair_ex.items()}
        out, left = whole_domains(self, left)
        for t, x in self.tiers.items():
            for i in left[t].tolist():
                link = self.paths.link(int(x.a[i]), int(x.b[i]))
                if link not in named:
                    named.add(link)
                    r = 0.0 if x.failed[i] else float(x.ratio[i]) / self.ref[t]
                    out.append(Culprit(link, "link", {t: r}, {t: np.array([i])}, {t: np.array([i])}))
        return out
