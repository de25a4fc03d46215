"""A layer's plan split into scheduler steps: one small torch world per supernode, one per
rail across supernodes (issue 31), instead of one world over every card of the fleet.

* **supernode** steps: every pair (connectivity) or group (stress, golden) whose cards all
  lie in one supernode runs in that supernode's step, over all the cards of its hosts
  that take part. Supernodes share no card, so their steps run at once.
* **rail** steps: a pair or group across supernodes whose cards are all card k of
  different hosts (the bounded cross-supernode plan, ``cross:gpu0``) runs in rail k's step:
  one rank per host, card k. Rails share no card, so rail steps run at once too, after
  the supernode steps that hold the same cards.
* one **span** step for what is neither (a hand-made pair ``node1/gpu1<->node4/gpu0``, a
  narrowing pair across supernodes): every card of the hosts it touches.

Rounds keep their index and phase; a step's plan is the layer's plan with only its own
pairs or groups (:func:`dataclasses.replace`), so the probe writes the same rows it would
in one world. Which steps may run together is the launcher's business: two steps that
hold a card in common never run at once (:attr:`StepSpec.cards`).

Pure: nothing here starts a process or touches a file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sncheck.errors import HarnessError
from sncheck.model import host_of, rail_of
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Group, Pairs, Round, StressPlan
from sncheck.topology import Topology

SUPERNODE, RAIL, SPAN = "supernode", "rail", "span"


@dataclass(frozen=True)
class StepSpec:
    """One step: its ranks (``cards``, host by host: rank i is ``cards[i]``) and its plan."""

    kind: str                  # supernode | rail | span
    key: str                   # the supernode's name, the rail (gpu1), or "span"
    cards: tuple[str, ...]
    plan: Any

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(host_of(c) for c in self.cards))

    @property
    def per_host(self) -> int:
        """Ranks on each host (every host of a step has the same number: ``--ntasks-per-node``)."""
        return len(self.cards) // max(1, len(self.hosts))

    @property
    def name(self) -> str:
        """``sn0``, ``rail-gpu1``, ``span``: the step's name in job names and messages."""
        return self.key if self.kind == SUPERNODE else f"{self.kind}-{self.key}" if self.kind == RAIL else SPAN

    def describe(self) -> str:
        """How a message names the step: ``supernode sn0``, ``rail gpu1 across supernodes``."""
        return {SUPERNODE: f"supernode {self.key}", RAIL: f"rail {self.key} across supernodes"}.get(
            self.kind, "cross-supernode pairs off the rails")

    def entities(self) -> list[tuple[str, str]]:
        """What a lost step leaves unmeasured, as (entity, kind): a rail step's cards (the
        rail of each host, not the host's other cards), else the step's hosts."""
        if self.kind == RAIL:
            return [(c, "card") for c in self.cards]
        return [(h, "host") for h in self.hosts]


def split_connectivity(topo: Topology, plan: ConnectivityPlan) -> list[StepSpec]:
    """The connectivity plan's pairs as steps (supernodes, then rails, then the span)."""
    buckets: dict[tuple[str, str], list[Round]] = {}
    codes = _Codes(topo)
    for rnd in plan.rounds:
        for bucket, pairs in codes.split_round(rnd.pairs):
            buckets.setdefault(bucket, []).append(Round(rnd.index, rnd.phase, pairs))
    steps = []
    for (kind, key), rounds in _ordered(topo, buckets):
        used = {c for r in rounds for pair in r.pairs for c in pair}
        cards = _step_cards(topo, kind, used)
        steps.append(StepSpec(kind, key, cards, dataclasses.replace(
            plan, rounds=tuple(rounds), hosts=tuple(dict.fromkeys(host_of(c) for c in cards)))))
    return steps


def split_groups(topo: Topology, plan: StressPlan | GoldenPlan) -> list[StepSpec]:
    """A stress or golden plan's groups as steps (supernodes, then rails, then the span)."""
    buckets: dict[tuple[str, str], list[Group]] = {}
    for g in plan.groups:
        buckets.setdefault(classify(topo, g.members), []).append(g)
    return [StepSpec(kind, key, _step_cards(topo, kind, {m for g in groups for m in g.members}),
                     dataclasses.replace(plan, groups=tuple(groups)))
            for (kind, key), groups in _ordered(topo, buckets)]


