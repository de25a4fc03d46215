"""What a playbook's layers will measure, known before they run: each layer's plan as the
card pairs and all-to-all groups it measures (sncheck.fabric.Measured), with the largest
message each carries. The run refuses a fault that none of them can show
(:func:`unmeasured`): the mock would act it out and no row would ever say so.

connectivity: every planned pair, bandwidth at ``bw_bytes``; stress: the ring edges of
each all-reduce and every pair of each all-to-all, at the sweep's largest size; golden: the
ring edges of each replica's gradient all-reduce (large messages).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from sncheck.config.faultplan import FAULT_TYPES, Fault
from sncheck.fabric import Measured
from sncheck.health.explain import MIN_PARTNERS
from sncheck.model import LINK_SEP, parse_switch, rail_of, split_link
from sncheck.vendors import registry
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Group, Pairs, StressPlan
from sncheck.topology import SCALE_OUT, Topology


def _positions(topo: Topology, cards: list[str]) -> np.ndarray:
    """Each card's position in topology order: one hashed look-up over all of them (a
    fleet's stress plan names 118,784 group members at 16,384 cards); a name the table
    does not spell so (a NIC's card) goes through the fabric's look-up, KeyError if none."""
    pos = topo.card_table.index.get_indexer(cards).astype(np.int64)
    for i in np.flatnonzero(pos < 0):
        pos[i] = topo.fabric.card_position(cards[i])
    return pos


def _members(topo: Topology, groups: tuple[Group, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Every group's member positions, concatenated, and each group's size."""
    sizes = np.array([len(g.members) for g in groups], np.int64)
    return _positions(topo, [c for g in groups for c in g.members]), sizes


def _rings(pos: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ring edges (member i -> member i+1, the last -> the first) of each group of 2 or
    more (``pos``, ``sizes``: :func:`_members`)."""
    starts = np.cumsum(sizes) - sizes
    nxt = np.arange(len(pos)) + 1
    ends = sizes > 0
    nxt[(starts + sizes - 1)[ends]] = starts[ends]
    ring = np.repeat(sizes >= 2, sizes)
    return pos[ring], pos[nxt[ring]]


def measured(topo: Topology, plan: ConnectivityPlan | StressPlan | GoldenPlan) -> Measured:
    """The pairs and groups one layer's plan measures."""
    if isinstance(plan, ConnectivityPlan):
        a, b = [], []
        for rnd in plan.rounds:
            if isinstance(rnd.pairs, Pairs) and rnd.pairs.cards is topo.card_ids:
                a.append(rnd.pairs.a)
                b.append(rnd.pairs.b)
            elif len(rnd.pairs):
                a.append(_positions(topo, [p[0] for p in rnd.pairs]))
                b.append(_positions(topo, [p[1] for p in rnd.pairs]))
        empty = np.zeros(0, np.int64)
        return Measured(np.concatenate(a) if a else empty, np.concatenate(b) if b else empty,
                        size=float(plan.bw_bytes))
    pos, sizes = _members(topo, plan.groups)   # (the stress plan's: every card of a fleet 7 times over)
    if isinstance(plan, StressPlan):
        ring = _rings(pos, sizes) if "all_reduce" in plan.collectives else (np.zeros(0, np.int64),) * 2
        groups: tuple[np.ndarray, ...] = ()
        if "all_to_all" in plan.collectives:
            groups = tuple(np.split(pos, np.cumsum(sizes)[:-1]))
        return Measured(ring[0], ring[1], groups, size=float(max(plan.sizes)))
    return Measured(*_rings(pos, sizes))


def unlisted(faults: Iterable[Fault], topo: Topology) -> frozenset[str]:
    """The hosts whose NIC listing (their platform's scale-out ``nic_tool``: ibstat) is not
    read at the run's first look: a ``missing_tool`` fault (not late) names it, or the
    inventory switches its check off. A NIC port down there (``ib_port_down``) shows in its
    pairs' measurements alone, as a slow NIC does."""
    faults = tuple(faults)
    out = set()
    for f in faults:
        if f.type != "ib_port_down":
            continue
        so = registry.vendor_of(topo.inventory.platform_of(f.host)).scale_out
        if so is None:
            continue
        if topo.inventory.checks_of(f.host).get(so.nic_tool) is False or any(
                g.type == "missing_tool" and g.host == f.host and g.tool == so.nic_tool and not g.late for g in faults):
            out.add(f.host)
    return frozenset(out)


def unmeasured(fault: Fault, topo: Topology, plans: list[Measured], unread: frozenset[str] = frozenset()) -> str | None:
    """Why no measurement of ``plans`` (the run's layers, ``sncheck.layers.coverage``) can
    show ``fault``, or None. Judged for the faults the mock acts out on the network between
    cards (links, NICs, switches, switch ports) through the fabric's paths, and a NIC port
    down on a host in ``unread`` (:func:`unlisted`: its facts do not show it); a card fault
    shows on every layer, a host's tool fault in its facts
    (:func:`sncheck.vendors.sim.cannot_act_out`)."""
    ftype = FAULT_TYPES[fault.type]
    nic_down = fault.type == "ib_port_down" and fault.host in unread
    if (ftype.acted != "network" and not nic_down) or fault.type == "down_host":
        return None
    fabric = topo.fabric
    element = f"{fault.target}/nic{(fault.port or 1) - 1}" if fault.type == "slow_nic" or nic_down else fault.target
    through = [m for m in plans if fabric.crosses(element, m)]
    if any(fault.above is None or m.size > fault.above for m in through):
        nic = element if fault.type == "slow_nic" or nic_down else _host_end(element, topo)
        return _alone(nic, topo, through) if nic is not None else None
    if ftype.target != "link" and len(topo.supernode_names) < 2:
        return (f"inventory {topo.inventory.name} has one supernode, so no pair crosses the scale-out tier: no "
                f"measurement goes through a NIC, a switch or a switch port")
    if through:
        return (f"no planned measurement through it moves a message over {fault.above} bytes "
                f"(the largest: {max(m.size for m in through):.0f})")
    if ftype.target == "link":
        a, b = split_link(fault.target)
        if topo.tier(a, b) == SCALE_OUT and rail_of(a) != rail_of(b):
            return (f"the plan never measures this pair: across supernodes it pairs card k with card k of "
                    f"other hosts (rail-aligned), and {a} and {b} are on rails {rail_of(a)} and {rail_of(b)}")
        return "the plan never measures this pair"
    return "no planned pair goes through it"


def _host_end(element: str, topo: Topology) -> str | None:
    """The NIC cabled to a switch port (``switch_port_down`` at a host port: its NIC's pairs
    fail, as a NIC port down), or None (a link, a switch, an uplink port)."""
    parsed = parse_switch(element)
    if parsed is None or parsed[2] is None:
        return None
    nic = topo.fabric.cable_at(element).partition(LINK_SEP)[0]
    return nic if parse_switch(nic) is None else None


def _alone(nic: str, topo: Topology, plans: list[Measured]) -> str | None:
    """Why a NIC's own fault cannot be told from a pair's path, or None: it is measured
    beside fewer than MIN_PARTNERS cards of other supernodes (hgx-pair: two hosts, card k
    meets card k of the other host alone, in every layer), and the explanation names a
    NIC only where it shows with two partners at least; with one, the NIC, the partner's
    NIC and the link between them explain the same measurements."""
    fabric = topo.fabric
    x = fabric.card_position(nic)
    seen: set[int] = set()
    for m in plans:
        out = fabric.card_sn[m.a] != fabric.card_sn[m.b]
        seen.update(m.b[out & (m.a == x)].tolist() + m.a[out & (m.b == x)].tolist())
        for g in m.groups:
            if x in g:
                seen.update(g[fabric.card_sn[g] != fabric.card_sn[x]].tolist())
    if len(seen) >= MIN_PARTNERS:
        return None
    partner = ", ".join(topo.card_ids[i] for i in sorted(seen))
    return (f"{nic} is measured beside one card of another supernode only ({partner}): its fault and that "
            f"pair's link (or the partner's NIC) explain the same measurements, and no measurement tells them apart")
