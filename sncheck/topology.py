"""Cards, hosts, supernodes, link tiers and pairing schedules.

Identifiers follow DESIGN.md: a card is ``<host>/gpu<index>``; a link joins two card
ids with ``<->`` in natural sort order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Sequence, TypeVar

import numpy as np

from sncheck.config.inventory import Inventory
from sncheck.fabric import Fabric
from sncheck.model import Tier, card_id, card_of, host_of, hosts_of, link_id, natural_key, split_link  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")

INTRA_HOST, SCALE_UP, SCALE_OUT = Tier.INTRA_HOST, Tier.SCALE_UP, Tier.SCALE_OUT


@dataclass(frozen=True)
class Card:
    id: str
    host: str
    index: int
    supernode: str


class Topology:
    """The cluster as the inventory describes it, with tier lookup for any card pair."""

    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        cards = []
        for sn in inventory.supernodes:
            for h in sn.hosts:
                for i in range(inventory.hosts[h].cards):
                    cards.append(Card(card_id(h, i), h, i, sn.name))
        self.cards: tuple[Card, ...] = tuple(cards)
        self.by_id: dict[str, Card] = {c.id: c for c in cards}

    @cached_property
    def fabric(self) -> Fabric:
        """The scale-out fabric: each NIC's leaf, the spines, every pair's path (sncheck.fabric)."""
        return Fabric(self.inventory)

    @cached_property
    def hosts(self) -> list[str]:
        return [h for sn in self.inventory.supernodes for h in sn.hosts]

    @cached_property
    def supernode_names(self) -> list[str]:
        return [sn.name for sn in self.inventory.supernodes]

    @cached_property
    def card_ids(self) -> tuple[str, ...]:
        """Card ids in inventory order; schedules refer to cards by position here."""
        return tuple(c.id for c in self.cards)

    @cached_property
    def first_card(self) -> dict[str, int]:
        """Each host's first card position (a host's cards are consecutive)."""
        out: dict[str, int] = {}
        for i, c in enumerate(self.cards):
            out.setdefault(c.host, i)
        return out

    def cards_of_host(self, host: str) -> list[str]:
        return [card_id(host, i) for i in range(self.inventory.hosts[host].cards)]

    def cards_of_supernode(self, sn: str) -> list[str]:
        return list(self._supernode_cards.get(sn, ()))

    def hosts_of_supernode(self, sn: str) -> list[str]:
        return next((list(s.hosts) for s in self.inventory.supernodes if s.name == sn), [])

    @cached_property
    def _supernode_cards(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for c in self.cards:
            out.setdefault(c.supernode, []).append(c.id)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def card_table(self) -> pd.DataFrame:
        """One row per card (index: card id) with its host, rail and supernode: the
        lookup table for vectorized detection over millions of pair rows."""
        ids = [c.id for c in self.cards]
        rank = natural_ranks(self.cards)
        import pandas as pd  # noqa: PLC0415 -- pandas: the CLI's inventory commands need none

        return pd.DataFrame({"host": [c.host for c in self.cards], "rail": [c.index for c in self.cards],
                             "supernode": [c.supernode for c in self.cards], "natural_rank": rank},
                            index=pd.Index(ids, name="card", dtype=object))

    def _positions(self, *columns: pd.Series) -> list[np.ndarray]:
        index = self.card_table.index
        out = []
        for col in columns:
            pos = index.get_indexer(col.astype(str))
            if (pos < 0).any():
                raise KeyError(col[pos < 0].iloc[0])
            out.append(pos)
        return out

    def link_ids(self, a: pd.Series, b: pd.Series) -> pd.Series:
        """:func:`link_id` over two columns of card ids at once."""
        ia, ib = self._positions(a, b)
        rank = self.card_table["natural_rank"].to_numpy()
        import pandas as pd  # noqa: PLC0415 -- pandas: the CLI's inventory commands need none

        first = pd.Series(rank[ia] <= rank[ib], index=a.index)
        a, b = a.astype(str), b.astype(str)
        return (a.where(first, b) + "<->" + b.where(first, a)).rename(None)

    def tiers(self, a: pd.Series, b: pd.Series) -> pd.Series:
        """:meth:`tier` over two columns of card ids at once."""
        table = self.card_table
        ia, ib = self._positions(a, b)
        host = table["host"].to_numpy()
        sn = table["supernode"].to_numpy()
        tier = np.where(host[ia] == host[ib], INTRA_HOST,
                        np.where(sn[ia] == sn[ib], SCALE_UP, SCALE_OUT))
        import pandas as pd  # noqa: PLC0415 -- pandas: the CLI's inventory commands need none

        return pd.Series(tier, index=a.index, dtype=str)

    def supernode_positions(self, sn: str) -> range:
        """Positions of a supernode's cards in :attr:`card_ids` (they are consecutive)."""
        hosts = next(s.hosts for s in self.inventory.supernodes if s.name == sn)
        if not hosts:
            return range(0)
        last = hosts[-1]
        return range(self.first_card[hosts[0]], self.first_card[last] + self.inventory.hosts[last].cards)

    def supernode_of_host(self, host: str) -> str:
        return self.inventory.hosts[host].supernode

    def group_tier(self, cards) -> str:
        """The slowest tier a group of cards crosses: one host, one supernode, or across."""
        known = [self.by_id[c] for c in cards if c in self.by_id]
        if len({c.host for c in known}) <= 1:
            return INTRA_HOST
        return SCALE_UP if len({c.supernode for c in known}) == 1 else SCALE_OUT

    def tier(self, a: str, b: str) -> str:
        ca, cb = self.by_id[a], self.by_id[b]
        if ca.host == cb.host:
            return INTRA_HOST
        return SCALE_UP if ca.supernode == cb.supernode else SCALE_OUT

    def is_entity(self, entity: str) -> bool:
        """True when ``entity`` names a card, nic, link, host, supernode, switch, switch port
        or cable of this cluster."""
        if "leaf:" in entity or "spine:" in entity:  # a switch, a switch port or a cable
            return self.fabric.is_element(entity)
        if "<->" in entity:
            a, b = split_link(entity)
            return a in self.by_id and b in self.by_id and a != b
        if card_of(entity) != entity:  # a NIC: the card of its rail
            return card_of(entity) in self.by_id
        return entity in self.by_id or entity in self.inventory.hosts or entity in self.supernode_names