def classify(topo: Topology, members: Sequence[str]) -> tuple[str, str]:
    """The step a pair or group of cards runs in: (supernode, name), (rail, gpuK) or (span, span)."""
    hosts = [host_of(m) for m in members]
    sns = {topo.supernode_of_host(h) for h in hosts}
    if len(sns) == 1:
        return SUPERNODE, next(iter(sns))
    rails = {rail_of(m) for m in members}
    if len(rails) == 1 and len(set(hosts)) == len(hosts):
        return RAIL, f"gpu{next(iter(rails))}"
    return SPAN, SPAN


def _step_cards(topo: Topology, kind: str, used: Iterable[str]) -> tuple[str, ...]:
    """A rail step's ranks are the cards it uses; the others' are every card of the hosts
    they touch (idle ranks included), so each host runs the same number of tasks."""
    used = set(used)
    touched = {host_of(c) for c in used}
    hosts = [h for h in topo.hosts if h in touched]
    if kind == RAIL:
        return tuple(c for h in hosts for c in topo.cards_of_host(h) if c in used)
    counts = {h: topo.inventory.hosts[h].cards for h in hosts}
    if len(set(counts.values())) > 1:
        raise HarnessError(f"the slurm backend runs one task per card with --ntasks-per-node: the hosts of one "
                           f"step must have the same number of cards, got {counts}")
    return tuple(c for h in hosts for c in topo.cards_of_host(h))


def _ordered(topo: Topology, buckets: dict[tuple[str, str], list]) -> list[tuple[tuple[str, str], list]]:
    """Supernode steps in inventory order (they start first), then rails by index, then the span."""
    sns = {name: i for i, name in enumerate(topo.supernode_names)}

    def order(item: tuple[tuple[str, str], list]) -> tuple[int, int]:
        kind, name = item[0]
        if kind == SUPERNODE:
            return 0, sns[name]
        return (1, int(name[3:])) if kind == RAIL else (2, 0)

    return sorted(buckets.items(), key=order)


class _Codes:
    """Each card's supernode, host and rail as integer codes, to split a fleet's rounds
    (millions of pairs as position arrays, :class:`Pairs`) without a string per pair."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self._by_cards: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.sn_names = list(topo.supernode_names)

    def _codes(self, cards: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        got = self._by_cards.get(id(cards))
        if got is None:
            sn_index = {n: i for i, n in enumerate(self.sn_names)}
            host_index = {h: i for i, h in enumerate(self.topo.hosts)}
            by_id = self.topo.by_id
            got = (np.fromiter((sn_index[by_id[c].supernode] for c in cards), np.int64, len(cards)),
                   np.fromiter((host_index[by_id[c].host] for c in cards), np.int64, len(cards)),
                   np.fromiter((by_id[c].index for c in cards), np.int64, len(cards)))
            self._by_cards[id(cards)] = got
        return got

    def split_round(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[tuple[str, str], Sequence]]:
        """The round's pairs by step, as :class:`Pairs` where the round's are."""
        if not isinstance(pairs, Pairs):
            out: dict[tuple[str, str], list[tuple[str, str]]] = {}
            for pair in pairs:
                out.setdefault(classify(self.topo, pair), []).append(tuple(pair))  # type: ignore[arg-type]
            return [(k, tuple(v)) for k, v in out.items()]
        sn, host, rail = self._codes(pairs.cards)
        a, b = pairs.a, pairs.b
        same_sn = sn[a] == sn[b]
        on_rail = ~same_sn & (rail[a] == rail[b]) & (host[a] != host[b])
        parts: list[tuple[tuple[str, str], Sequence]] = []
        for code in np.unique(sn[a][same_sn]).tolist():
            keep = same_sn & (sn[a] == code)
            parts.append(((SUPERNODE, self.sn_names[code]), Pairs(pairs.cards, a[keep], b[keep])))
        for k in np.unique(rail[a][on_rail]).tolist():
            keep = on_rail & (rail[a] == k)
            parts.append(((RAIL, f"gpu{k}"), Pairs(pairs.cards, a[keep], b[keep])))
        rest = ~same_sn & ~on_rail
        if rest.any():
            parts.append(((SPAN, SPAN), Pairs(pairs.cards, a[rest], b[rest])))
        return parts
