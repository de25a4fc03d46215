"""The mock's card pairs (sncheck/backends/mockp2p.py) are the same numbers however the
rounds are batched (issue 31: a batch's rounds are simulated into one set of columns), and
the bandwidth each way (mockphysics ``both_ways``, the ends' terms computed once per card)
is the published cost model's, term for term, under every fault that acts on it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sncheck.backends import mockorder, mockp2p
from sncheck.backends.mock import MockBackend
from sncheck.backends.mockphysics import NOISE_CV, OUT, UP
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


def _published_lat(phys, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """README "Mock backend cost model", pair latency: ``L_tier · max(m_a, m_b)`` times the link's factor."""
    tier = phys.tier(a, b)
    lat = phys.L[tier] * np.maximum(phys.lat_mult[a], phys.lat_mult[b])
    return lat * phys._lookup(phys.key(a, b), phys._lat_keys, phys._lat_vals)


def test_true_lat_is_the_published_latency_to_the_bit():
    b = MockBackend(TOPO, load_faults_text(FAULTS, TOPO), seed=0)
    n = len(TOPO.card_ids)
    a, c = (x.ravel() for x in np.meshgrid(np.arange(n), np.arange(n)))
    lat = b.phys.true_lat(a, c)
    assert np.array_equal(lat, _published_lat(b.phys, a, c))
    assert len(np.unique(lat)) > 3   # the card's and the link's factors act


def _plain_round(m, plan, a: np.ndarray, b: np.ndarray) -> dict:
    """One round as the cost model states it, every row gathered and scattered by its
    position (the mock before its rounds took their live rows in runs): the draws in the
    published order, bandwidth each way, then the ping-pong summaries."""
    phys = m.phys_at(plan.bw_bytes)
    tier = np.where(phys.host[a] == phys.host[b], 0, np.where(phys.sn[a] == phys.sn[b], 1, 2))
    reach = phys.up[a] & phys.up[b]
    fwd, rev = _published_bw(phys, a, b), _published_bw(phys, b, a)
    both = np.minimum(fwd, rev)
    live = np.flatnonzero(reach & (both > 0))
    out = {name: np.full(len(a), np.nan) for name in mockp2p.MEASURES}
    bws = m.noise((len(live), 3))
    out["bw_GBps"][live] = bws[:, 0] * fwd[live]
    out["bw_rev_GBps"][live] = bws[:, 1] * rev[live]
    out["bibw_GBps"][live] = bws[:, 2] * (fwd[live] + rev[live])
    la, lb = a[live], b[live]
    true_lat = _published_lat(phys, la, lb)
    iters = plan.lat_iters
    stats = np.empty((3, len(live)))
    if len(live) * iters < mockp2p.ORDER_STATISTICS_FROM:
        lat = m.noise((len(live), iters)) * true_lat[:, None]
        mockp2p._jitter(m, lat, la, lb)
        stats[:] = mockorder.median_p99_max(lat) if len(live) else 0
    else:
        spiky = (m.phys.jit_p[la] > 0) | (m.phys.jit_p[lb] > 0)
        plain, spikes = np.flatnonzero(~spiky), np.flatnonzero(spiky)
        if len(plain):
            z = mockorder.from_order(iters, mockorder.normal_order_statistics(m.rng, len(plain), iters))
            for i, stat in enumerate(z):
                stats[i, plain] = true_lat[plain] * (1.0 + NOISE_CV * stat)
        if len(spikes):
            lat = m.noise((len(spikes), iters)) * true_lat[spikes, None]
            mockp2p._jitter(m, lat, la[spikes], lb[spikes])
            stats[:, spikes] = mockorder.median_p99_max(lat)
    for name, stat in zip(mockp2p.MEASURES[3:], stats):
        out[name][live] = stat
    checksum = np.zeros(len(a), dtype=bool)
    checksum[live] = ~(phys.corrupt[la] | phys.corrupt[lb])
    status = np.where(~reach, 2, np.where(both <= 0, 1, 0))
    return {"tier": tier, **out, "checksum_ok": checksum, "status": status}


@pytest.mark.parametrize("max_runs", [0, 64], ids=["by-position", "in-runs"])
@pytest.mark.parametrize("order_from", [1, 10**9], ids=["order-statistics", "every-sample"])
def test_a_round_is_the_plain_cost_model_to_the_bit(monkeypatch, order_from, max_runs):
    """The mock's rounds (the live rows taken in runs between the dead ones, a pair's
    factors looked up only where both ends have one, the order statistics a block at a
    time) give every row the plain per-row computation gives, draw for draw: the same
    seed's rows are the same whatever the mock's arithmetic shortcuts."""
    monkeypatch.setattr(mockp2p, "ORDER_STATISTICS_FROM", order_from)
    monkeypatch.setattr(mockp2p, "MAX_RUNS", max_runs)
    monkeypatch.setattr(mockorder, "BLOCK", 7)   # several blocks a round
    faults = load_faults_text(FAULTS, TOPO)
    plan = connectivity_plan(TOPO, cross_supernode="all-pairs")
    sink = Batches()
    MockBackend(TOPO, faults, seed=5).p2p(plan, sink)
    got = {k: np.concatenate([np.asarray(c[k]) if not hasattr(c[k], "to_numpy") else
                              np.asarray(c[k].to_pylist(), dtype=object) for c in sink.batches])
           for k in ("bw_GBps", "bw_rev_GBps", "bibw_GBps", "lat_us", "lat_p99_us", "lat_max_us")}
    ref = MockBackend(TOPO, faults, seed=5)
    rounds = [_plain_round(ref, plan, r.pairs.a, r.pairs.b) for r in plan.rounds if len(r.pairs)]
    want = {k: np.concatenate([r[k] for r in rounds]) for k in rounds[0]}
    for name in got:
        assert np.array_equal(got[name], want[name], equal_nan=True), name
    rows = sink.rows()
    assert rows["tier"] == [mockp2p.TIERS[t] for t in want["tier"]]
    assert rows["status"] == [mockp2p.STATUSES[s] for s in want["status"]]
    assert rows["checksum_ok"] == [bool(c) if s == 0 else None for c, s in zip(want["checksum_ok"], want["status"])]
    assert {0, 1, 2} <= set(want["status"].tolist()) and (want["checksum_ok"] == 0).sum() > (want["status"] > 0).sum()
