"""Name the culprit from a matrix of pair tests (C4D style).

One bad cell is a link; a card most of whose cells are bad is the card; a card bad only
over the scale-out network, and healthy inside its domain, is its rail NIC; every card
(or every NIC) of a host bad alike is the host; every host of a supernode bad is the
supernode. A bad cell much worse than what its two ends explain is a link of its own,
even when both ends are sick; a bad cell whose end has no other pair to tell it from the
link is "card or link, not localised".
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sncheck.topology import SCALE_OUT, Topology
from sncheck.model import host_of, nic_of, split_link

CARD_BAD_SHARE = 0.5   # a card is the culprit when at least half of its pairs are bad
CARD_MIN_BAD = 2       # ... and at least two of them, so one bad link never names a card
MIN_TO_TELL = 2        # pairs a card needs before one bad pair can be told from the card


@dataclass
class Culprit:
    entity: str
    kind: str  # card | nic | link | host | supernode
    cells: pd.DataFrame = field(repr=False)  # the bad cells it explains
    note: str = ""  # how it was told apart: "independent" (a link worse than its ends), "unlocalised"


@dataclass(frozen=True)
class LinkBar:
    """What makes a bad cell a link of its own beside sick ends: its ratio (to its tier's
    design, else its tier's median) below ``factor`` times the lower of its two cards'
    levels (``below``), or above ``factor`` times the higher (``above``)."""

    below: bool
    factor: float


def _counts(cells: pd.DataFrame) -> dict[str, int]:
    """How many pairs each card is part of (a hash count, or a bincount over codes)."""
    src, dst = cells["src"], cells["dst"]
    if isinstance(src.dtype, pd.CategoricalDtype) and src.dtype == dst.dtype:
        cats = src.cat.categories
        n = np.bincount(src.cat.codes.to_numpy(), minlength=len(cats)) + \
            np.bincount(dst.cat.codes.to_numpy(), minlength=len(cats))
        nz = np.flatnonzero(n)
        return pd.Series(n[nz], index=cats[nz].astype(object)).to_dict()
    counts = pd.concat([src, dst], ignore_index=True).value_counts()
    return counts[counts > 0].to_dict()


def _scale_out(cells: pd.DataFrame) -> np.ndarray:
    if "tier" not in cells.columns:
        return np.zeros(len(cells), dtype=bool)
    return (cells["tier"].astype(object) == SCALE_OUT).to_numpy(bool)


def _bad_cards(cells: pd.DataFrame, bad: pd.DataFrame, n_tested: dict[str, int],
               n_bad: dict[str, int]) -> set[str]:
    """Cards with at least half of their pairs bad, over all their pairs or over the
    pairs inside their own scale-up domain.

    An all-pairs plan gives a card hundreds of pairs across supernodes, each limited by
    the NICs rather than the card; they must not dilute the card's pairs inside its
    domain, where it is slow, into many links "between two otherwise healthy cards".
    Inside the domain, a bad pair whose other end has more bad pairs than this card is
    counted as that card's: the healthy neighbours of two sick cards stay healthy.
    """
    candidates = {c for c, b in n_bad.items() if b >= CARD_MIN_BAD}
    out = {c for c in candidates if n_bad[c] >= CARD_BAD_SHARE * n_tested[c]}
    out -= _beside_one_worse(bad, out, n_tested, n_bad)
    rest = candidates - out
    if not rest or "tier" not in cells.columns:
        return out
    tested = _counts(cells[~_scale_out(cells)])
    inside = bad[~_scale_out(bad)]
    n: dict[str, int] = {}
    for a, b in zip(inside["src"].astype(object), inside["dst"].astype(object)):  # the bad cells: few
        for me, other in ((a, b), (b, a)):
            if me in rest and n_bad.get(other, 0) <= n_bad[me]:
                n[me] = n.get(me, 0) + 1
    return out | {c for c, k in n.items() if k >= CARD_MIN_BAD and k >= CARD_BAD_SHARE * tested[c]}


def _beside_one_worse(bad: pd.DataFrame, cards: set[str], n_tested: dict[str, int],
                      n_bad: dict[str, int]) -> set[str]:
    """Cards whose every bad pair is with one other card that is bad on a larger share of
    its pairs: that card's symptom (a retest of one slow card beside two controls gives
    each control half its pairs bad, all of them with the slow card)."""
    share = {c: n_bad[c] / n_tested[c] for c in cards}
    others: dict[str, set[str]] = {}
    for a, b in zip(bad["src"].astype(object), bad["dst"].astype(object)):  # the bad cells: few
        for me, other in ((a, b), (b, a)):
            if me in cards:
                others.setdefault(me, set()).add(other)
    return {c for c, o in others.items() if len(o) == 1 and (w := next(iter(o))) in share and share[w] > share[c]}


def _beside_culprit(card: str, bad: pd.DataFrame, explained: set[str], cells: pd.DataFrame) -> bool:
    """A card every bad pair of which is with a host or supernode culprit's cards, and
    healthy with the cards it was measured with apart from those (two pairs at least):
    that culprit's symptom. A scale-out retest of a whole slow host (8 cards) beside
    three controls gives each control 16 of its 20 pairs bad, every one with the host,
    and its 4 pairs with the other controls good. With no other pair the card cannot be
    told from its partner and stays named."""
    ends = pd.concat([bad["src"], bad["dst"]]).astype(object)
    if not ends[ends != card].isin(explained).all():
        return False
    src, dst = cells["src"].astype(object), cells["dst"].astype(object)
    other = dst.where(src == card, src)[(src == card) | (dst == card)]
    return int((~other.isin(explained)).sum()) >= CARD_MIN_BAD


def _nic_cards(cells: pd.DataFrame, bad: pd.DataFrame, candidates: set[str],
               flagged: Mapping[str, set[str]]) -> set[str]:
    """The cards whose fault lies in their rail NIC: bad over the scale-out network (at
    least half of those pairs and two, or flagged in that tier alone) while their pairs
    inside the domain, which were measured, are healthy."""
    if "tier" not in cells.columns:
        return set()
    out_cells = _scale_out(cells)
    out_tested, in_tested = _counts(cells[out_cells]), _counts(cells[~out_cells])
    out_bad, in_bad = _counts(bad[_scale_out(bad)]), _counts(bad[~_scale_out(bad)])
    nics = set()
    for card in candidates | set(out_bad):
        if not in_tested.get(card):
            continue  # never measured inside its domain: the card cannot be told from its NIC
        sick_inside = in_bad.get(card, 0) >= max(CARD_MIN_BAD, CARD_BAD_SHARE * in_tested[card]) or \
            bool(flagged.get(card, set()) - {SCALE_OUT})
        ob = out_bad.get(card, 0)
        sick_outside = (ob >= CARD_MIN_BAD and ob >= CARD_BAD_SHARE * out_tested.get(card, 0)) or \
            SCALE_OUT in flagged.get(card, set())
        if sick_outside and not sick_inside:
            nics.add(card)
    return nics


def _ratios(cells: pd.DataFrame) -> np.ndarray:
    """Each pair's value over its tier's design value (else the tier's median); a pair
    that carried nothing is 0."""
    value = cells["value"].to_numpy(float).copy()
    if "failed" in cells.columns:
        value[cells["failed"].to_numpy(bool)] = 0.0
    tier = cells["tier"].astype(str).to_numpy()
    ref = cells["design"].to_numpy(float).copy() if "design" in cells.columns else np.full(len(cells), np.nan)
    for t in np.unique(tier):
        at = (tier == t) & ~(np.isfinite(ref) & (ref > 0))
        if at.any():
            ok = value[(tier == t) & (value > 0) & np.isfinite(value)]
            ref[at] = np.median(ok) if len(ok) else np.nan
    with np.errstate(all="ignore"):
        return value / ref


def _levels(cells: pd.DataFrame) -> dict[tuple[str, str], float]:
    """Per (card, tier): the median of its pairs' ratios (:func:`_ratios`)."""
    tier = cells["tier"].astype(str).to_numpy()
    ratio = cells["_ratio"].to_numpy(float)
    both = pd.DataFrame({"card": np.concatenate([cells["src"].astype(str).to_numpy(),
                                                 cells["dst"].astype(str).to_numpy()]),
                         "tier": np.concatenate([tier, tier]), "ratio": np.concatenate([ratio, ratio])})
    return both.groupby(["card", "tier"])["ratio"].median().to_dict()


def localize(cells: pd.DataFrame, topo: Topology, flagged_cards: Mapping[str, set[str]] | AbstractSet[str] = frozenset(),
             link_bar: LinkBar | None = None) -> list[Culprit]:
    """Attribute bad cells to cards, NICs, hosts, supernodes and links.

    ``cells`` has one row per tested pair with columns ``src``, ``dst``, ``link``, ``tier``
    and ``bad`` (bool). ``flagged_cards`` are cards already found bad by a per-card score
    (a faint slow card whose cells each pass), each with the tiers it was found bad in
    (a plain set: every tier); they count as culprit cards, or NICs when only their
    scale-out tier is bad. ``link_bar`` (from a ratio rule) lets a bad cell beside sick
    ends be a link of its own; without it such a cell is its ends' symptom.
    """
    if cells.empty:
        return []
    flagged = dict(flagged_cards) if isinstance(flagged_cards, Mapping) else \
        {c: {"*"} for c in flagged_cards}
    # Hash counts (value_counts), not sorts: a fleet has millions of pairs. Every later
    # step works on the bad cells only, which are few.
    n_tested = _counts(cells)
    judge_links = link_bar is not None and "value" in cells.columns and "tier" in cells.columns
    if judge_links:
        cells = cells.assign(_ratio=_ratios(cells))
    bad = cells[cells["bad"].to_numpy(bool)]
    n_bad = _counts(bad)
    bad_cards = _bad_cards(cells, bad, n_tested, n_bad)
    bad_cards |= set(flagged) & n_tested.keys()
    nic_cards = _nic_cards(cells, bad, bad_cards, {c: t for c, t in flagged.items() if "*" not in t})
    bad_cards -= nic_cards
    if not bad_cards and not nic_cards and not n_bad:
        return []

    def touching(members: set[str], only_out: bool = False) -> pd.DataFrame:
        at = (bad["src"].isin(members) | bad["dst"].isin(members)).to_numpy(bool)
        return bad[at & _scale_out(bad)] if only_out else bad[at]

    culprits: list[Culprit] = []
    explained: set[str] = set()       # cards whose every bad cell is explained
    explained_out: set[str] = set()   # cards whose bad scale-out cells are explained (their NIC)
    cards_left, nics_left = set(bad_cards), set(nic_cards)

    # Only hosts with a bad card (or NIC) can be bad hosts; only supernodes with a bad host, bad.
    bad_hosts = set()
    for host in {host_of(c) for c in bad_cards | nic_cards}:
        mine = set(topo.cards_of_host(host))
        if len(mine) >= 2 and mine <= n_tested.keys() and (mine <= bad_cards or mine <= nic_cards):
            bad_hosts.add(host)
    for sn in sorted({topo.supernode_of_host(h) for h in bad_hosts}):
        hosts = topo.hosts_of_supernode(sn)
        if len(hosts) >= 2 and set(hosts) <= bad_hosts:
            sn_cards = set(topo.cards_of_supernode(sn))
            culprits.append(Culprit(sn, "supernode", touching(sn_cards)))
            bad_hosts -= set(hosts)
            cards_left -= sn_cards
            nics_left -= sn_cards
            explained |= sn_cards
    for host in sorted(bad_hosts):
        mine = set(topo.cards_of_host(host))
        culprits.append(Culprit(host, "host", touching(mine)))
        cards_left -= mine
        nics_left -= mine
        explained |= mine
    in_domains = set(explained)  # the cards of the host and supernode culprits (not of card culprits)
    for card in sorted(cards_left):
        mine = touching({card})
        if in_domains and card not in flagged and _beside_culprit(card, mine, in_domains, cells):
            continue  # its bad pairs are a host's or supernode's found above
        culprits.append(Culprit(card, "card", mine))
        explained.add(card)
    for card in sorted(nics_left):
        culprits.append(Culprit(nic_of(card), "nic", touching({card}, only_out=True)))
        explained_out.add(card)

    out = _scale_out(bad)
    src, dst = bad["src"].astype(object), bad["dst"].astype(object)

    def covered(ends: pd.Series) -> np.ndarray:
        return (ends.isin(explained) | (ends.isin(explained_out) & out)).to_numpy(bool)

    by_end = covered(src) | covered(dst)
    lone = bad[~by_end]
    beside = bad[by_end]
    if judge_links and link_bar is not None and not beside.empty:
        levels = _levels(cells)
        own = _independent(beside, levels, link_bar)
        for link, rows in beside[own].groupby(beside[own]["link"].astype(str), sort=True):
            culprits.append(Culprit(str(link), "link", rows, note="independent"))
    if lone.empty:  # (cells judged per card may carry no links at all)
        return culprits
    for link, rows in lone.groupby(lone["link"].astype(str), sort=True):
        a, b = split_link(str(link))
        if min(n_tested.get(a, 0), n_tested.get(b, 0)) < MIN_TO_TELL:
            # One end was measured in this pair alone: the card cannot be told from the link.
            for end in (a, b):
                culprits.append(Culprit(end, "card", rows, note="unlocalised"))
            continue
        culprits.append(Culprit(str(link), "link", rows))
    return culprits


def _independent(cells: pd.DataFrame, levels: dict[tuple[str, str], float], bar: LinkBar) -> np.ndarray:
    """Which bad cells are worse than their two ends explain (see :class:`LinkBar`)."""
    out = np.zeros(len(cells), dtype=bool)
    for i, (a, b, t, r) in enumerate(zip(cells["src"].astype(str), cells["dst"].astype(str),
                                         cells["tier"].astype(str), cells["_ratio"].to_numpy(float))):
        la, lb = levels.get((a, t), np.nan), levels.get((b, t), np.nan)
        if np.isfinite(la) and np.isfinite(lb) and np.isfinite(r):
            out[i] = r < bar.factor * min(la, lb) if bar.below else r > bar.factor * max(la, lb)
    return out
