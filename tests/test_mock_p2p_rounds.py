"""The mock's card pairs (sncheck/backends/mockp2p.py) are the same numbers however the
rounds are batched (issue 31: a batch's rounds are simulated into one set of columns), and
the bandwidth each way (mockphysics ``both_ways``, the ends' terms computed once per card)
is the published cost model's, term for term, under every fault that acts on it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sncheck.backends import mockp2p
from sncheck.backends.mock import MockBackend
from sncheck.backends.mockphysics import OUT, UP
from sncheck.probeplan import connectivity_plan
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
TOPO = Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml"))
# every fault the pairs' numbers depend on, a jittery card among them (its pairs draw every sample)
FAULTS = """faults:
  - {type: slow_card, target: node003/gpu2, factor: 0.85}
  - {type: nvlink_down, target: node002/gpu1, links: 4}
  - {type: slow_nic, target: node010, port: 2, factor: 0.5}
  - {type: ib_port_down, target: node011, port: 1}
  - {type: degraded_link, target: "node001/gpu0<->node001/gpu1", factor: 0.5, direction: "node001/gpu1->node001/gpu0"}
  - {type: dead_link, target: "node004/gpu0<->node004/gpu3"}
  - {type: high_latency_card, target: node005/gpu1, factor: 3}
  - {type: high_latency_link, target: "node006/gpu0<->node006/gpu2", factor: 2}
  - {type: jittery_card, target: node013/gpu0, probability: 0.2, factor: 10}
  - {type: down_host, target: node007}
  - {type: corrupt_card, target: node012/gpu3}
"""


class Batches:
    def __init__(self) -> None:
        self.batches: list[dict] = []

    def __call__(self, row: dict) -> None:
        raise AssertionError(f"a single row: {row}")

    def batch(self, kind: str, columns: dict) -> None:
        self.batches.append(columns)

    def rows(self) -> dict[str, list]:
        """Every batch's columns joined, as plain values (ids as text, NaN as None)."""
        out: dict[str, list] = {}
        for cols in self.batches:
            n = len(cols["src"])
            for k, v in cols.items():
                if isinstance(v, (str, int, float)):
                    values = [v] * n
                elif hasattr(v, "to_pylist"):
                    values = v.to_pylist()
                else:
                    values = [None if isinstance(x, float) and np.isnan(x) else x for x in np.asarray(v).tolist()]
                out.setdefault(k, []).extend(values)
        return out


def _p2p(monkeypatch, batch_pairs: int, order_from: int) -> Batches:
    monkeypatch.setattr(mockp2p, "BATCH_PAIRS", batch_pairs)
    monkeypatch.setattr(mockp2p, "ORDER_STATISTICS_FROM", order_from)
    b = MockBackend(TOPO, load_faults_text(FAULTS, TOPO), seed=3)
    sink = Batches()
    b.p2p(connectivity_plan(TOPO, cross_supernode="all-pairs"), sink)
    return sink


@pytest.mark.parametrize("order_from", [1, 10**9], ids=["order-statistics", "every-sample"])
def test_the_rows_are_the_same_however_the_rounds_are_batched(monkeypatch, order_from):
    one = _p2p(monkeypatch, 1, order_from)              # each round its own batch
    whole = _p2p(monkeypatch, 10**9, order_from)        # every round in one batch
    some = _p2p(monkeypatch, 100, order_from)           # a few rounds a batch
    assert len(one.batches) > len(some.batches) > len(whole.batches) == 1
    rows = whole.rows()
    assert one.rows() == rows and some.rows() == rows
    status = rows["status"]
    # the faults show: the down host's pairs, the dead link's, measured pairs with numbers
    assert {"ok", "timeout", "unreachable"} <= set(status)
    ok = [i for i, s in enumerate(status) if s == "ok"]
    assert all(rows["lat_us"][i] is not None and rows["bw_GBps"][i] > 0 for i in ok)
    assert all(rows["lat_us"][i] is None for i, s in enumerate(status) if s != "ok")


def _published_bw(phys, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """README "Mock backend cost model", pair bandwidth, one way, term by term."""
    tier = phys.tier(a, b)
    B = phys.B
    nvlink = B[tier] * np.minimum(phys.speed[a] * phys.nvlink[a], phys.speed[b] * phys.nvlink[b])
    nic = np.minimum(B[OUT], np.minimum(phys.speed[a], phys.speed[b]) * B[UP])
    nic = np.minimum(nic, B[OUT] * np.minimum(phys.nic_speed[a], phys.nic_speed[b]))
    nic = np.where(phys.nic_down[a] | phys.nic_down[b], 0.0, nic)
    if phys.switched:
        out = tier == OUT
        nic = nic.copy()
        nic[out] *= phys.switch_factor(a[out], b[out])
    return np.where(tier == OUT, nic, nvlink) * phys.link_factor(a, b)


@pytest.mark.parametrize("extra", ["", '  - {type: slow_switch, target: "leaf:su0-rail1", factor: 0.5}\n'],
                         ids=["cards-and-links", "and-a-slow-leaf"])
def test_both_ways_is_the_published_bandwidth_of_each_direction_to_the_bit(extra):
    b = MockBackend(TOPO, load_faults_text(FAULTS + extra, TOPO), seed=0)
    phys = b.phys
    n = len(TOPO.card_ids)
    a, c = (x.ravel() for x in np.meshgrid(np.arange(n), np.arange(n)))
    fwd, rev = phys.both_ways(a, c)
    assert np.array_equal(fwd, _published_bw(phys, a, c)) and np.array_equal(rev, _published_bw(phys, c, a))
    assert np.array_equal(phys.true_bw(a, c), fwd)
    assert np.array_equal(phys.edge_bw(a, c), np.minimum(fwd, rev))
    # the faults act: a one-way degraded link, a dead one, a NIC down, a slow NIC (and the leaf)
    assert (fwd == 0).any() and (fwd != rev).any() and len(np.unique(fwd)) > 4
