"""Localization as an explanation search (issue 29; JUDGING.md "The explanation search").

Per measurement kind, over every tier it was measured on: the smallest set of culprits
(cards, NICs, links, switches, hosts, supernodes), each with a factor, whose predictions
under the published cost model (README "Mock backend cost model") explain every
measurement within its noise. The noise bars are the rules' thresholds (:class:`Bar`):
a rules change changes the verdict.

**Level kinds** (bandwidth, latency, pairwise collective speed): a pair's ratio ``r``
(value over its tier's design, else over the tier's median; latency inverted, so below 1
is always worse) is predicted as the lower of its two ends' factors times the factors of
the shared elements on its path (link, switches):

    pred(a, b) = min(end(a), end(b)) * prod(shared)

where ``end(x)`` is the lowest factor of the culprits that hold ``x`` at its end of the
path: the card, on scale-out its NIC, its host, its supernode. A culprit holding several
cards (host, supernode) stands for every one of them at that factor; it is the answer only
when each of them is slow on its own evidence, never because a share of them is. A card's
bandwidth factor acts on the scale-out tier only through the NIC's cap, ``min(1, s B_up /
B_out)``; its latency factor acts on every tier.

A hypothesis explains the measurements when every pair's residual ``r / pred`` is inside
the pair bars, every card's residual median inside the card bar (a faint card whose every
pair passes) and every domain's level inside the domain bar; it is contradicted where a
pair or a card is healthier than it predicts by more than the same bars ("gpu7 measured
0.99 on 23 pairs": not part of the host), and a container where a member is healthy on
its own evidence (``separation.healthy_member``). Peer bars compare with the tier's level
(the median residual), design bars with 1. A factor is over the tier's reference
(:func:`reference`: its healthy pairs' level, design where that is below): a pair a culprit
explains has the reference as its residual, inside both kinds of bar.

**Rate kinds** (latency spikes, corrupted payloads, wrong results): a pair either showed
the symptom or not. A card (or NIC) is the culprit when it explains two or more of them
with different partners; a host, supernode or switch when every one of its members is a
culprit on its own; what is left is links.

Search: greedy set cover over the unexplained exceptions (pairs, cards, domains beyond a
bar): each step takes the candidate explaining the most of them without contradicting any
measurement, the one fitting its own pairs on a tie (``slowed``), then the more specific; then a pass drops every culprit the others
explain without it. Candidates come only from the exceptions, and each is checked on its
own pairs: a clean fleet costs nothing here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from sncheck.health.endstats import Ends
from sncheck.model import is_uplink
from sncheck.topology import SCALE_OUT

if TYPE_CHECKING:
    from sncheck.fabric import Fabric

LEVEL, RATE = "level", "rate"
PAIR, CARD, DOMAIN = "pair", "card", "domain"
DESIGN, PEERS = "design", "peers"
MIN_PARTNERS = 2  # a card or NIC explains a symptom only when it shows with two partners at least
SPEED_PARTNERS = 3  # a card read at its own speed on a tier (explain.speeds): with three partners there at least
END_KINDS = ("card", "nic", "host", "supernode")
SHARED_KINDS = ("link", "switch")
UPLINK = "uplink"  # a leaf-to-spine cable: an Entity of kind "link" keyed (UPLINK, leaf, spine)
# ties: lower first; a cable after its switch: a leaf whose every measured pair crosses one uplink
# is named the leaf (what no measurement tells from that cable is listed beside it, ``same_ground``)
SPECIFIC = {"card": 0, "nic": 1, "link": 2, "host": 3, "switch": 4, UPLINK: 5, "supernode": 6}
EVERY_TIER_MOVES = 0.05  # containers over this share of a tier's pairs: its level is read again
TIER_TIE = 0.02  # factors of one culprit on two tiers this close are alike within the measurement noise
# Robust noise, normal samples: a standard deviation is MAD_SD median absolute deviations;
# a median's standard error is MEDIAN_SE times a mean's (sd / sqrt(n)).
MAD_SD = 1.4826
MEDIAN_SE = 1.2533
# A card whose median is inside the card bar by less than NEAR_Z standard errors of that
# median is not clear of it: named "near" for the retest to re-measure until it is
# (sncheck.run.nearbar); a candidate within NEAR_Z of its container's other cards is not
# told apart from them (sncheck.health.separation).
NEAR_Z = 2.0


@dataclass(frozen=True)
class Bar:
    """One rule's bar, in ratio space (below ``level`` is beyond it; latency ``above 2.0`` is
    ``level`` 0.5). ``scope``: a pair, a card's median (per tier), or a domain's level;
    ``ref``: against design (1) or the tier's level (peers)."""

    rule: str
    severity: int  # its rank: higher is more severe
    order: int  # its place in the rules file (ties of severity)
    scope: str
    ref: str
    level: float
    min_pairs: int = 1


