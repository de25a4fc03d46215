"""Which probes run on which pairs and groups, in which rounds.

The plan is pure data derived from the topology; backends execute it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar, cast
from weakref import WeakKeyDictionary

import numpy as np

from sncheck.config.playbook import CROSS_MODES
from sncheck.topology import SCALE_OUT, SCALE_UP, Topology, rail_pairs_per_offset, rail_round_positions, round_robin_positions
from sncheck.model import LINK_SEP, card_of, host_of, is_cable, is_switch, is_uplink, parse_switch, rail_of, split_link
from sncheck.topology import link_id
from sncheck.config import hostlist
from sncheck.errors import ConfigError
from dataclasses import replace

COLLECTIVES = ("all_reduce", "all_to_all")
T = TypeVar("T")
# Groups derived from a topology, per topology (weakly: dropped with it); see _per_topology.
_DERIVED: WeakKeyDictionary[Topology, dict[tuple, object]] = WeakKeyDictionary()
# The connectivity option tools_coverage (config/playbook.py) when a playbook gives none.
DEFAULT_TOOLS_COVERAGE = 2


def size_sweep(min_bytes: int = 8, max_bytes: int = 1 << 30, factor: int = 2) -> tuple[int, ...]:
    if factor < 2 or min_bytes < 1:  # the playbook refuses these; a sweep must grow to end
        raise ValueError(f"size sweep needs min_bytes >= 1 and factor >= 2, got {min_bytes}, {factor}")
    sizes, s = [], min_bytes
    while s <= max_bytes:
        sizes.append(s)
        s *= factor
    return tuple(sizes)


class Pairs(Sequence):
    """A round's card pairs as two position arrays into ``cards`` (``topo.card_ids``).

    A fleet's plan has millions of pairs: arrays keep it small, and the mock simulates
    them without building strings. It reads like a tuple of ``(src, dst)`` tuples.
    """

    __slots__ = ("cards", "a", "b")

    def __init__(self, cards: tuple[str, ...], a: np.ndarray, b: np.ndarray) -> None:
        self.cards, self.a, self.b = cards, a, b

    def __len__(self) -> int:
        return len(self.a)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self)[i]
        return self.cards[self.a[i]], self.cards[self.b[i]]

    def __iter__(self):
        cards = self.cards
        return ((cards[x], cards[y]) for x, y in zip(self.a.tolist(), self.b.tolist()))

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Pairs({len(self)} pairs)"


@dataclass(frozen=True)
class Round:
    index: int
    phase: str  # "scale_up" (inside each domain, all domains at once) or "scale_out"
    pairs: Sequence[tuple[str, str]]  # a tuple of (src, dst), or Pairs

    def to_dict(self) -> dict:
        return {"index": self.index, "phase": self.phase, "pairs": [list(p) for p in self.pairs]}


@dataclass(frozen=True)
class ConnectivityPlan:
    rounds: tuple[Round, ...]
    hosts: tuple[str, ...]
    bw_bytes: int = 64 << 20      # large message for bandwidth
    lat_bytes: int = 8            # small message for latency
    lat_iters: int = 50           # ping-pongs; the median is reported
    bw_iters: int = 5
    cross_supernode: str = "bounded"  # or "all-pairs" (acceptance after delivery)
    cross_offsets: int | None = None  # host offsets per supernode pair (None: all of them)
    tools: tuple[str, ...] = ()   # scale-out tools to run as well (backends that reach real NICs)
    tools_coverage: int | str = DEFAULT_TOOLS_COVERAGE  # perftest peers per NIC, or "all" (perftest_schedule)

    @property
    def pair_count(self) -> int:
        return sum(len(r.pairs) for r in self.rounds)

    @cached_property
    def perftest(self) -> PerftestSchedule:
        """The rail pairs perftest runs at this plan's ``tools_coverage``; computed once,
        read by the connectivity layer (its summary) and the backend (its runs)."""
        return perftest_schedule(self)

    def to_dict(self) -> dict:
        """The plan as JSON-able data (a job file for the hosts)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {**d, "rounds": [r.to_dict() for r in self.rounds], "hosts": list(self.hosts)}

    def summary(self) -> dict:
        """Rounds and pairs, per phase, as results.json and the report state them."""
        out: dict = {"pairs": self.pair_count, "rounds": len(self.rounds)}
        for phase in (SCALE_UP, SCALE_OUT):
            mine = [r for r in self.rounds if r.phase == phase]
            out[f"{phase}_rounds"] = len(mine)
            out[f"{phase}_pairs"] = sum(len(r.pairs) for r in mine)
        out["cross_supernode"] = self.cross_supernode
        # host offsets per supernode pair: each card meets about this many hosts of
        # every other supernode (None: all of them)
        out["cross_offsets"] = self.cross_offsets
        if out[f"{SCALE_OUT}_pairs"]:
            met = "every host" if self.cross_offsets is None else f"{self.cross_offsets} hosts"
            out["cross_plan"] = f"each card meets its rail on {met} of every other supernode"
        return out


