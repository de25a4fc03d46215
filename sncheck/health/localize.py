"""Name the culprit from a matrix of pair tests (C4D style).

One bad cell is a link; a card most of whose cells are bad is the card; every card of a
host bad alike is the host; every host of a supernode bad is the supernode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sncheck.topology import SCALE_OUT, Topology, host_of

CARD_BAD_SHARE = 0.5   # a card is the culprit when at least half of its pairs are bad
CARD_MIN_BAD = 2       # ... and at least two of them, so one bad link never names a card


@dataclass
class Culprit:
    entity: str
    kind: str  # card | link | host | supernode
    cells: pd.DataFrame = field(repr=False)  # the bad cells it explains


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
    rest = candidates - out
    if not rest or "tier" not in cells.columns:
        return out
    tested = _counts(cells[(cells["tier"].astype(object) != SCALE_OUT).to_numpy(bool)])
    inside = bad[(bad["tier"].astype(object) != SCALE_OUT).to_numpy(bool)]
    n: dict[str, int] = {}
    for a, b in zip(inside["src"].astype(object), inside["dst"].astype(object)):  # the bad cells: few
        for me, other in ((a, b), (b, a)):
            if me in rest and n_bad.get(other, 0) <= n_bad[me]:
                n[me] = n.get(me, 0) + 1
    return out | {c for c, k in n.items() if k >= CARD_MIN_BAD and k >= CARD_BAD_SHARE * tested[c]}


def localize(cells: pd.DataFrame, topo: Topology, flagged_cards: set[str] = frozenset()) -> list[Culprit]:
    """Attribute bad cells to cards, hosts, supernodes and links.

    ``cells`` has one row per tested pair with columns ``src``, ``dst``, ``link`` and
    ``bad`` (bool). ``flagged_cards`` are cards already found bad by a per-card score
    (a faint slow card whose cells each pass); they count as culprit cards too.
    """
    if cells.empty:
        return []
    # Hash counts (value_counts), not sorts: a fleet has millions of pairs. Every later
    # step works on the bad cells only, which are few.
    n_tested = _counts(cells)
    bad = cells[cells["bad"].to_numpy(bool)]
    n_bad = _counts(bad)
    bad_cards = _bad_cards(cells, bad, n_tested, n_bad)
    bad_cards |= set(flagged_cards) & n_tested.keys()
    if not bad_cards and not n_bad:
        return []

    def touching(members: set[str]) -> pd.DataFrame:
        return bad[(bad["src"].isin(members) | bad["dst"].isin(members)).to_numpy(bool)]

    culprits: list[Culprit] = []
    explained: set[str] = set()
    cards_left = set(bad_cards)

    # Only hosts with a bad card can be bad hosts; only supernodes with a bad host, bad.
    bad_hosts = set()
    for host in {host_of(c) for c in bad_cards}:
        mine = set(topo.cards_of_host(host))
        if len(mine) >= 2 and mine <= n_tested.keys() and mine <= bad_cards:
            bad_hosts.add(host)
    for sn in sorted({topo.supernode_of_host(h) for h in bad_hosts}):
        hosts = topo.hosts_of_supernode(sn)
        if len(hosts) >= 2 and set(hosts) <= bad_hosts:
            sn_cards = set(topo.cards_of_supernode(sn))
            culprits.append(Culprit(sn, "supernode", touching(sn_cards)))
            bad_hosts -= set(hosts)
            cards_left -= sn_cards
            explained |= sn_cards
    for host in sorted(bad_hosts):
        mine = set(topo.cards_of_host(host))
        culprits.append(Culprit(host, "host", touching(mine)))
        cards_left -= mine
        explained |= mine
    for card in sorted(cards_left):
        culprits.append(Culprit(card, "card", touching({card})))
        explained.add(card)

    lone = bad[~bad["src"].isin(explained) & ~bad["dst"].isin(explained)]
    if lone.empty:  # (cells judged per card may carry no links at all)
        return culprits
    for link, rows in lone.groupby(lone["link"].astype(str), sort=True):
        culprits.append(Culprit(str(link), "link", rows))
    return culprits