@dataclass(frozen=True)
class Bars:
    mode: str
    bars: tuple[Bar, ...]

    def of(self, scope: str, ref: str | None = None) -> list[Bar]:
        return [b for b in self.bars if b.scope == scope and (ref is None or b.ref == ref)]

    def bound(self, scope: str, ref: str) -> float | None:
        """The strictest bar of a scope (highest level): what must stay inside it."""
        levels = [b.level for b in self.of(scope, ref)]
        return max(levels) if levels else None

    def tolerance(self, scope: str) -> float | None:
        """How much healthier than predicted a measurement may be before it contradicts:
        the loosest bar of the scope, inverted."""
        levels = [b.level for b in self.of(scope)]
        return 1.0 / min(levels) if levels else None


class Tier(Protocol):
    """The evidence of one tier (JUDGING.md: exceptions and pairs_of over PairSummaries)."""

    name: str
    a: np.ndarray  # card codes of each pair's ends
    b: np.ndarray
    ratio: np.ndarray  # design units (NaN where failed); RATE: exceptions beyond the bar (count)
    failed: np.ndarray
    level: float  # the tier's median ratio (its peers' level)

    @property
    def peers(self) -> np.ndarray: ...  # the pairs a level is read from: all but a retest subject's where others were measured

    def pairs_of(self, cards: np.ndarray) -> np.ndarray: ...

    def by_card(self, hold: bool = False) -> Ends: ...  # every pair end by card (health.endstats)

    def exceptions(self) -> np.ndarray: ...


class Paths(Protocol):
    """What the fabric says of each card and pair (``sncheck.fabric``): card codes index
    ``cards``; ``host``, ``sn`` and ``leaf`` map a card code to its host, supernode and its
    rail NIC's leaf (-1: none)."""

    cards: list[str]
    host: np.ndarray
    sn: np.ndarray
    leaf: np.ndarray
    hosts: list[str]
    supernodes: list[str]
    leaves: list[str]
    spines: list[str]
    one_host_domain: np.ndarray  # supernode code -> a domain of one host

    def spine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...

    def nic(self, card: int) -> str: ...

    def link(self, a: int, b: int) -> str: ...

    @property
    def fabric(self) -> Fabric: ...  # a cable's name (Fabric.uplink_of)

    def members(self, kind: str, code: int) -> np.ndarray: ...


@dataclass(eq=False)
class Entity:
    """A candidate culprit: an end kind holds ``members`` (card codes); a shared kind is on
    the path of the pairs its ``key`` selects (a link, a leaf, a spine)."""

    kind: str
    name: str
    members: np.ndarray
    key: tuple = ()
    mask: np.ndarray | None = field(default=None, repr=False)

    def holds(self, cards: np.ndarray, n: int) -> np.ndarray:
        if self.mask is None:
            self.mask = np.zeros(n, bool)
            self.mask[self.members] = True
        return self.mask[cards]


@dataclass(frozen=True)
class CostModel:
    """How a card's factor acts on each tier: ``out_cap`` (bandwidth: the scale-out
    design over the scale-up one; a card's factor s shows there as ``min(1, s / out_cap)``),
    or None (latency, collectives: the same factor on every tier)."""

    out_cap: float | None = None
    # pairwise collectives: a card's slowness mixes its speed (capped by the NIC over scale-out) with its
    # launch and latency (not capped), so its factor there lies between its inside factor and 1
    out_between: bool = False


