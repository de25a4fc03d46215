"""Which probes run on which pairs and groups, in which rounds.

The plan is pure data derived from the topology; backends execute it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .topology import SCALE_OUT, Topology, rail_rounds, round_robin

COLLECTIVES = ("all_reduce", "all_to_all")


def size_sweep(min_bytes: int = 8, max_bytes: int = 1 << 30, factor: int = 2) -> tuple[int, ...]:
    if factor < 2 or min_bytes < 1:  # the playbook refuses these; a sweep must grow to end
        raise ValueError(f"size sweep needs min_bytes >= 1 and factor >= 2, got {min_bytes}, {factor}")
    sizes, s = [], min_bytes
    while s <= max_bytes:
        sizes.append(s)
        s *= factor
    return tuple(sizes)


@dataclass(frozen=True)
class Round:
    index: int
    phase: str  # "scale_up" (inside each domain, all domains at once) or "scale_out"
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ConnectivityPlan:
    rounds: tuple[Round, ...]
    hosts: tuple[str, ...]
    bw_bytes: int = 64 << 20      # large message for bandwidth
    lat_bytes: int = 8            # small message for latency
    lat_iters: int = 50           # ping-pongs; the median is reported
    bw_iters: int = 5

    @property
    def pair_count(self) -> int:
        return sum(len(r.pairs) for r in self.rounds)


@dataclass(frozen=True)
class Group:
    id: str
    kind: str  # host | rail | domain | cross
    members: tuple[str, ...]


@dataclass(frozen=True)
class StressPlan:
    groups: tuple[Group, ...]
    collectives: tuple[str, ...] = COLLECTIVES
    sizes: tuple[int, ...] = field(default_factory=size_sweep)
    warmup: int = 2
    iters: int = 5
    repeats: int = 1
    duration_s: float | None = None  # soak: repeat the sweep until this many seconds pass


@dataclass(frozen=True)
class GoldenPlan:
    groups: tuple[Group, ...]
    steps: int = 60
    seed: int = 0


def connectivity_plan(topo: Topology, **opts) -> ConnectivityPlan:
    """Every pair inside each scale-up domain (domains at once), then rail-aligned pairs across."""
    per_domain = [round_robin(topo.cards_of_supernode(sn)) for sn in topo.supernode_names]
    rounds: list[Round] = []
    for r in range(max((len(d) for d in per_domain), default=0)):
        pairs = tuple(p for d in per_domain if r < len(d) for p in d[r])
        rounds.append(Round(len(rounds), "scale_up", pairs))
    for pairs in rail_rounds(topo):
        rounds.append(Round(len(rounds), SCALE_OUT, tuple(pairs)))
    return ConnectivityPlan(rounds=tuple(rounds), hosts=tuple(topo.hosts), **opts)


def stress_groups(topo: Topology) -> tuple[Group, ...]:
    """Host groups and rail groups form a grid over each domain.

    A card is the only member shared by its host group and its rail group, so a fault
    seen in one failing host group and one failing rail group narrows to one card.
    Whole domains and one cross-supernode group (rail 0 of every host) add the
    scale-up-wide and scale-out views.
    """
    groups: list[Group] = []
    for h in topo.hosts:
        cards = topo.cards_of_host(h)
        if len(cards) >= 2:
            groups.append(Group(f"host:{h}", "host", tuple(cards)))
    for sn in topo.supernode_names:
        hosts = [h for h in topo.hosts if topo.supernode_of_host(h) == sn]
        rails = max(topo.inventory.hosts[h].cards for h in hosts)
        if len(hosts) >= 2:
            for k in range(rails):
                members = tuple(f"{h}/gpu{k}" for h in hosts if topo.inventory.hosts[h].cards > k)
                if len(members) >= 2:
                    groups.append(Group(f"rail:{sn}:gpu{k}", "rail", members))
        domain = tuple(topo.cards_of_supernode(sn))
        if len(domain) >= 2 and len(hosts) >= 2:
            groups.append(Group(f"domain:{sn}", "domain", domain))
    if len(topo.supernode_names) >= 2:
        groups.append(Group("cross:gpu0", "cross", tuple(f"{h}/gpu0" for h in topo.hosts)))
    return tuple(groups)


def golden_groups(topo: Topology) -> tuple[Group, ...]:
    """Data-parallel golden runs: one per host (its cards); a single-host cluster runs once."""
    return tuple(Group(f"host:{h}", "host", tuple(topo.cards_of_host(h))) for h in topo.hosts)


def solo_groups(cards: list[str]) -> tuple[Group, ...]:
    """One-card runs used to narrow a failing group down to its card."""
    return tuple(Group(f"card:{c}", "card", (c,)) for c in cards)
