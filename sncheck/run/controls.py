"""Who a retest measures a suspect against: known-good controls on the symptom's tier, and
the sample of a domain re-measured as a whole (:mod:`sncheck.run.confirm`)."""

from __future__ import annotations

from collections.abc import Callable, Set

import numpy as np

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
        rails = {rail for _, rail in ends}
        if not far and not home and all(c.id in suspects for c in topo.cards if rail_of(c.id) in rails):
            # every card on its rails is a suspect's (a rail's one leaf holds them all): controls on other rails,
            # whose pairs with each other set the tier's level (r6-19: the rail-1 leaf's retest measured only
            # its own pairs, had no level to judge them by and left it quarantined). Not where a known culprit
            # holds them (avoid): a link behind a slow spine read against other rails' controls was "confirmed"
            # by the spine's slowness (test_unseen_replay, hgx-b200-2su seed 4)
            far = _interleave([c.id for c in topo.cards if good(c.id) and rail_of(c.id) not in rails],
                              lambda c: (fabric.leaf_of(c), topo.by_id[c].supernode))
            return _spread_over(far, lambda c: (topo.by_id[c].supernode, host_of(c)), n)
        return _spread_over(far, lambda c: (topo.by_id[c].supernode, host_of(c)), n - 2) + \
            _spread_over(home, host_of, 2)
    if tier == "intra_host":
        return [c for h in sorted(hosts) for c in topo.cards_of_host(h) if good(c)][:n]
    near = [c for sn in sorted(sns) for c in topo.cards_of_supernode(sn) if host_of(c) not in hosts and good(c)]
    # the suspect's card index first: the same position on each host; one per host first,
    # then more of them in turns: a card's median is judged over min_pairs partners at least
    # (p2p-bandwidth-card-slow: 3), and a domain of three hosts has two others
    index = {rail_of(c) for c in suspects}
    near.sort(key=lambda c: rail_of(c) not in index)
    picked = _interleave(near, host_of)[:n]
    if len({host_of(c) for c in picked}) == 1:  # no pair of the tier among them: a host mate of the
        # suspect beside it against them sets the level its bar reads, and gives each control a
        # second partner (r5-39's faint az1/gpu9 had no level; r5-23's late control one pair)
        picked += [c for h in sorted(hosts) for c in topo.cards_of_host(h) if good(c)][:1]
    return picked


def far(topo: Topology, cards: list[str], peers: list[str]) -> bool:
    """Whether any of ``peers`` is in another supernode than every card of ``cards``: a
    scale-out partner of theirs (the controls at home make only scale-up pairs with them)."""
    sns = {topo.by_id[c].supernode for c in cards}
    return any(topo.by_id[c].supernode not in sns for c in peers)


def fair_mates(suspects: list[tuple[str, str]], known: Set[tuple[str, str]], topo: Topology,
               cards_of: Callable[..., list[str]]) -> dict[str, set[str]]:
    """Per card suspect named apart from its slow domain, both named (entity, kind): the
    domain's cards no other culprit holds, fair controls for it (a pair reads its slower
    end, so they show the card below their level; the domain's level in its retest is the
    domain's symptom, not the card's). Avoided as culprits' cards, they left it no
    known-good peer: demo-2sn's node003/gpu1 at 0.2 in sn0 at 0.5 stayed quarantined."""
    named = list(suspects) + list(known)
    slow = {e for e, k in named if k == "supernode"}
    held = {c for e, k in named if k not in ("supernode", "switch") for c in cards_of(e, topo, k)}
    return {e: set(topo.cards_of_supernode(sn)) - held for e, k in suspects
            if k == "card" and (sn := topo.by_id[e].supernode) in slow}


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