@dataclass
class Rival:
    entity: str
    kind: str
    why: str

    def to_dict(self) -> dict:
        return {"entity": self.entity, "kind": self.kind, "why": self.why}


@dataclass
class Culprit:
    entity: str
    kind: str
    factors: dict[str, float]  # tier -> factor (LEVEL: design units; RATE: share of its pairs beyond the bar)
    explains: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # tier -> exception pairs
    touches: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # tier -> every pair of its
    rivals: list[Rival] = field(default_factory=list)
    note: str = ""  # "independent": a link worse than its sick ends; "unlocalised": card or link
    separated: bool = True
    members: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    peers: dict[str, float] = field(default_factory=dict)  # tier -> the peers' level it was judged against
    rate: bool = False  # a symptom a pair shows or not: factors are the shares of its pairs that show it
    # near its bar (sncheck.run.nearbar): note "near", a card inside the card bar by less
    # than its median's noise or a link inside a pair bar by less than the pair noise (with
    # ``beyond``, a named one beyond it by less) (tier -> its
    # median over the peers' level, that median's standard error, pairs, the bar)
    near: dict[str, dict] = field(default_factory=dict)

    @property
    def factor(self) -> float:
        return min(self.factors.values()) if self.factors else 1.0

    @property
    def tier(self) -> str | None:
        """The tier it was judged in: a level culprit where its factor is lowest, then where
        it has most pairs, factors within TIER_TIE alike (a faint host of one domain: its XGMI pairs at 0.92, not two bad
        scale-out pairs another culprit explains; a card, slow alike on every tier inside:
        its scale-up pairs); a rate culprit where it explains most, then most pairs."""
        if not self.factors:
            return None
        if self.rate:
            return max(self.factors, key=lambda t: (len(self.explains.get(t, ())), len(self.touches.get(t, ()))))
        # lowest within TIER_TIE of the lowest: a rack at 0.9 reads 0.899 on its intra-tray
        # pairs and 0.901 across trays, and the noise picked its 108 tray pairs over 2448
        low = min(self.factors.values())
        return max((t for t, f in self.factors.items() if f <= low + TIER_TIE), key=lambda t: len(self.touches.get(t, ())))


def reference(level: float) -> float:
    """What a culprit's factor of 1 measures on a tier whose pairs read ``level`` (their median,
    design units): that level, or design where the level is below it. A factor is a slowdown
    against what its healthy peers measure, so a pair it explains reads healthy against both
    bars (its residual is this reference): design bars compare ``f x reference``, peer bars
    ``f x reference / level``. A stress narrowing's healthy pairs read 1.59 of design: one card
    at 0.47 of design was a factor of 0.47, its pairs 0.63 of their peers under it, still
    exceptions, and its three links were named in its place (reviews19 #8). A level below design
    may be a culprit's own (a slow domain of two) and is read again under the hypothesis
    (``Level.relevel``): there design is the reference, as it was."""
    return max(1.0, level) if math.isfinite(level) and level > 0 else 1.0


def beyond(bars: Bars, ratio: np.ndarray, failed: np.ndarray, level: float) -> np.ndarray:
    """Which pair summaries are exceptions of a level kind: failed, or below a pair bar
    (design: the ratio; peers: the ratio over the tier's level). Rate kinds: any repeat
    beyond the rule's bound (``ratio`` counts them)."""
    if bars.mode == RATE:
        return np.asarray(ratio > 0)
    out = np.asarray(failed, bool).copy()
    with np.errstate(invalid="ignore"):
        design, peers = bars.bound(PAIR, DESIGN), bars.bound(PAIR, PEERS)
        if design is not None:
            out |= ratio < design
        if peers is not None and math.isfinite(level) and level > 0:
            out |= ratio / level < peers
    return out