@dataclass(frozen=True)
class RailPair:
    """One perftest run: the server on ``server``, the client on ``client``, both on NIC
    ``rail`` (card k's rail); ``link`` is the rail-aligned card pair it stands for."""
    round: int
    client: str
    server: str
    rail: int

    @property
    def link(self) -> str:
        return link_id(f"{self.client}/gpu{self.rail}", f"{self.server}/gpu{self.rail}")


def rail_pair_rounds(plan: ConnectivityPlan) -> list[list[RailPair]]:
    """The plan's cross-supernode rounds as rail-aligned host pairs: the bounded (or
    all-pairs) schedule the torch probe runs, and scoped to ``--targets`` the same way.
    In a round a host is one end of at most one pair per rail, so a round's pairs run at
    once without two tests sharing a NIC."""
    return perftest_schedule(plan, "all").rounds


@dataclass(frozen=True)
class PerftestSchedule:
    """The rail pairs perftest runs: ``rounds`` sampled from the plan's ``plan_pairs``
    rail pairs in ``plan_rounds`` rounds so that every NIC meets ``coverage`` distinct
    peers (fewer where the plan has fewer), or all of them (``coverage`` "all")."""
    rounds: list[list[RailPair]]
    plan_pairs: int
    plan_rounds: int
    coverage: int | str
    nics: int          # NICs (host x rail) in the plan's rail pairs
    min_peers: int     # the fewest distinct peers a NIC meets in the schedule (0: no NICs)

    @property
    def pairs(self) -> int:
        return sum(len(r) for r in self.rounds)

    def summary(self) -> dict:
        """What results.json's connectivity summary says of perftest."""
        return {"pairs": self.pairs, "plan_pairs": self.plan_pairs, "rounds": len(self.rounds),
                "plan_rounds": self.plan_rounds, "coverage": self.coverage, "nics": self.nics,
                "min_peers": self.min_peers}

    def describe(self) -> str:
        """One line for the report's connectivity summary."""
        return (f"{self.pairs} of {self.plan_pairs} rail pairs ({len(self.rounds)} of {self.plan_rounds} rounds), "
                f"each NIC against at least {self.min_peers} distinct peers (tools_coverage {self.coverage})")


def perftest_schedule(plan: ConnectivityPlan, coverage: int | str | None = None) -> PerftestSchedule:
    """The rail pairs of the plan's cross-supernode rounds that perftest runs.

    ``coverage`` (the plan's ``tools_coverage`` unless given): ``"all"`` keeps every rail
    pair; an int n keeps, in one greedy pass over the rounds in order, each pair that
    gives a NIC (host x rail) still under its target a peer it has not met; the target
    is n distinct peers, or all the NIC's peers in the plan where it has fewer. Every
    NIC of the plan reaches its target (a pair it missed would have been kept), each
    kept pair adds at least one peer, so at most n x NICs pairs run. Rounds left with
    no pair are dropped; a kept round's pairs still share no NIC. Deterministic.
    """
    coverage = plan.tools_coverage if coverage is None else coverage
    names, arrays = _rail_arrays(plan)
    n = len(names)
    deg = _distinct_peers(n, arrays)
    if coverage == "all":
        kept, count = arrays, deg
    else:
        target = np.minimum(deg, int(coverage))
        count = np.zeros(n, np.int64)
        peers = np.full((n, max(1, int(coverage))), -1, np.int64)
        kept = []
        for i, a, b in arrays:
            ends = np.sort(np.concatenate([a, b]))
            if (ends[1:] != ends[:-1]).all():  # no NIC twice in the round: all at once
                new_a = (count[a] < target[a]) & ~(peers[a] == b[:, None]).any(axis=1)
                new_b = (count[b] < target[b]) & ~(peers[b] == a[:, None]).any(axis=1)
                for side, others, new in ((a, b, new_a), (b, a, new_b)):
                    peers[side[new], count[side[new]]] = others[new]
                    count[side[new]] += 1
                keep = new_a | new_b
            else:  # a hand-made round with a NIC twice: one pair after the other
                keep = np.zeros(len(a), bool)
                for j, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
                    for u, v in ((x, y), (y, x)):
                        if count[u] < target[u] and v not in peers[u]:
                            peers[u, count[u]] = v
                            count[u] += 1
                            keep[j] = True
            if keep.any():
                kept.append((i, a[keep], b[keep]))
    rounds = [[RailPair(i, host_of(names[x]), host_of(names[y]), rail_of(names[x]))
               for x, y in zip(a.tolist(), b.tolist())] for i, a, b in kept]
    used = deg > 0
    out = PerftestSchedule(rounds, sum(len(a) for _, a, _ in arrays), len(arrays), coverage, int(used.sum()),
                           int(count[used].min()) if used.any() else 0)
    return out