def domain_sample(topo: Topology, sn: str, tier: str, avoid: Set[str] = frozenset(), need: int = 3) -> list[str]:
    """A domain's cards to re-measure it by: across hosts (scale-up), one card per host,
    rotating the card index so every host and index is crossed, in as many rounds as give
    each card ``need`` partners on other hosts; within hosts (intra-host), every card of
    its first two hosts."""
    hosts = [h for h in topo.hosts_of_supernode(sn) if h not in avoid]
    if tier == "intra_host" or len(hosts) < 2:
        return [c for h in hosts[:2] for c in topo.cards_of_host(h) if c not in avoid]
    # rounds of one card per host, until each card has ``need`` partners on other hosts (the
    # domain bar's min_pairs: a three-host domain sampled one card a host gave each card two,
    # its level was never judged and a faint domain was released)
    hosts = hosts[:DOMAIN_SAMPLE]
    rounds = max(1, -(-need // (len(hosts) - 1)))
    out: list[str] = []
    for r in range(rounds):
        for i, h in enumerate(hosts):
            cards = [c for c in topo.cards_of_host(h) if c not in avoid]
            if len(cards) > r and len(out) < DOMAIN_SAMPLE:
                out.append(cards[(i + r) % len(cards)])
    return out


def switch_sample(topo: Topology, switch: str, cards: list[str]) -> list[str]:
    """A switch's cards to re-measure it by (``cards``: those whose NICs it carries), at
    most DOMAIN_SAMPLE, each forming a pair through the switch with one taken before
    (:meth:`Fabric.through`), the one forming most first, a host not yet taken first, then
    in turns from each domain, the card index rotating from host to host. Not merely one
    card per host: those were every host's card 0, on one rail, whose two leaves another
    spine joins, and a slow spine's retest measured nothing through it and released it.
    A leaf whose NICs are all in one domain: one card per host (the controls, behind other
    leaves, make its pairs)."""
    fabric = topo.fabric
    by_host: dict[str, list[str]] = {}
    for c in cards:
        by_host.setdefault(host_of(c), []).append(c)
    rotated = [c for i, mine in enumerate(by_host.values()) for c in mine[i % len(mine):] + mine[:i % len(mine)]]
    order = _interleave(rotated, lambda c: topo.by_id[c].supernode)
    if not order:
        return []
    pos = np.array([fabric.card_position(c) for c in order], np.int64)
    i, j = np.triu_indices(len(order), k=1)
    cross = np.zeros((len(order), len(order)), bool)
    cross[i, j] = cross[j, i] = fabric.through(switch, pos[i], pos[j])
    taken: list[int] = []
    hosts: set[str] = set()
    count = cross.sum(axis=1)  # the first: the card forming most pairs through the switch
    while len(taken) < DOMAIN_SAMPLE:
        if taken:
            count = cross[taken].sum(axis=0)
        free = [k for k in range(len(order)) if k not in taken and count[k] > 0]
        if not free:
            break
        # a new host first (np.argmax-like: the earliest in order on a tie), then most pairs
        best = min(free, key=lambda k: (host_of(order[k]) in hosts, -int(count[k]), k))
        taken.append(best)
        hosts.add(host_of(order[best]))
    if len(taken) < 2:  # its NICs in one domain (a rack's leaf): its pairs cross it with the controls only
        return _spread_over(order, host_of, DOMAIN_SAMPLE)
    return [order[k] for k in taken]


def clear_of(topo: Topology, cards: list[str], behind: Set[str], switches: Set[str]) -> set[str]:
    """Of ``behind`` (cards refused as controls only for being behind a suspect switch),
    those whose every scale-out pair with ``cards`` (the suspect's) crosses none of
    ``switches``: with a spine suspect, the cards on the suspect's own leaf (a pair under
    one leaf never climbs to a spine). Every card sits behind a spine: a card's scale-out
    retest refused them all and the card stayed in quarantine."""
    fabric = topo.fabric
    if not switches or not behind or not cards:
        return set()
    them = sorted(behind)
    a = np.repeat(np.array([fabric.card_position(c) for c in cards], np.int64), len(them))
    b = np.tile(np.array([fabric.card_position(c) for c in them], np.int64), len(cards))
    crossed = np.zeros(len(a), bool)
    for s in sorted(switches):
        crossed |= fabric.through(s, a, b)
    hit = crossed.reshape(len(cards), len(them)).any(axis=0)
    return {them[k] for k in np.flatnonzero(~hit)}


def stand_ins(findings) -> set[tuple[str, str]]:
    """The supernode suspects a slow cross group only stands for (its evidence's ``localised``
    false: one of every supernode it spans). They are no known culprit for another suspect's
    retest, and their cards are fair controls over the scale-out network: with one cross group
    a rail, a transient leaf's cross groups left every domain suspect at once, and a NIC's
    retest had no far side, every far pair "explained" by a domain (reviews19 #2)."""
    return {(f.entity, f.entity_kind) for f in findings
            if f.entity_kind == "supernode" and f.evidence.get("localised") is False}