def entity_of(p: Paths, kind: str, code: int, other: int = -1) -> Entity:
    """The candidate of a kind by its code (a link: its two cards' codes; a cable: its
    :func:`uplinks` code)."""
    if kind in ("card", "nic"):
        return Entity(kind, p.cards[code] if kind == "card" else p.nic(code), np.array([code]))
    if kind in ("host", "supernode"):
        return Entity(kind, (p.hosts if kind == "host" else p.supernodes)[code], p.members(kind, code))
    if kind == "link":
        return Entity("link", p.link(code, other), np.zeros(0, np.int64), ("link", min(code, other), max(code, other)))
    if kind == UPLINK:
        return uplink(p, code)
    if kind == "leaf":
        return Entity("switch", f"leaf:{p.leaves[code]}", p.members("leaf", code), ("leaf", code))
    return Entity("switch", f"spine:{p.spines[code]}", np.zeros(0, np.int64), ("spine", code))


def specific(e: Entity) -> int:
    """Its place among kinds on a tie (SPECIFIC): a cable is a link, ranked after its switch."""
    return SPECIFIC[UPLINK if e.key[:1] == (UPLINK,) else e.kind]


def uplinks(paths: Paths, a: np.ndarray, b: np.ndarray, spine: np.ndarray) -> np.ndarray:
    """The cables scale-out pairs ``(a, b)`` routed through ``spine`` (-1: none) cross, as
    codes (``leaf * spines + spine``): each end's leaf's uplink to that spine."""
    on, n = spine >= 0, len(paths.spines)
    return np.concatenate([paths.leaf[a[on]] * n + spine[on], paths.leaf[b[on]] * n + spine[on]])


def count_beyond(count, p: Paths, leaves: np.ndarray) -> None:
    """Count each faint NIC once for every spine its leaf reaches, and for that leaf's uplink
    to it: a spine or cable that carries all of one leaf's scale-out pairs explains those
    NICs' medians as the leaf does (an upper bound, as the leaf's). Without it a spine's
    bound fell below the leaf's gain, the spine was never scored, and the leaf was named
    with no rival (reviews19 #1)."""
    others = np.arange(len(p.leaves), dtype=np.int64)
    for leaf, n in zip(*np.unique(leaves, return_counts=True)):
        s = np.unique(p.fabric.spines_between(np.full(len(others), leaf), others))
        s = s[s >= 0]
        count("spine", np.repeat(s, n))
        count(UPLINK, np.repeat(leaf * len(p.spines) + s, n))


def uplink(paths: Paths, code: int) -> Entity:
    """The leaf-to-spine cable of an :func:`uplinks` code, named as DESIGN.md's identifiers
    name it (``leaf:<a>[<p>]<->spine:<b>[<q>]``, the fabric's ports)."""
    leaf, spine = divmod(code, len(paths.spines))
    return Entity("link", paths.fabric.uplink_of(leaf, spine), np.zeros(0, np.int64), (UPLINK, leaf, spine))


