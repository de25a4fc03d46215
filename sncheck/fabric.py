"""The scale-out fabric: the leaf each NIC hangs off, the spines that join the leaves, and
the path of every card pair through them. The one home of the fabric (JUDGING.md): the
mock acts faults out through :meth:`Fabric.path` (its arrays), and localization inverts
the same paths.

Where the inventory says nothing (``fabric:``, :mod:`sncheck.config.fabric`), the fabric
is derived from the platform: rail *r* serves card *r* (DESIGN.md), one leaf per rail for
the whole cluster (``leaf:su0-rail<r>``, host i on port i+1) and no spines (the core is not
an entity it can name). ``scalable_unit: N`` makes one leaf per rail per N hosts.

A pair's path (:class:`Path`): its two cards; on the scale-out tier also their rail NICs,
each NIC's cable to its leaf, the leaf of each NIC (once when they share it) and, when the
leaves differ, one spine joining both with the two uplink cables. Which spine: of the
spines joining both leaves (sorted), the ``(mix(leaf_a) + mix(leaf_b)) mod n``-th (:func:`_mix`),
the model's stand-in for ECMP's hash (a flow keeps its path, and a pair's path is fixed). Two
leaves that share no declared spine route through a core the inventory does not describe:
no spine is on that path. Intra-host and scale-up pairs cross no NIC and no switch.

Identifiers (DESIGN.md): ``leaf:<name>``, ``spine:<name>``, a switch port ``leaf:<name>[<port>]``,
a cable ``<host>/nic<r><->leaf:<name>[<port>]`` or ``leaf:<a>[<p>]<->spine:<b>[<q>]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from sncheck.config.fabric import FabricSpec, unit_leaf
from sncheck.config.inventory import Inventory
from sncheck.model import (LEAF, LINK_SEP, SPINE, Tier, card_id, index_of, link_id, natural_key, parse_switch, port_id,
                           switch_id)

_NIC = re.compile(r"^(?P<host>.+)/nic(?P<rail>0|[1-9][0-9]*)$")  # ASCII, as model.index_of


def _mix(leaf: np.ndarray) -> np.ndarray:
    """A leaf index scrambled (splitmix64's finalizer): the spine of a pair is
    ``(mix(a) + mix(b)) mod n``, so rail-aligned pairs (leaf indices a fixed step apart)
    spread over the spines as ECMP's hash spreads flows."""
    x = leaf.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps: that is the hash
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@dataclass(frozen=True)
class Path:
    """The entities a measured pair goes through (JUDGING.md, the fabric model)."""
    tier: str
    ends: tuple[str, str]                 # the two cards
    link: str                             # the card pair a<->b
    hosts: tuple[str, ...]                # host of each end (once when shared)
    supernodes: tuple[str, ...]           # supernode of each end (once when shared)
    nics: tuple[str, ...] = ()            # scale-out: the rail NIC of each end
    cables: tuple[str, ...] = ()          # scale-out: NIC-leaf cables, then leaf-spine uplinks
    switches: tuple[str, ...] = ()        # scale-out: leaf of each NIC (once when shared), then the spine

    @property
    def shared(self) -> tuple[str, ...]:
        """The elements between the ends: the link, its cables and switches."""
        return (self.link, *self.cables, *self.switches)

    @property
    def elements(self) -> tuple[str, ...]:
        """Every entity on the path: ends, NICs, shared elements, containers."""
        return (*self.ends, *self.nics, *self.shared, *self.hosts, *self.supernodes)


@dataclass(frozen=True)
class Measured:
    """What a plan measures, as card positions: pairs ``a[i], b[i]``, and groups in which
    every pair is measured (an all-to-all), with the largest message they carry (bytes).
    Used to tell whether a fault can show at all."""
    a: np.ndarray
    b: np.ndarray
    groups: tuple[np.ndarray, ...] = ()
    size: float = float("inf")


@dataclass(frozen=True)
class Cabling:
    """Cables as a fabric has them (``Fabric.declared_cabling``) or as a discovery found them
    (``sncheck.vendors.infiniband.discovery``), in switch names and port numbers: each NIC's
    ``(switch, port)``, each uplink ``(leaf, port) -> (spine, port)``. ``unread``: hosts whose
    adapters could not be told apart (``host: why``); ``strays``: adapters of no inventory host."""
    nics: dict[str, tuple[str, int]]
    uplinks: dict[tuple[str, int], tuple[str, int]]
    unread: dict[str, str] = field(default_factory=dict)
    strays: tuple[str, ...] = ()


@dataclass(frozen=True)
class SwitchCover:
    """A switch that explains some NICs (:meth:`Fabric.covering_switches`): the NICs of the
    given set it serves, and how many NICs it serves beyond them (each is evidence against the
    switch unless it measured bad too: :meth:`Fabric.nics_of` lists them)."""
    switch: str
    explains: tuple[str, ...]
    others: int


class Fabric:
    """The fabric of one inventory, cards in the topology's order (supernodes, hosts, cards)."""

    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        spec = inventory.fabric or FabricSpec()
        hosts = [h for sn in inventory.supernodes for h in sn.hosts]
        cards = {h: inventory.hosts[h].cards for h in hosts}
        self.first = dict(zip(hosts, np.cumsum([0] + [cards[h] for h in hosts[:-1]]).tolist()))
        n = sum(cards.values())
        self.card_leaf = np.full(n, -1, np.int64)  # card position -> leaf index (its rail NIC's leaf)
        self.card_port = np.zeros(n, np.int64)     # card position -> the port its NIC is cabled to
        leaves: dict[str, int] = {}
        if spec.leaves:
            for leaf in spec.leaves:
                li = leaves.setdefault(leaf.name, len(leaves))
                for host, rail, port in leaf.nics:
                    self.card_leaf[self.first[host] + rail] = li
                    self.card_port[self.first[host] + rail] = port
        else:
            unit = spec.scalable_unit or max(len(hosts), 1)
            for i, h in enumerate(hosts):
                for r in range(cards[h]):
                    li = leaves.setdefault(unit_leaf(i // unit, r), len(leaves))
                    self.card_leaf[self.first[h] + r] = li
                    self.card_port[self.first[h] + r] = i % unit + 1
        self.leaf_names: tuple[str, ...] = tuple(leaves)
        self.spine_names: tuple[str, ...] = tuple(s.name for s in spec.spines)
        self.leaf_index = leaves
        self.spine_index = {s: i for i, s in enumerate(self.spine_names)}
        leaf_rails: list[set[int]] = [set() for _ in leaves]
        rails = np.concatenate([np.arange(cards[h]) for h in hosts]) if hosts else np.zeros(0, np.int64)
        for li, r in set(zip(self.card_leaf.tolist(), rails.tolist())):
            leaf_rails[li].add(r)
        joins = np.zeros((len(spec.spines), len(leaves)), bool)   # spine x leaf
        for si, s in enumerate(spec.spines):
            for li, name in enumerate(self.leaf_names):
                joins[si, li] = (s.leaves is None and s.rails is None or (s.leaves is not None and name in s.leaves)
                                 or (s.rails is not None and bool(leaf_rails[li] & set(s.rails))))
        self.joins = joins
        self._rail = rails
        # leaves with the same spines share a group: a pair's common spines depend on the two groups only
        groups: dict[tuple[int, ...], int] = {}
        self.leaf_group = np.array([groups.setdefault(tuple(np.flatnonzero(joins[:, li]).tolist()), len(groups))
                                    for li in range(len(leaves))], np.int64)
        sets = list(groups)
        self._common = {(ga, gb): np.array(sorted(set(sa) & set(sb)), np.int64)
                        for ga, sa in enumerate(sets) for gb, sb in enumerate(sets)}
        top = np.zeros(len(leaves), np.int64)  # a leaf's highest host port: its uplinks follow
        np.maximum.at(top, self.card_leaf, self.card_port)
        self.uplink_port = {(li, si): int(top[li]) + 1 + j for li in range(len(leaves))
                            for j, si in enumerate(np.flatnonzero(joins[:, li]).tolist())}
        self.spine_port = {(si, li): j + 1 for si in range(len(spec.spines))
                           for j, li in enumerate(np.flatnonzero(joins[si]).tolist())}
        self.hosts = tuple(hosts)
        self._host_of_card = np.repeat(np.arange(len(hosts)), [cards[h] for h in hosts])
        sn_of = {h: sn.name for sn in inventory.supernodes for h in sn.hosts}
        self._sn = [sn_of[h] for h in hosts]
        sn_index = {name: i for i, name in enumerate(dict.fromkeys(self._sn))}
        self.card_sn = np.array([sn_index[self._sn[h]] for h in self._host_of_card.tolist()], np.int64)

    # -- ids -------------------------------------------------------------------------
    def leaf_id(self, li: int) -> str:
        return switch_id(LEAF, self.leaf_names[li])

    def spine_id(self, si: int) -> str:
        return switch_id(SPINE, self.spine_names[si])

    @cached_property
    def switches(self) -> tuple[str, ...]:
        """Every switch id: the leaves, then the spines."""
        return (*map(self.leaf_id, range(len(self.leaf_names))), *map(self.spine_id, range(len(self.spine_names))))

    @cached_property
    def _card_positions(self) -> dict[str, int]:
        """Each card id's position: one look-up for the common spelling (a fleet's plans
        name every card of every group: 118,784 at 16,384 cards)."""
        return {card_id(h, r): first + r for h, first in self.first.items()
                for r in range(self.inventory.hosts[h].cards)}

    def card_position(self, card_or_nic: str) -> int:
        """The position (in topology order) of a card ``h/gpu<r>`` or of the card of NIC ``h/nic<r>``."""
        pos = self._card_positions.get(card_or_nic)
        if pos is not None:
            return pos
        host, _, leaf = card_or_nic.rpartition("/")
        for prefix in ("gpu", "nic"):
            r = index_of(leaf, prefix)
            if r is not None and host in self.first and r < self.inventory.hosts[host].cards:
                return self.first[host] + r
        raise KeyError(card_or_nic)

    def nic_id(self, pos: int) -> str:
        return f"{self.hosts[self._host_of_card[pos]]}/nic{self._rail[pos]}"

    def leaf_of(self, card_or_nic: str) -> str:
        """The leaf switch id a card's rail NIC (or the NIC) hangs off."""
        return self.leaf_id(int(self.card_leaf[self.card_position(card_or_nic)]))

    def cable_of(self, card_or_nic: str) -> str:
        """The cable from a NIC to its leaf: ``<host>/nic<r><->leaf:<name>[<port>]``."""
        pos = self.card_position(card_or_nic)
        return f"{self.nic_id(pos)}{LINK_SEP}{port_id(self.leaf_id(int(self.card_leaf[pos])), int(self.card_port[pos]))}"

    def uplink_of(self, li: int, si: int) -> str:
        """The cable from leaf ``li`` to spine ``si``: ``leaf:<a>[<p>]<->spine:<b>[<q>]``."""
        return (f"{port_id(self.leaf_id(li), self.uplink_port[(li, si)])}{LINK_SEP}"
                f"{port_id(self.spine_id(si), self.spine_port[(si, li)])}")

    def switch_ref(self, switch: str) -> tuple[str, int]:
        """``(kind, index)`` of a switch id of this fabric (KeyError otherwise)."""
        parsed = parse_switch(switch)
        if parsed is None or parsed[2] is not None:
            raise KeyError(switch)
        kind, name, _ = parsed
        table = self.leaf_index if kind == LEAF else self.spine_index
        return kind, table[name]

    def cable_at(self, port: str) -> str:
        """The cable at a switch port id (``leaf:x[5]``) in the declared fabric: a NIC's
        ``<host>/nic<r><->leaf:x[5]`` or an uplink ``leaf:x[p]<->spine:y[q]``; KeyError when
        nothing is cabled there."""
        parsed = parse_switch(port)
        if parsed is None or parsed[2] is None:
            raise KeyError(port)
        kind, index = self.switch_ref(switch_id(parsed[0], parsed[1]))
        p = parsed[2]
        if kind == LEAF:
            hit = np.flatnonzero((self.card_leaf == index) & (self.card_port == p))
            if len(hit):
                return self.cable_of(self.nic_id(int(hit[0])))
            spine = next((si for (li, si), q in self.uplink_port.items() if li == index and q == p), None)
            if spine is not None:
                return self.uplink_of(index, spine)
        else:
            leaf = next((li for (si, li), q in self.spine_port.items() if si == index and q == p), None)
            if leaf is not None:
                return self.uplink_of(leaf, index)
        raise KeyError(port)

    def is_element(self, entity: str) -> bool:
        """Whether ``entity`` is a switch, a cabled switch port or a cable of this fabric."""
        try:
            if LINK_SEP in entity:
                a, _, b = entity.partition(LINK_SEP)
                at = b if parse_switch(b) is not None else a
                return self.cable_at(at) == entity
            parsed = parse_switch(entity)
            if parsed is None:
                return False
            if parsed[2] is None:
                self.switch_ref(entity)
            else:
                self.cable_at(entity)
        except KeyError:
            return False
        return True

    def declared_cabling(self) -> Cabling:
        """The cables this fabric declares (or derives), for comparison with a discovery."""
        nics = {self.nic_id(p): (self.leaf_names[li], int(self.card_port[p]))
                for p, li in enumerate(self.card_leaf.tolist())}
        uplinks = {(self.leaf_names[li], port): (self.spine_names[si], self.spine_port[(si, li)])
                   for (li, si), port in self.uplink_port.items()}
        return Cabling(nics, uplinks)

    # -- what a switch serves ----------------------------------------------------------
    def uplink_ref(self, cable: str) -> tuple[int, int]:
        """``(leaf, spine)`` indices of a leaf-to-spine cable of this fabric (KeyError otherwise)."""
        at, _, end = cable.partition(LINK_SEP)
        if self.cable_at(at) != cable:
            raise KeyError(cable)
        return self.switch_ref(at.partition("[")[0])[1], self.switch_ref(end.partition("[")[0])[1]

    def _positions_of(self, switch: str) -> np.ndarray:
        if LINK_SEP in switch:  # a leaf-to-spine cable: its leaf's cards and those its spine routes them to
            li, si = self.uplink_ref(switch)
            routed = self.spines_between(np.full(len(self.leaf_names), li), np.arange(len(self.leaf_names))) == si
            return np.flatnonzero((self.card_leaf == li) | routed[self.card_leaf])
        kind, index = self.switch_ref(switch)
        if kind == LEAF:
            return np.flatnonzero(self.card_leaf == index)
        return np.flatnonzero(self.joins[index][self.card_leaf])

    def nics_of(self, switch: str) -> tuple[str, ...]:
        """The NICs whose paths cross ``switch``: a leaf's own, or every NIC under a spine's leaves
        (a leaf-to-spine cable: its leaf's, and those under the leaves its spine routes them to)."""
        return tuple(self.nic_id(int(p)) for p in self._positions_of(switch))

    def hosts_of(self, switch: str) -> tuple[str, ...]:
        """The hosts with a NIC on ``switch`` (in inventory order)."""
        return tuple(self.hosts[i] for i in np.unique(self._host_of_card[self._positions_of(switch)]))

    def rails_of(self, switch: str) -> tuple[int, ...]:
        """The rails of the NICs on ``switch``: what draining it takes from its hosts."""
        return tuple(sorted(set(self._rail[self._positions_of(switch)].tolist())))

    def covering_switches(self, nics: Iterable[str]) -> list[SwitchCover]:
        """The switches that serve two or more of ``nics``, most explained first, then the
        ones serving fewest other NICs: the candidates that name one switch for N NIC
        symptoms. A cover with ``others == 0`` explains the NICs and nothing more. A spine is
        a candidate only for NICs on two leaves or more (on one leaf, the leaf is the smaller)."""
        given = sorted(set(nics), key=natural_key)
        pos = np.array([self.card_position(n) for n in given], np.int64)
        if not len(pos):
            return []
        leaves = self.card_leaf[pos]
        out = []
        for li in np.unique(leaves).tolist():
            mine = tuple(n for n, x in zip(given, leaves.tolist()) if x == li)
            if len(mine) >= 2:
                out.append(SwitchCover(self.leaf_id(li), mine, int((self.card_leaf == li).sum()) - len(mine)))
        for si in range(len(self.spine_names)):
            under = self.joins[si][leaves]
            if under.sum() >= 2 and len(np.unique(leaves[under])) >= 2:
                mine = tuple(n for n, x in zip(given, under.tolist()) if x)
                served = int(self.joins[si][self.card_leaf].sum())
                out.append(SwitchCover(self.spine_id(si), mine, served - len(mine)))
        return sorted(out, key=lambda c: (-len(c.explains), c.others, natural_key(c.switch)))

    def switch_evidence(self, switch: str, nics: Iterable[str]) -> dict:
        """What a switch finding lists (DESIGN.md: the NICs and switch ports it explains):
        ``nics``, the switch's ``ports`` they reach it through (a leaf: each NIC's port; a
        spine: its port to each of their leaves), their ``hosts`` and ``rails``, and how many
        NICs the switch ``serves`` in all."""
        kind, index = self.switch_ref(switch)
        mine = sorted(set(nics), key=natural_key)
        pos = [self.card_position(n) for n in mine]
        if kind == LEAF:
            ports = [port_id(switch, int(self.card_port[p])) for p in pos]
        else:
            leaves = sorted({int(self.card_leaf[p]) for p in pos})
            ports = [port_id(switch, self.spine_port[(index, li)]) for li in leaves if (index, li) in self.spine_port]
        return {"nics": mine, "ports": ports,
                "hosts": list(dict.fromkeys(self.hosts[self._host_of_card[p]] for p in pos)),
                "rails": sorted({int(self._rail[p]) for p in pos}), "serves": len(self._positions_of(switch))}

    # -- paths -----------------------------------------------------------------------
    def spines_between(self, la: np.ndarray, lb: np.ndarray) -> np.ndarray:
        """The spine index each pair of leaves routes through (-1: the same leaf, or no declared spine)."""
        out = np.full(len(la), -1, np.int64)
        if not self.spine_names:
            return out
        diff = np.flatnonzero(la != lb)
        ngroups = int(self.leaf_group.max()) + 1 if len(self.leaf_group) else 1
        code = self.leaf_group[la[diff]] * ngroups + self.leaf_group[lb[diff]]
        for c in np.unique(code):
            common = self._common[(int(c) // ngroups, int(c) % ngroups)]
            if len(common):
                at = diff[code == c]
                with np.errstate(over="ignore"):
                    h = _mix(la[at]) + _mix(lb[at])
                out[at] = common[(h % np.uint64(len(common))).astype(np.int64)]
        return out

    def pair_switches(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per pair of card positions: the leaf of each end's NIC and the spine between them (-1: none)."""
        la, lb = self.card_leaf[a], self.card_leaf[b]
        return la, lb, self.spines_between(la, lb)

    def through_any(self, switches: list[str], src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Per pair named by its cards' ids: whether its path crosses any of ``switches`` (:meth:`through`);
        a pair with an end that is no card of the fabric crosses nothing (the one reading of the
        judging's and the retest's masks)."""
        out = np.zeros(len(src), bool)
        if not switches or not len(src):
            return out
        at = [self._card_index.get_indexer(pd.Index(np.asarray(v, dtype=object))) for v in (src, dst)]
        known = (at[0] >= 0) & (at[1] >= 0)
        a, b = (self._card_order[np.where(known, x, 0)] for x in at)
        for switch in switches:
            out |= known & self.through(switch, a, b)
        return out

    @cached_property
    def _card_index(self) -> pd.Index:
        return pd.Index(list(self._card_positions))

    @cached_property
    def _card_order(self) -> np.ndarray:
        return np.fromiter(self._card_positions.values(), np.int64, len(self._card_positions))

    def through(self, switch: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Per pair of card positions: whether its path crosses ``switch`` (a scale-out pair
        with an end's NIC on the leaf, or routed through the spine; an uplink cable: both; a
        NIC's cable ``<host>/nic<r><->leaf:x[p]``: a scale-out pair with that NIC's card at an end)."""
        la, lb, spine = self.pair_switches(a, b)
        out = self.card_sn[a] != self.card_sn[b]
        nic = switch.partition(LINK_SEP)[0]
        if LINK_SEP in switch and parse_switch(nic) is None:
            if self.cable_of(nic) != switch:
                raise KeyError(switch)
            x = self.card_position(nic)
            return out & ((a == x) | (b == x))
        if LINK_SEP in switch:
            li, si = self.uplink_ref(switch)
            return out & (spine == si) & ((la == li) | (lb == li))
        kind, index = self.switch_ref(switch)
        return out & ((la == index) | (lb == index) if kind == LEAF else spine == index)

    def tier(self, a: int, b: int) -> str:
        ha, hb = self._host_of_card[a], self._host_of_card[b]
        if ha == hb:
            return Tier.INTRA_HOST
        return Tier.SCALE_UP if self._sn[ha] == self._sn[hb] else Tier.SCALE_OUT

    def path(self, a: str, b: str, tier: str | None = None) -> Path:
        """The entities between cards ``a`` and ``b`` (``tier``: the pair's, computed when None)."""
        pa, pb = self.card_position(a), self.card_position(b)
        tier = tier or self.tier(pa, pb)
        ha, hb = self.hosts[self._host_of_card[pa]], self.hosts[self._host_of_card[pb]]
        sa, sb = self._sn[self._host_of_card[pa]], self._sn[self._host_of_card[pb]]
        hosts, sns = tuple(dict.fromkeys((ha, hb))), tuple(dict.fromkeys((sa, sb)))
        if tier != Tier.SCALE_OUT:
            return Path(tier, (a, b), link_id(a, b), hosts, sns)
        la, lb = int(self.card_leaf[pa]), int(self.card_leaf[pb])
        spine = int(self.spines_between(np.array([la]), np.array([lb]))[0])
        cables = [self.cable_of(a), self.cable_of(b)]
        switches = list(dict.fromkeys((self.leaf_id(la), self.leaf_id(lb))))
        if spine >= 0:
            cables += [self.uplink_of(la, spine), self.uplink_of(lb, spine)]
            switches.append(self.spine_id(spine))
        return Path(tier, (a, b), link_id(a, b), hosts, sns, (self.nic_id(pa), self.nic_id(pb)),
                    tuple(cables), tuple(switches))

    # -- what a plan measures --------------------------------------------------------
    def crossing_leaf_pairs(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The leaf pairs of the scale-out pairs among ``members`` (every pair of them), from
        their leaves alone: two leaves unless all members of both are in one supernode, a
        leaf with itself when its members are in two supernodes or more."""
        leaves, inverse = np.unique(self.card_leaf[members], return_inverse=True)
        sn = self.card_sn[members]
        lo = np.full(len(leaves), np.iinfo(np.int64).max)
        hi = np.full(len(leaves), -1)
        np.minimum.at(lo, inverse, sn)
        np.maximum.at(hi, inverse, sn)
        single = np.where(lo == hi, lo, -1)  # the one supernode of a leaf's members, or -1
        i, j = np.triu_indices(len(leaves), k=0)
        cross = np.where(i == j, single[i] < 0, (single[i] < 0) | (single[j] < 0) | (single[i] != single[j]))
        return leaves[i[cross]], leaves[j[cross]]

    def crosses(self, element: str, measured: Measured) -> bool:
        """Whether some measured pair goes through ``element``: a card pair (the link), a
        NIC, a switch, a switch port or a cable (NICs, switches and cables carry scale-out
        pairs only)."""
        a, b = measured.a, measured.b
        if LINK_SEP in element and parse_switch(element.rpartition(LINK_SEP)[2]) is None \
                and parse_switch(element.partition(LINK_SEP)[0]) is None:
            x, y = (self.card_position(c) for c in element.split(LINK_SEP))
            return bool((((a == x) & (b == y)) | ((a == y) & (b == x))).any()) or any(
                bool(np.isin([x, y], g).all()) for g in measured.groups)
        if parse_switch(element) is not None and parse_switch(element)[2] is not None:  # type: ignore[index]
            element = self.cable_at(element)
        out = self.card_sn[a] != self.card_sn[b]
        a, b = a[out], b[out]
        nic = element.partition(LINK_SEP)[0] if LINK_SEP in element else element
        if parse_switch(nic) is None:  # a NIC, or the cable from a NIC
            x = self.card_position(nic)
            return bool(((a == x) | (b == x)).any()) or any(
                x in g and bool((self.card_sn[g] != self.card_sn[x]).any()) for g in measured.groups)
        pairs = [(self.card_leaf[a], self.card_leaf[b])] + [self.crossing_leaf_pairs(g) for g in measured.groups]
        la, lb = np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])
        if LINK_SEP in element:  # an uplink: a leaf and a spine
            leaf, spine = (self.switch_ref(end.partition("[")[0])[1] for end in element.split(LINK_SEP))
            return bool(((self.spines_between(la, lb) == spine) & ((la == leaf) | (lb == leaf))).any())
        kind, index = self.switch_ref(element)
        if kind == LEAF:
            return bool(((la == index) | (lb == index)).any())
        return bool((self.spines_between(la, lb) == index).any())


def inventory_block(found: Cabling) -> dict:
    """A discovered cabling as the inventory's ``fabric:`` mapping (an explicit leaf map, each
    NIC on its port; the spines with the leaves they join). Uplink and spine port numbers are
    the grammar's own (after each leaf's host ports; a leaf's place among a spine's leaves): a
    fabric cabled otherwise loads, and ``sncheck fabric check`` reports those uplinks."""
    leaves: dict[str, dict[str, int]] = {}
    for nic, (leaf, port) in sorted(found.nics.items(), key=lambda x: natural_key(x[0])):
        leaves.setdefault(leaf, {})[nic] = port
    spines: dict[str, list[str]] = {}
    for (leaf, _), (spine, _) in sorted(found.uplinks.items()):
        if leaf not in spines.setdefault(spine, []):
            spines[spine].append(leaf)
    block: dict = {"leaves": [{"name": name, "ports": ports} for name, ports in sorted(leaves.items(),
                                                                                      key=lambda x: natural_key(x[0]))]}
    if spines:
        block["spines"] = [{"name": name, "leaves": sorted(ls, key=natural_key)}
                           for name, ls in sorted(spines.items(), key=lambda x: natural_key(x[0]))]
    return {"fabric": block}