def round_robin(items: Sequence[T]) -> list[list[tuple[T, T]]]:
    """Circle-method schedule: every pair exactly once, no item twice in a round.

    ``n`` even gives n-1 rounds of n/2 pairs; ``n`` odd gives n rounds (one item
    sits out each round).
    """
    players: list[T | None] = list(items)
    if len(players) < 2:
        return []
    if len(players) % 2:
        players.append(None)  # the bye
    n = len(players)
    rounds = []
    for _ in range(n - 1):
        pairs = [(players[i], players[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        players = [players[0], players[-1], *players[1:-1]]  # rotate all but the first
    return rounds


def _dense(keys: Sequence, order: Sequence[int]) -> np.ndarray:
    """Each key's rank among the distinct keys, ``order`` their sorted order (equal keys
    share a rank, as link_id's stable sort leaves them)."""
    rank, dense, prev = np.empty(len(keys), np.int64), -1, None
    for k in order:
        dense += keys[k] != prev
        rank[k], prev = dense, keys[k]
    return rank


def natural_ranks(cards: Sequence[Card]) -> np.ndarray:
    """Each card's rank in the natural order of card ids (:func:`natural_key`), equal keys
    sharing one. A card's key is its host's with ``/gpu`` joined to the host key's last
    text and the card index after it, so cards sort by that host key, then index: one
    natural key a host (131,072 cards: 16,384 keys, not 131,072). A host name with a
    ``/`` (never in an inventory) is keyed card by card."""
    hosts = list(dict.fromkeys(c.host for c in cards))
    if any("/" in h for h in hosts):
        keys = [natural_key(c.id) for c in cards]
        return _dense(keys, sorted(range(len(keys)), key=keys.__getitem__))
    mods = []
    for h in hosts:
        k = natural_key(h)
        mods.append((*k[:-1], k[-1] + "/gpu"))
    host_rank = _dense(mods, sorted(range(len(mods)), key=mods.__getitem__))
    at = {h: i for i, h in enumerate(hosts)}
    hr = host_rank[np.fromiter((at[c.host] for c in cards), np.int64, len(cards))]
    idx = np.fromiter((c.index for c in cards), np.int64, len(cards))
    order = np.lexsort((idx, hr))
    new = np.ones(len(cards), bool)
    new[1:] = (np.diff(hr[order]) != 0) | (np.diff(idx[order]) != 0)
    out = np.empty(len(cards), np.int64)
    out[order] = np.cumsum(new) - 1
    return out


def round_robin_positions(n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`round_robin` of ``range(n)`` as two (rounds, pairs) position arrays, the
    same rounds in the same order; -1 marks the bye of an odd ``n``."""
    if n < 2:
        return np.empty((0, 0), np.int64), np.empty((0, 0), np.int64)
    m = n + n % 2
    players = np.arange(m)
    players[players == n] = -1  # the bye
    a = np.empty((m - 1, m // 2), np.int64)
    b = np.empty((m - 1, m // 2), np.int64)
    for r in range(m - 1):
        a[r], b[r] = players[: m // 2], players[::-1][: m // 2]
        players = np.concatenate([players[:1], players[-1:], players[1:-1]])
    return a, b


def rail_round_positions(topo: Topology, depth: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`rail_rounds` as card position arrays (into ``topo.card_ids``) per round."""
    sns = topo.inventory.supernodes
    first = np.array([topo.first_card[h] for h in topo.hosts], np.int64)
    ncards = np.array([topo.inventory.hosts[h].cards for h in topo.hosts], np.int64)
    host_pos = {h: i for i, h in enumerate(topo.hosts)}
    positions = [np.array([host_pos[h] for h in sn.hosts], np.int64) for sn in sns]
    spread: dict[tuple[int, int], list[int]] = {}   # (|A|, |B|) -> host offsets
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for sn_round in round_robin(list(range(len(sns)))):
        # Consecutive supernode pairs of the same sizes are one stack of host arrays: a
        # round's pairs at once, in the same order (supernode pairs grow with the square
        # of the supernodes: 130,816 of them at 131,072 cards).
        runs: list[tuple[list[np.ndarray], list[np.ndarray], list[int]]] = []
        for ia, ib in sn_round:
            ha, hb = positions[ia], positions[ib]
            if len(ha) > len(hb):
                ha, hb = hb, ha
            offsets = spread.get((len(ha), len(hb)))
            if offsets is None:
                d = len(hb) if depth is None else min(len(hb), max(depth, -(-len(hb) // len(ha))))
                offsets = spread[(len(ha), len(hb))] = sorted({(j * len(hb)) // d for j in range(d)})
                # (gaps <= ceil(|B|/d) <= |A|)
            if runs and runs[-1][2] is offsets and len(runs[-1][0][0]) == len(ha):
                runs[-1][0].append(ha)
                runs[-1][1].append(hb)
            else:
                runs.append(([ha], [hb], offsets))
        # Each run's host arrays stacked once for all its offsets (not once per offset).
        stacks = [(np.stack(has), np.stack(hbs), offsets) for has, hbs, offsets in runs]
        for r in range(max(len(offsets) for _, _, offsets in stacks)):
            parts_a, parts_b = [], []
            for a_hosts, hb, offsets in stacks:
                if r >= len(offsets):
                    continue
                hb_r = hb[:, (np.arange(a_hosts.shape[1]) + offsets[r]) % hb.shape[1]].ravel()
                ha = a_hosts.ravel()
                rails = np.minimum(ncards[ha], ncards[hb_r])
                k = np.arange(rails.sum()) - np.repeat(np.cumsum(rails) - rails, rails)  # rail of each pair
                parts_a.append(np.repeat(first[ha], rails) + k)
                parts_b.append(np.repeat(first[hb_r], rails) + k)
            out.append((np.concatenate(parts_a), np.concatenate(parts_b)))
    return out


def rail_rounds(topo: Topology, depth: int | None = None) -> list[list[tuple[str, str]]]:
    """Rail-aligned pairs across supernodes, spread over rounds.

    Card k of a host meets card k of hosts in each other supernode. Supernode pairs
    follow a round-robin over supernodes. Inside a supernode pair (A, B) with
    |A| <= |B|, one round per host offset ``o`` pairs host A[i] with host
    B[(i + o) mod |B|], so no card is used twice in a round.

    ``depth=None`` (all pairs): every offset, so each card meets card k of every host of
    every other supernode. ``depth=d``: d offsets spread evenly over |B| (at least
    ceil(|B|/|A|), so every rail of every host of B is met, at most |B|): each card meets
    about d hosts of every other supernode, and the pairs grow with d, not with |B|.
    """
    ids = topo.card_ids
    return [[(ids[x], ids[y]) for x, y in zip(a.tolist(), b.tolist())] for a, b in rail_round_positions(topo, depth)]


def rail_pairs_per_offset(topo: Topology) -> int:
    """Cross-supernode pairs that one host offset adds: over every supernode pair, the cards
    of its smaller supernode (by hosts; of the first listed where they tie). Each supernode's
    pairs with those after it at once: memory linear in the supernodes."""
    inv, sns = topo.inventory, topo.inventory.supernodes
    size = np.array([len(sn.hosts) for sn in sns], np.int64)
    cards = np.array([sum(inv.hosts[h].cards for h in sn.hosts) for sn in sns], np.int64)
    return sum(int(np.where(size[i] <= size[i + 1:], cards[i], cards[i + 1:]).sum()) for i in range(len(sns)))