def on_path(e: Entity, paths: Paths, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which pairs ``(a, b)`` cross a shared entity."""
    what = e.key[0]
    if what == "link":
        return (np.minimum(a, b) == e.key[1]) & (np.maximum(a, b) == e.key[2])
    if what == "leaf":
        return (paths.leaf[a] == e.key[1]) | (paths.leaf[b] == e.key[1])
    if what == UPLINK:  # routed through its spine with an end under its leaf
        return (paths.spine(a, b) == e.key[2]) & ((paths.leaf[a] == e.key[1]) | (paths.leaf[b] == e.key[1]))
    return paths.spine(a, b) == e.key[1]


def pairs_on(e: Entity, t: Tier, paths: Paths) -> np.ndarray:
    """Every pair of the tier on an entity's path (positions, ascending)."""
    if (e.kind in ("nic", "switch") or e.key[:1] == (UPLINK,)) and t.name != SCALE_OUT:
        return np.zeros(0, np.int64)  # a NIC, a switch or a cable between switches carries scale-out pairs only
    if e.kind in END_KINDS:
        return t.pairs_of(e.members)
    if e.key[0] in ("link", UPLINK):  # a card pair's link: the first card's pairs; a cable: its leaf's
        mine = t.pairs_of(np.array([e.key[1]]) if e.key[0] == "link" else paths.members("leaf", e.key[1]))
        return mine[on_path(e, paths, t.a[mine], t.b[mine])]
    if e.key[0] == "leaf":
        return t.pairs_of(paths.members("leaf", e.key[1]))
    at = np.arange(len(t.a))  # a spine: the pairs between the leaves it joins
    return at[on_path(e, paths, t.a, t.b)]


def alone(lv, e: Entity, f: Mapping[str, float] | None = None) -> bool:
    """Whether a card or NIC candidate of the search ``lv`` (:class:`sncheck.health.levels.Level`)
    cannot be told from its pairs' links: measured in fewer than MIN_PARTNERS pairs, and no
    listing of its host names it at fault (``lv.listed``). A NIC ibstat shows Down is told
    apart by that listing, not by its pairs: on a two-host cluster it meets one card of the
    other host, and it, not that pair's link, is the culprit of its pair (review 29). With its
    factors ``f``: its pairs in the tiers where it acts only (below 1 there), so a card whose
    scale-out pairs sit at its NIC's cap whatever its speed, measured inside in one pair, is
    alone too (r9-13: a 2-card host alone in its domain, its one pair at 0.5, was named as
    either card at random, "separated", the other left: the pair tells neither from the link).
    A card's scale-out factor read from its pairs there (healthier than its speed lets them: its
    NVLinks down, ``Level.card_factors``) acts there only beyond a pair's noise (MISFIT): r11-32's
    one-host supernode, its one inside pair dead, read 0.99 over its 11 scale-out pairs on seed 1
    and 1.00 on seed 2, and was named as the card b1/gpu0 on the first and as the link on the second."""
    def acts(t: str) -> bool:
        ft = 1.0 if f is None else f.get(t, 1.0)
        return ft * MISFIT < 1.0 if t == SCALE_OUT and e.kind == "card" and lv.model.out_cap is not None else ft < 1.0
    tiers = [t for t in lv.tiers if f is None or acts(t)]
    return e.kind in ("card", "nic") and e.name not in lv.listed and \
        sum(len(lv.pairs(e, t)) for t in tiers) < MIN_PARTNERS


MISFIT = 1.1  # a pair measured this much healthier than predicted: beyond its noise (2% a sample)


def slowed(lv, e: Entity, H2: list) -> int:
    """How many of a candidate's pairs, no exception, its hypothesis ``H2`` predicts slower than
    before and more than MISFIT slower than measured. Of candidates explaining as much, the
    one that fits its own pairs: a link at 3x latency, not the NIC at one end whose other pair
    it predicts at 0.67 and that reads 1.00 (latency's bars, 2x, tolerate it: r7-25 named the NIC)."""
    n = 0
    for t, x in lv.tiers.items():
        at = lv.pairs(e, t)
        if len(at):
            pred = lv.pred(t, at, H2)
            with np.errstate(divide="ignore", invalid="ignore"):
                off = (pred < lv.pred(t, at, lv.H)) & ~x.failed[at] & (x.ratio[at] > MISFIT * pred * lv.ref[t])
            n += int((off & ~np.isin(at, lv.pair_ex[t])).sum())
    return n


LARGE = 1 << 16  # values: above this a median selects its middle values (np.partition), no sort of them all


def median(x: np.ndarray) -> float:
    """The median of x's values, NaN left out (NaN if none)."""
    x = x[~np.isnan(x)]
    n = len(x)
    if n > LARGE:  # the same middle values, selected in place in the copy (a fleet's tier: tens of millions)
        x.partition([(n - 1) // 2, n // 2])
    else:
        x = np.sort(x)
    # np.median's value to the bit (the middle value, or the mean of the two middle ones:
    # (a + b) / 2, as np.mean of two computes it), without its 40 us of checks a call: the
    # search asks for it per card of a small tier, tens of thousands of times a gate
    return float((x[(n - 1) // 2] + x[n // 2]) / 2) if n else math.nan


SMALL_GROUPS = 50_000  # values: below this a sort is cheaper than pandas' grouping (its ~2 ms a call)


def speeds(per: Mapping[str, np.ndarray], *bars: float | None) -> dict[str, float]:
    """A card's factor on tiers its speed acts on (``per``: its pairs' residuals a tier): the median
    of all of them; each tier's own where it is beyond the pair ``bars`` on every one, with three
    partners or more on each (a card's reading, not one pair's). One speed reads differently on tiers
    of different designs (the cost model's lateness and bandwidth over each tier's own time): a 0.5
    card on a 6-card host read 0.29 on its 5 NVSwitch pairs and 0.38 on its 16 scale-up ones, and one
    factor, the majority's, named the five its links (reviews21 #1). A card healthy on one tier, or
    with one pair there (a 0.3 link to its two-card host's mate beside its own 0.6), keeps one factor."""
    own = {t: min(1.0, median(v)) for t, v in per.items()}
    bar = max((b for b in bars if b is not None), default=None)
    if len(own) > 1 and bar is not None and all(f < bar and len(per[t]) >= SPEED_PARTNERS for t, f in own.items()):
        return own
    one = min(1.0, median(np.concatenate(list(per.values()))))
    return {t: one for t in per}


def group_median(owner: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct owner: (owner, median of its values, count), NaN values left out."""
    keep = ~np.isnan(values)
    owner, values = owner[keep], values[keep]
    if not len(owner):
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
    if len(owner) < SMALL_GROUPS:  # a retest's or a small tier's pairs: sorted by owner, then value
        order = np.lexsort((values, owner))
        owner, values = owner[order], values[order]
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        counts = np.diff(np.r_[starts, len(owner)])
        med = (values[starts + (counts - 1) // 2] + values[starts + counts // 2]) / 2  # as pandas', to the bit
        return owner[starts].astype(np.int64), med, counts.astype(np.int64)
    # pandas' grouped median selects within each group (6x faster than sorting every value
    # by owner and value at fleet size); the medians are the same to the bit
    grouped = pd.Series(values).groupby(owner, sort=True)
    med, counts = grouped.median(), grouped.size()
    return med.index.to_numpy(np.int64), med.to_numpy(float), counts.to_numpy(np.int64)


def joined(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-card (cards, values, counts) taken a range of cards at a time, as one."""
    cards, values, counts = (np.concatenate(column) for column in zip(*parts))
    return cards, values, counts


def holds_cards(rival: Entity, e: Entity) -> bool:
    """A rival that competed for the culprit's measurements: one holding all its cards."""
    if rival.name == e.name or rival.kind not in END_KINDS or e.kind not in END_KINDS:
        return False
    return bool(set(e.members.tolist()) <= set(rival.members.tolist()))


def unlocalised(found: list[Culprit], tiers: Mapping[str, Tier], paths: Paths, model: CostModel) -> list[Culprit]:
    """A link whose end was measured in that pair alone cannot be told from the card: both
    ends are named, "card or link, not localised" (never the link "between two otherwise
    healthy cards"); on one host, that host, the one entity holding every alternative. An
    inside link's ends' pairs count where a card as slow as the link would show (scale-out
    bandwidth: below the NIC's cap, ``model.out_cap``; r9-13's 2-card host: its 6 scale-out
    pairs at the cap whatever its speed)."""
    out = []
    for c in found:
        if c.kind != "link" or c.note or is_uplink(c.entity):
            out.append(c)
            continue
        a, b = (int(np.flatnonzero(np.array(paths.cards) == e)[0]) for e in c.entity.split("<->"))
        hidden = SCALE_OUT not in c.factors and model.out_cap is not None and c.factor >= model.out_cap
        shows = [t for t in tiers if t != SCALE_OUT or not hidden]  # (a scale-out link's ends: their NICs)
        seen = [sum(len(tiers[t].pairs_of(np.array([end]))) for t in shows) for end in (a, b)]
        if min(seen) >= MIN_PARTNERS:
            out.append(c)
            continue
        why = [Rival(c.entity, "link", "each end was measured in this pair alone")]
        if paths.host[a] == paths.host[b]:  # one finding holding every alternative: their host
            h = int(paths.host[a])
            out.append(Culprit(paths.hosts[h], "host", dict(c.factors), c.explains, c.touches,
                               why + [Rival(paths.cards[e], "card", why[0].why) for e in (a, b)], "unlocalised",
                               separated=False, members=paths.members("host", h)))
            continue
        for end in (a, b):
            out.append(Culprit(paths.cards[end], "card", dict(c.factors), c.explains, c.touches, list(why),
                               "unlocalised", separated=False, members=np.array([end])))
    return out
