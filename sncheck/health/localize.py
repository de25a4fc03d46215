"""Name the culprit from a matrix of pair tests (C4D style).

One bad cell is a link; a card most of whose cells are bad is the card; every card of a
host bad alike is the host; every host of a supernode bad is the supernode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..topology import Topology

CARD_BAD_SHARE = 0.5   # a card is the culprit when at least half of its pairs are bad
CARD_MIN_BAD = 2       # ... and at least two of them, so one bad link never names a card


@dataclass
class Culprit:
    entity: str
    kind: str  # card | link | host | supernode
    cells: pd.DataFrame = field(repr=False)  # the bad cells it explains
    tested: int = 0  # how many cells touch it


def localize(cells: pd.DataFrame, topo: Topology, flagged_cards: set[str] = frozenset()) -> list[Culprit]:
    """Attribute bad cells to cards, hosts, supernodes and links.

    ``cells`` has one row per tested pair with columns ``src``, ``dst``, ``link`` and
    ``bad`` (bool). ``flagged_cards`` are cards already found bad by a per-card score
    (a faint slow card whose cells each pass); they count as culprit cards too.
    """
    if cells.empty:
        return []
    ends = pd.concat([
        cells[["src", "bad"]].rename(columns={"src": "card"}),
        cells[["dst", "bad"]].rename(columns={"dst": "card"}),
    ])
    per_card = ends.groupby("card")["bad"].agg(["sum", "count"])
    bad_cards = set(per_card.index[(per_card["sum"] >= CARD_MIN_BAD)
                                   & (per_card["sum"] >= CARD_BAD_SHARE * per_card["count"])])
    bad_cards |= set(flagged_cards) & set(per_card.index)
    if not bad_cards and not cells["bad"].any():
        return []

    culprits: list[Culprit] = []
    explained: set[str] = set()
    cards_left = set(bad_cards)

    bad_hosts = set()
    for host in topo.hosts:
        mine = set(topo.cards_of_host(host))
        tested = mine & set(per_card.index)
        if len(mine) >= 2 and tested == mine and mine <= bad_cards:
            bad_hosts.add(host)
    for sn in topo.supernode_names:
        hosts = [h for h in topo.hosts if topo.supernode_of_host(h) == sn]
        if len(hosts) >= 2 and set(hosts) <= bad_hosts:
            sn_cards = set(topo.cards_of_supernode(sn))
            touched = cells[cells["src"].isin(sn_cards) | cells["dst"].isin(sn_cards)]
            culprits.append(Culprit(sn, "supernode", touched[touched["bad"]], len(touched)))
            bad_hosts -= set(hosts)
            cards_left -= sn_cards
            explained |= sn_cards
    for host in sorted(bad_hosts):
        mine = set(topo.cards_of_host(host))
        touched = cells[cells["src"].isin(mine) | cells["dst"].isin(mine)]
        culprits.append(Culprit(host, "host", touched[touched["bad"]], len(touched)))
        cards_left -= mine
        explained |= mine
    for card in sorted(cards_left):
        touched = cells[(cells["src"] == card) | (cells["dst"] == card)]
        culprits.append(Culprit(card, "card", touched[touched["bad"]], len(touched)))
        explained.add(card)

    lone = cells[cells["bad"] & ~cells["src"].isin(explained) & ~cells["dst"].isin(explained)]
    for link, rows in lone.groupby("link", sort=True):
        culprits.append(Culprit(str(link), "link", rows, len(rows)))
    return culprits
