"""What a playbook's layers will measure, known before they run: each layer's plan as the
card pairs and all-to-all groups it measures (sncheck.fabric.Measured), with the largest
message each carries. The run refuses a fault that none of them can show
(``faultplan.unmeasured``): the mock would act it out and no row would ever say so.

connectivity: every planned pair, bandwidth at ``bw_bytes``; stress: the ring edges of
each all-reduce and every pair of each all-to-all, at the sweep's largest size; golden: the
ring edges of each replica's gradient all-reduce (large messages).
"""

from __future__ import annotations

import numpy as np

from sncheck.fabric import Measured
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Group, Pairs, StressPlan
from sncheck.topology import Topology


def _positions(topo: Topology, cards) -> np.ndarray:  # noqa: ANN001 - card ids
    index = topo.fabric.card_position
    return np.fromiter((index(c) for c in cards), np.int64, count=len(cards))


def _rings(topo: Topology, groups: tuple[Group, ...]) -> tuple[np.ndarray, np.ndarray]:
    a, b = [], []
    for g in groups:
        m = _positions(topo, g.members)
        if len(m) >= 2:
            a.append(m)
            b.append(np.roll(m, -1))
    return (np.concatenate(a), np.concatenate(b)) if a else (np.zeros(0, np.int64), np.zeros(0, np.int64))


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
    if isinstance(plan, StressPlan):
        ring = _rings(topo, plan.groups) if "all_reduce" in plan.collectives else (np.zeros(0, np.int64),) * 2
        groups = tuple(_positions(topo, g.members) for g in plan.groups) if "all_to_all" in plan.collectives else ()
        return Measured(ring[0], ring[1], groups, size=float(max(plan.sizes)))
    a, b = _rings(topo, plan.groups)
    return Measured(a, b)
