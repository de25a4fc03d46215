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


# -- scoped re-validation (--targets) ------------------------------------------------

def target_cards(topo: Topology, targets: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The cards ``targets`` names: cards as they are, hosts as all their cards, supernodes
    as all theirs; each target may be a hostlist expression (``node[003-004]``, and
    ``node[003-004]/gpu2`` for that card of each host), several separated by commas."""
    from . import hostlist
    from .errors import ConfigError

    inv = topo.inventory
    cards: set[str] = set()
    names: list[str] = []
    for expr in targets:
        for part in _split_top(expr):
            host_expr, sep, card = part.partition("/")  # node[003-004]/gpu2: that card of each host
            try:
                hosts = hostlist.expand(host_expr)
            except ValueError as e:
                raise ConfigError(f"--targets: {e}") from e
            names += [f"{h}/{card}" if sep else h for h in hosts]
    for name in names:
        if name in topo.by_id:
            cards.add(name)
        elif name in inv.hosts:
            cards.update(topo.cards_of_host(name))
        elif name in topo.supernode_names:
            cards.update(topo.cards_of_supernode(name))
        else:
            raise ConfigError(f"--targets: {name!r} is not a card, host or supernode of inventory "
                              f"{inv.name}; cards are named <host>/gpu<index>, e.g. node003/gpu2")
    if not cards:
        raise ConfigError("--targets names no card")
    return frozenset(cards)


def _split_top(expr: str) -> list[str]:
    """Split at commas outside brackets: ``node[1,3]/gpu0,node7`` -> two parts."""
    parts, depth, cur = [], 0, ""
    for ch in expr:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in [*parts, cur] if p.strip()]


def scope_connectivity(plan: ConnectivityPlan, cards: frozenset[str]) -> ConnectivityPlan:
    """Only the pairs that touch ``cards`` (their partners are the known-good peers), in
    the full plan's rounds (empty rounds dropped), and host facts of their hosts only."""
    from dataclasses import replace

    rounds = []
    for rnd in plan.rounds:
        pairs = tuple(p for p in rnd.pairs if p[0] in cards or p[1] in cards)
        if pairs:
            rounds.append(Round(len(rounds), rnd.phase, pairs))
    hosts = tuple(h for h in plan.hosts if any(c.rsplit("/", 1)[0] == h for c in cards))
    return replace(plan, rounds=tuple(rounds), hosts=hosts)


def scope_groups(groups: tuple[Group, ...], cards: frozenset[str]) -> tuple[Group, ...]:
    """Only the groups with a target card among their members (their other members are its peers)."""
    return tuple(g for g in groups if any(m in cards for m in g.members))
