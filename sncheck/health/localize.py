"""Name the culprit from a matrix of pair tests (C4D style).

One bad cell is a link; a card most of whose cells are bad is the card; every card of a
host bad alike is the host; every host of a supernode bad is the supernode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..topology import Topology, host_of

CARD_BAD_SHARE = 0.5   # a card is the culprit when at least half of its pairs are bad
CARD_MIN_BAD = 2       # ... and at least two of them, so one bad link never names a card


@dataclass
class Culprit:
    entity: str
    kind: str  # card | link | host | supernode
    cells: pd.DataFrame = field(repr=False)  # the bad cells it explains


def localize(cells: pd.DataFrame, topo: Topology, flagged_cards: set[str] = frozenset()) -> list[Culprit]:
    """Attribute bad cells to cards, hosts, supernodes and links.

    ``cells`` has one row per tested pair with columns ``src``, ``dst``, ``link`` and
    ``bad`` (bool). ``flagged_cards`` are cards already found bad by a per-card score
    (a faint slow card whose cells each pass); they count as culprit cards too.
    """
    if cells.empty:
        return []
    # Hash counts (value_counts), not sorts: a fleet has millions of pairs.
    n_tested = pd.concat([cells["src"], cells["dst"]], ignore_index=True).value_counts().to_dict()
    bad = cells[cells["bad"].to_numpy(bool)]
    n_bad = pd.concat([bad["src"], bad["dst"]], ignore_index=True).value_counts().to_dict()
    bad_cards = {c for c, b in n_bad.items() if b >= CARD_MIN_BAD and b >= CARD_BAD_SHARE * n_tested[c]}
    bad_cards |= set(flagged_cards) & n_tested.keys()
    if not bad_cards and not n_bad:
        return []

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
        hosts = [h for h in topo.hosts if topo.supernode_of_host(h) == sn]
        if len(hosts) >= 2 and set(hosts) <= bad_hosts:
            sn_cards = set(topo.cards_of_supernode(sn))
            touched = cells[cells["src"].isin(sn_cards) | cells["dst"].isin(sn_cards)]
            culprits.append(Culprit(sn, "supernode", touched[touched["bad"]]))
            bad_hosts -= set(hosts)
            cards_left -= sn_cards
            explained |= sn_cards
    for host in sorted(bad_hosts):
        mine = set(topo.cards_of_host(host))
        touched = cells[cells["src"].isin(mine) | cells["dst"].isin(mine)]
        culprits.append(Culprit(host, "host", touched[touched["bad"]]))
        cards_left -= mine
        explained |= mine
    for card in sorted(cards_left):
        touched = cells[(cells["src"] == card) | (cells["dst"] == card)]
        culprits.append(Culprit(card, "card", touched[touched["bad"]]))
        explained.add(card)

    lone = cells[cells["bad"] & ~cells["src"].isin(explained) & ~cells["dst"].isin(explained)]
    for link, rows in lone.groupby("link", sort=True):
        culprits.append(Culprit(str(link), "link", rows))
    return culprits
