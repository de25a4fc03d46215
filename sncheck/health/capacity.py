"""Capacity after isolation: does a parallel layout still fit in the healthy cards?

The model (kept simple on purpose):

- **world = TP × PP × DP** ranks, one per card (the Megatron convention).
- **EP is not another factor.** The MoE layers regroup the same ranks into expert-parallel
  groups of EP ranks, carved out of each pipeline stage's TP × DP ranks; so EP must
  divide TP × DP.
- **A TP group and an EP group must each sit inside one supernode.** Their traffic (an
  all-reduce every layer, an all-to-all every MoE layer) needs the scale-up fabric.
  PP and DP may cross supernodes over scale-out.
- **Inside a supernode any cards can be grouped** (scale-up is all-to-all), so only the
  count of healthy cards matters, not which ones.
- Hence the placement unit is ``lcm(TP, EP)`` cards inside one supernode: it holds whole
  TP groups and whole EP groups. A supernode holds ``healthy // unit`` units; the
  layout needs ``world / unit`` units; its leftover ``healthy % unit`` cards are stranded.

An isolated host takes all its cards out, an isolated supernode all its hosts, a NIC its
card (it is isolated by masking it), a switch its rail's cards on the hosts it serves (its
rail drained: what the fleet cap counts, reviews20 #12); a link or a cable takes nothing out
(its two cards still work for everything else).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from sncheck.config.playbook import ParallelLayout
from sncheck.model import card_of, is_cable, is_switch
from sncheck.topology import Topology, host_of


@dataclass
class SupernodeCapacity:
    name: str
    cards: int
    healthy: int
    hosts_out: list[str]  # hosts out of service whole
    cards_out: list[str]  # isolated cards on hosts still in service
    tp_groups: int  # whole TP groups its healthy cards hold
    ep_groups: int  # whole EP groups
    units: int  # whole lcm(TP, EP) units
    stranded: int  # healthy cards left over after the units


@dataclass
class CapacityReport:
    layout: ParallelLayout
    supernodes: list[SupernodeCapacity]
    total_cards: int
    healthy_cards: int
    units_needed: int
    units_available: int
    fits: bool
    max_dp: int  # the largest DP that fits with this TP, EP and PP (0: none)
    warnings: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # entities that take nothing out, with why
    taken: list[str] = field(default_factory=list)  # a NIC or switch: the cards it takes out, said

    def to_dict(self) -> dict:
        d = asdict(self)
        d["layout"] = {**asdict(self.layout), "world": self.layout.world, "unit": self.layout.unit}
        return d


def capacity(topo: Topology, isolated: Iterable[str], layout: ParallelLayout) -> CapacityReport:
    """How ``layout`` fits in ``topo`` once the ``isolated`` entities are out of service."""
    inv = topo.inventory
    out_hosts: set[str] = set()
    out_cards: set[str] = set()
    ignored: list[str] = []
    taken: list[str] = []
    for entity in isolated:
        if "<->" in entity:
            ignored.append(f"{entity}: a {'cable' if is_cable(entity) else 'link'} takes no card out of service "
                           "(it masks none: repair it)")
        elif entity in topo.by_id:
            out_cards.add(entity)
        elif card_of(entity) != entity and card_of(entity) in topo.by_id:  # a NIC: isolated by masking its card
            out_cards.add(card_of(entity))
            taken.append(f"{entity}: its card {card_of(entity)} is masked (a NIC is isolated by masking its card)")
        elif is_switch(entity) and topo.is_entity(entity):  # its rail drained on every host it serves
            cards = [card_of(n) for n in topo.fabric.nics_of(entity)]
            out_cards.update(cards)
            rails = ", ".join(map(str, topo.fabric.rails_of(entity)))
            taken.append(f"{entity}: rail {rails} drained on the {len(topo.fabric.hosts_of(entity))} hosts it "
                         f"serves: {len(cards)} cards out of service (as the fleet cap counts it)")
        elif entity in inv.hosts:
            out_hosts.add(entity)
        elif entity in topo.supernode_names:
            out_hosts.update(next(sn.hosts for sn in inv.supernodes if sn.name == entity))
        else:
            ignored.append(f"{entity}: not in inventory {inv.name}")

    # Grouped by supernode once, in inventory order: the work follows what is out of
    # service, never a walk over every card of the fleet.
    table = topo.card_table
    out_hosts_by_sn: dict[str, list[str]] = {}
    host_order = {h: i for i, h in enumerate(topo.hosts)}
    for h in sorted(out_hosts, key=host_order.__getitem__):
        out_hosts_by_sn.setdefault(inv.hosts[h].supernode, []).append(h)
    cards_left = sorted((c for c in out_cards if host_of(c) not in out_hosts), key=table.index.get_loc)
    out_cards_by_sn: dict[str, list[str]] = {}
    for c in cards_left:
        out_cards_by_sn.setdefault(topo.by_id[c].supernode, []).append(c)
    sn_sizes = table["supernode"].value_counts()
    per_sn = []
    warnings: list[str] = []
    for sn in inv.supernodes:
        n_cards = int(sn_sizes.get(sn.name, 0))
        hosts_out = out_hosts_by_sn.get(sn.name, [])
        cards_out = out_cards_by_sn.get(sn.name, [])
        healthy = n_cards - sum(inv.hosts[h].cards for h in hosts_out) - len(cards_out)
        units = healthy // layout.unit
        per_sn.append(SupernodeCapacity(sn.name, n_cards, healthy, hosts_out, cards_out,
                                        healthy // layout.tp, healthy // layout.ep, units,
                                        healthy - units * layout.unit))
        for size, what in ((layout.tp, "TP"), (layout.ep, "EP")):
            if healthy < size:
                warnings.append(f"{sn.name}: {healthy} healthy cards < {what}={size}: a {what} group "
                                "placed here would have to cross supernodes over scale-out")
    for size, what in ((layout.tp, "TP"), (layout.ep, "EP")):
        if all(s.healthy < size for s in per_sn):
            warnings.append(f"{what}={size} is larger than every supernode's healthy cards: the layout "
                            f"forces {what} groups across supernodes")

    needed = layout.world // layout.unit
    available = sum(s.units for s in per_sn)
    fits = available >= needed
    max_dp = _max_dp(layout, available)
    healthy_total = sum(s.healthy for s in per_sn)
    if not fits:
        warnings.append(
            f"{layout} does not fit: it needs {needed} groups of {layout.unit} cards inside one supernode "
            f"(lcm of TP and EP), the healthy cards ({healthy_total}) hold {available}; "
            f"the largest DP that fits is {max_dp}")
    return CapacityReport(layout, per_sn, len(topo.cards), healthy_total, needed, available, fits,
                          max_dp, warnings, ignored, taken)


def _max_dp(layout: ParallelLayout, units_available: int) -> int:
    per_dp = layout.tp * layout.pp  # cards per unit of DP
    dp = units_available * layout.unit // per_dp
    while dp > 0:
        if (layout.tp * dp) % layout.ep == 0 and layout.tp * layout.pp * dp <= units_available * layout.unit:
            return dp
        dp -= 1
    return 0