def _rail_arrays(plan: ConnectivityPlan) -> tuple[Sequence[str], list[tuple[int, np.ndarray, np.ndarray]]]:
    """The cross-supernode rounds' rail-aligned pairs of different hosts, as (round
    index, card positions a, b) into one list of card names. A plan's rounds are Pairs
    over the same cards (positions as they are); hand-made rounds are mapped."""
    out = [r for r in plan.rounds if r.phase == SCALE_OUT]
    positional = [(r.index, r.pairs) for r in out if isinstance(r.pairs, Pairs)]
    cards = positional[0][1].cards if positional else None
    if cards is not None and len(positional) == len(out) and all(p.cards is cards for _, p in positional):
        names: Sequence[str] = cards
        raw = [(i, p.a, p.b) for i, p in positional]
    else:
        index: dict[str, int] = {}
        raw = []
        for r in out:
            ab = [[index.setdefault(c, len(index)) for c in pair] for pair in r.pairs]
            arr = np.array(ab, np.int64).reshape(-1, 2)
            raw.append((r.index, arr[:, 0], arr[:, 1]))
        names = list(index)
    split = [c.rsplit("/", 1) for c in names]
    hosts: dict[str, int] = {}
    suffixes: dict[str, int] = {}
    host = np.array([hosts.setdefault(h, len(hosts)) for h, _ in split], np.int64)
    suffix = np.array([suffixes.setdefault(s, len(suffixes)) for _, s in split], np.int64)
    arrays = []
    for i, a, b in raw:
        keep = (suffix[a] == suffix[b]) & (host[a] != host[b]) if len(a) else np.zeros(0, bool)
        if keep.any():
            arrays.append((i, np.asarray(a)[keep], np.asarray(b)[keep]))
    return names, arrays


