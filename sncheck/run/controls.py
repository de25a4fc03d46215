"""Who a retest measures a suspect against: known-good controls on the symptom's tier, and
the sample of a domain re-measured as a whole (:mod:`sncheck.run.confirm`)."""

from __future__ import annotations

from collections.abc import Set

from sncheck.model import host_of, rail_of
from sncheck.topology import Topology

PEERS = 5
DOMAIN_SAMPLE = 18  # cards of a supernode re-measured together (one per host)


def peers_for(suspects: list[str], topo: Topology, avoid: set[str], tier: str = "scale_up",
           n: int = PEERS) -> list[str]:
    """Known-good controls on the symptom's tier, so that every pair of the retest is of
    that tier: host mates (intra-host); one card on each other host of the supernode
    (scale-up); cards on the suspect's rails in other supernodes, one per supernode
    first (scale-out: a NIC's pairs)."""
    sns = {topo.by_id[c].supernode for c in suspects}
    hosts = {host_of(c) for c in suspects}

    def good(c: str) -> bool:
        return c not in suspects and c not in avoid and host_of(c) not in avoid

    if tier == "scale_out":  # each end's rail, in the other domains (a link's ends may be in two)
        ends = {(topo.by_id[c].supernode, rail_of(c)) for c in suspects}
        far = [c.id for c in topo.cards if good(c.id)
               and any(c.supernode != sn and rail_of(c.id) == rail for sn, rail in ends)]
        # one per other domain (and leaf) first: controls behind one other leaf would share
        # every measured path with the suspect's, and neither leaf could be told apart
        fabric = topo.fabric
        far = _interleave(far, lambda c: (fabric.leaf_of(c), topo.by_id[c].supernode))
        # and two on the same rails at home, so the controls have scale-out pairs of their own
        home = [c.id for c in topo.cards if good(c.id) and host_of(c.id) not in hosts
                and (c.supernode, rail_of(c.id)) in ends]
        return _spread_over(far, lambda c: (topo.by_id[c].supernode, host_of(c)), n - 2) + \
            _spread_over(home, host_of, 2)
    if tier == "intra_host":
        return [c for h in sorted(hosts) for c in topo.cards_of_host(h) if good(c)][:n]
    near = [c for sn in sorted(sns) for c in topo.cards_of_supernode(sn) if host_of(c) not in hosts and good(c)]
    # the suspect's card index first: the same position on each host
    index = {rail_of(c) for c in suspects}
    near.sort(key=lambda c: rail_of(c) not in index)
    return _spread_over(near, host_of, n)


def _interleave(cards: list[str], key) -> list[str]:
    """``cards`` taken in turns from each ``key`` group (in the order the groups first
    appear): the first of each group, then the second of each, ..."""
    groups: dict[object, list[str]] = {}
    for c in cards:
        groups.setdefault(key(c), []).append(c)
    lists = list(groups.values())
    return [g[i] for i in range(max(map(len, lists), default=0)) for g in lists if i < len(g)]


def _spread_over(cards: list[str], key, n: int) -> list[str]:
    """Up to ``n`` cards, one per ``key`` (host or supernode) while there are enough."""
    first, seen = [], set()
    for c in cards:
        if key(c) not in seen:
            seen.add(key(c))
            first.append(c)
    return first[:n]


def domain_sample(topo: Topology, sn: str, tier: str, avoid: Set[str] = frozenset()) -> list[str]:
    """A domain's cards to re-measure it by: across hosts (scale-up), one card per host,
    rotating the card index so every host and index is crossed; within hosts
    (intra-host), every card of its first two hosts."""
    hosts = [h for h in topo.hosts_of_supernode(sn) if h not in avoid]
    if tier == "intra_host" or len(hosts) < 2:
        return [c for h in hosts[:2] for c in topo.cards_of_host(h) if c not in avoid]
    out = []
    for i, h in enumerate(hosts[:DOMAIN_SAMPLE]):
        cards = [c for c in topo.cards_of_host(h) if c not in avoid]
        if cards:
            out.append(cards[i % len(cards)])
    return out


def switch_sample(topo: Topology, cards: list[str]) -> list[str]:
    """A switch's cards to re-measure it by: one per host, taken in turns from each domain
    (pairs between domains are the scale-out pairs that cross it), at most DOMAIN_SAMPLE."""
    one_per_host = _spread_over(cards, host_of, len(cards))
    return _interleave(one_per_host, lambda c: topo.by_id[c].supernode)[:DOMAIN_SAMPLE]