def _distinct_peers(n: int, arrays: list[tuple[int, np.ndarray, np.ndarray]]) -> np.ndarray:
    """How many distinct peers each card position meets over all the rail pairs."""
    if not arrays:
        return np.zeros(n, np.int64)
    a = np.concatenate([x for _, x, _ in arrays])
    b = np.concatenate([y for _, _, y in arrays])
    codes = np.sort(np.concatenate([a * n + b, b * n + a]))  # sorting: np.unique's hashing is slower here
    codes = codes[np.concatenate([[True], codes[1:] != codes[:-1]])]
    return np.bincount(codes // n, minlength=n)


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


def _per_topology(topo: Topology, key: tuple, build: Callable[[], T]) -> T:
    """What ``build`` derives from ``topo`` alone (frozen groups), made once per topology and
    kept as long as it lives: a run asks for the stress groups three times (the faults'
    check, the layer, the retests) and the golden groups twice. Only small things are kept
    so: the connectivity plan's pair arrays (64 MB at 16,384 cards) are built again rather
    than held through judging, where the run's memory peaks."""
    memo = _DERIVED.setdefault(topo, {})
    if key not in memo:
        memo[key] = build()
    return cast(T, memo[key])


def connectivity_plan(topo: Topology, cross_supernode: str = "bounded", **opts) -> ConnectivityPlan:
    """Every pair inside each scale-up domain (domains at once, n-1 rounds), then
    rail-aligned pairs across supernodes.

    Across supernodes, ``all-pairs`` pairs card k of every host with card k of every host
    of every other supernode (acceptance: quadratic in hosts). ``bounded`` (the default)
    takes as many host offsets per supernode pair as keep the cross-supernode pairs
    within the scale-up pairs, and at least one: every NIC of every host meets hosts in
    every other supernode, and pairs and rounds grow linearly with the hosts. A small
    cluster is covered in full either way.
    """
    if cross_supernode not in CROSS_MODES:
        raise ValueError(f"cross_supernode must be one of {', '.join(CROSS_MODES)}, got {cross_supernode!r}")
    ids = topo.card_ids
    domains = [topo.supernode_positions(sn) for sn in topo.supernode_names]
    schedules = {n: round_robin_positions(n) for n in {len(d) for d in domains}}
    # Consecutive domains of one size take each round's pairs at once (their first
    # positions as a column), in domain order: 512 domains x 255 rounds at 131,072 cards.
    runs: list[tuple[int, list[int]]] = []
    for d in domains:
        if runs and runs[-1][0] == len(d):
            runs[-1][1].append(d.start)
        else:
            runs.append((len(d), [d.start]))
    starts = [(n, np.array(s, np.int64)[:, None]) for n, s in runs]
    rounds: list[Round] = []
    for r in range(max((len(schedules[len(d)][0]) for d in domains), default=0)):
        parts_a, parts_b = [], []
        for n, first in starts:
            pos_a, pos_b = schedules[n]
            if r < len(pos_a):
                keep = (pos_a[r] >= 0) & (pos_b[r] >= 0)  # not the bye
                parts_a.append((pos_a[r][keep] + first).ravel())
                parts_b.append((pos_b[r][keep] + first).ravel())
        rounds.append(Round(len(rounds), "scale_up", Pairs(ids, np.concatenate(parts_a), np.concatenate(parts_b))))
    offsets = None
    if cross_supernode == "bounded" and len(topo.supernode_names) > 1:
        scale_up_pairs = sum(len(r.pairs) for r in rounds)
        offsets = max(1, scale_up_pairs // max(1, rail_pairs_per_offset(topo)))
        if offsets >= max(len(sn.hosts) for sn in topo.inventory.supernodes):
            offsets = None  # small enough to cover in full
    for a, b in rail_round_positions(topo, offsets):
        rounds.append(Round(len(rounds), SCALE_OUT, Pairs(ids, a, b)))
    return ConnectivityPlan(rounds=tuple(rounds), hosts=tuple(topo.hosts), cross_supernode=cross_supernode,
                            cross_offsets=offsets, **opts)


def stress_groups(topo: Topology) -> tuple[Group, ...]:
    """:func:`_stress_groups`, once per topology."""
    return _per_topology(topo, ("stress",), lambda: _stress_groups(topo))


def _stress_groups(topo: Topology) -> tuple[Group, ...]:
    """Host groups and rail groups form a grid over each domain.

    A card is the only member shared by its host group and its rail group, so a fault
    seen in one failing host group and one failing rail group narrows to one card.
    Whole domains add the scale-up-wide view, and one cross-supernode group per rail
    (card k of every host, ``cross:gpuK``) the scale-out view of every rail: all of a
    fleet's rails carry a job's scale-out traffic at once, so each rail's NICs, leaves and
    spines are stressed at the collective's sizes (one group over rail 0 alone let a dead
    rail-2 leaf pass a stress-only playbook, reviews19 #2). Rails share no card: the
    campaign runs their groups at once (sncheck.launch.campaign).
    """
    groups: list[Group] = []
    for h in topo.hosts:
        cards = topo.cards_of_host(h)
        if len(cards) >= 2:
            groups.append(Group(f"host:{h}", "host", tuple(cards)))
    by_supernode: dict[str, list[str]] = {}  # each supernode's hosts in topo.hosts order, in one pass
    for h in topo.hosts:
        by_supernode.setdefault(topo.supernode_of_host(h), []).append(h)
    for sn in topo.supernode_names:
        hosts = by_supernode.get(sn, [])
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
        for k in range(max(topo.inventory.hosts[h].cards for h in topo.hosts)):
            members = tuple(f"{h}/gpu{k}" for h in topo.hosts if topo.inventory.hosts[h].cards > k)
            if len({topo.supernode_of_host(host_of(c)) for c in members}) >= 2:
                groups.append(Group(f"cross:gpu{k}", "cross", members))
    return tuple(groups)


def golden_groups(topo: Topology) -> tuple[Group, ...]:
    """Data-parallel golden runs: one per host (its cards); a single-host cluster runs once."""
    return _per_topology(topo, ("golden",), lambda: _golden_groups(topo))


def _golden_groups(topo: Topology) -> tuple[Group, ...]:
    return tuple(Group(f"host:{h}", "host", tuple(topo.cards_of_host(h))) for h in topo.hosts)


def solo_groups(cards: list[str]) -> tuple[Group, ...]:
    """One-card runs used to narrow a failing group down to its card."""
    return tuple(Group(f"card:{c}", "card", (c,)) for c in cards)


# -- scoped re-validation (--targets) ------------------------------------------------

def target_cards(topo: Topology, targets: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The cards ``targets`` names: cards as they are, hosts as all their cards, supernodes
    as all theirs; each target may be a hostlist expression (``node[003-004]``, and
    ``node[003-004]/gpu2`` for that card of each host), several separated by commas. A NIC
    (``node003/nic2``) names its card, a link both its cards, and a switch or a cable of the
    fabric the cards of the NICs whose paths cross it (:func:`target_fabric`): every pair that
    touches them is measured again (reviews20 #12, #14: a repaired NIC, leaf or cable could not
    be validated by a scoped run, so its quarantine stayed for good or was released unmeasured)."""

    inv = topo.inventory
    cards: set[str] = set()
    names: list[str] = []
    for expr in targets:
        for part in _split_top(expr):
            if (on := _fabric_cards(topo, part)) is not None:
                cards.update(on)
                continue
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
        elif card_of(name) != name and card_of(name) in topo.by_id:  # a NIC: the card of its rail
            cards.add(card_of(name))
        else:
            raise ConfigError(f"--targets: {name!r} is not a card, host or supernode of inventory "
                              f"{inv.name}, nor a NIC of it; cards are named <host>/gpu<index>, e.g. node003/gpu2, NICs "
                              "<host>/nic<rail>, links <card><-><card>, switches leaf:<name> or spine:<name>")
    if not cards:
        raise ConfigError("--targets names no card")
    return frozenset(cards)


def target_fabric(targets: tuple[str, ...] | list[str]) -> list[str]:
    """The switches and cables ``targets`` names (what a scoped run measured whole: every pair
    through them), in the order given."""
    return list(dict.fromkeys(part for expr in targets for part in _split_top(expr)
                              if LINK_SEP in part or parse_switch(part) is not None))


def _fabric_cards(topo: Topology, name: str) -> list[str] | None:
    """The cards a link, switch or cable target names (None: it names none of these)."""
    if LINK_SEP not in name and parse_switch(name) is None:
        return None
    if not topo.is_entity(name) or parse_switch(name) is not None and not is_switch(name):
        raise ConfigError(f"--targets: {name!r} is not a link, switch or cable of inventory {topo.inventory.name}; "
                          "links are named <card><-><card>, switches leaf:<name> or spine:<name>, cables "
                          "<host>/nic<rail><->leaf:<name>[<port>]")
    if LINK_SEP in name and not is_cable(name):
        return list(split_link(name))
    if LINK_SEP in name and not is_uplink(name):  # a NIC's cable to its leaf: the NIC's card
        return [card_of(next(p for p in split_link(name) if parse_switch(p) is None))]
    return [card_of(n) for n in topo.fabric.nics_of(name)]


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
    the full plan's rounds (empty rounds dropped), and host facts of their hosts only;
    perftest runs every scoped rail pair (``tools_coverage`` "all")."""

    rounds: list[Round] = []
    where: dict[int, np.ndarray] = {}  # id(cards) -> positions of the targets
    for rnd in plan.rounds:
        if isinstance(rnd.pairs, Pairs):  # positions: a fleet-size plan, filtered at once
            if id(rnd.pairs.cards) not in where:
                index = {c: i for i, c in enumerate(rnd.pairs.cards)}
                where[id(rnd.pairs.cards)] = np.fromiter((index[c] for c in cards if c in index), np.int64)
            targets = where[id(rnd.pairs.cards)]
            keep = np.isin(rnd.pairs.a, targets) | np.isin(rnd.pairs.b, targets)
            pairs: Sequence[tuple[str, str]] = Pairs(rnd.pairs.cards, rnd.pairs.a[keep], rnd.pairs.b[keep])
        else:
            pairs = tuple(p for p in rnd.pairs if p[0] in cards or p[1] in cards)
        if len(pairs):
            rounds.append(Round(len(rounds), rnd.phase, pairs))
    hosts = tuple(h for h in plan.hosts if any(host_of(c) == h for c in cards))
    # the scoped pairs are few: perftest runs all of them (tools_coverage "all")
    return replace(plan, rounds=tuple(rounds), hosts=hosts, tools_coverage="all")


WITHOUT = "~"  # a group run again without cards: "<group id>~<card>+<card>" (its members: the group's less those)


def without(group: Group, gone: Set[str]) -> Group:
    """``group`` once more without the cards ``gone`` (an earlier layer's culprits): its id says which."""
    return Group(f"{group.id}{WITHOUT}{'+'.join(sorted(gone))}", group.kind,
                 tuple(c for c in group.members if c not in gone))


def scope_groups(groups: tuple[Group, ...], cards: frozenset[str]) -> tuple[Group, ...]:
    """Only the groups with a target card among their members (their other members are its peers)."""
    return tuple(g for g in groups if any(m in cards for m in g.members))
