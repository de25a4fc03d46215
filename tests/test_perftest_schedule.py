"""The rail pairs perftest runs (connectivity option ``tools_coverage``): sampled from the
plan's cross-supernode rounds so that every NIC (host x rail) meets at least n distinct
peers, at fleet size far fewer pairs than the plan's; ``all`` and ``--targets`` keep all."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_topology import inventory

from sncheck.errors import ConfigError
from sncheck.probeplan import ConnectivityPlan, Round, connectivity_plan, perftest_schedule, rail_pair_rounds, scope_connectivity, target_cards
from sncheck.run.inputs import load_playbook_text
from sncheck.topology import Topology


def _peers(rounds) -> dict[tuple[str, int], set[str]]:
    """NIC (host, rail) -> the distinct hosts it met, counted from the pairs themselves."""
    met: dict[tuple[str, int], set[str]] = defaultdict(set)
    for rnd in rounds:
        for p in rnd:
            met[(p.client, p.rail)].add(p.server)
            met[(p.server, p.rail)].add(p.client)
    return met


def _check_rounds(rounds, plan_rounds) -> None:
    """Each kept pair is a pair of the plan, in the plan's round; no NIC twice in a round."""
    plan_pairs = {(p.round, p.client, p.server, p.rail) for rnd in plan_rounds for p in rnd}
    for rnd in rounds:
        assert len({p.round for p in rnd}) == 1
        ends = [(h, p.rail) for p in rnd for h in (p.client, p.server)]
        assert len(ends) == len(set(ends))
        assert {(p.round, p.client, p.server, p.rail) for p in rnd} <= plan_pairs
    order = [rnd[0].round for rnd in rounds]
    assert order == sorted(order)  # the plan's order


def test_fleet_size_plan_tests_every_nic_with_two_peers_in_few_pairs() -> None:
    # 2,048 cards: 4 supernodes of 64 hosts x 8 rails; the plan's rail pairs cover every host
    # of every other supernode (196,608 perftest runs in 192 rounds)
    topo = Topology(inventory([64] * 4, 8))
    plan = connectivity_plan(topo, tools=("ib_write_bw",))
    assert plan.tools_coverage == 2  # the default
    full = rail_pair_rounds(plan)
    sched = perftest_schedule(plan)
    hosts, rails = len(topo.hosts), 8
    nics = hosts * rails
    met = _peers(sched.rounds)
    assert set(met) == set(_peers(full)) and len(met) == nics  # every NIC of the plan is tested
    assert min(len(v) for v in met.values()) >= 2  # against two distinct peers at least
    _check_rounds(sched.rounds, full)
    # each kept pair gives some NIC a new peer: at most 2 x NICs pairs; far below the plan's
    assert sched.pairs <= 2 * nics and sched.pairs * 50 < sched.plan_pairs
    assert len(sched.rounds) < len(full) / 10
    assert sched.summary() == {"pairs": sched.pairs, "plan_pairs": sum(len(r) for r in full),
                               "rounds": len(sched.rounds), "plan_rounds": len(full), "coverage": 2,
                               "nics": nics, "min_peers": min(len(v) for v in met.values())}
    # deterministic: the same plan built again gives the same pairs
    again = perftest_schedule(connectivity_plan(topo, tools=("ib_write_bw",)))
    assert again.rounds == sched.rounds and again is not sched
    # the plan computes its own once: the layer's summary and the backend's runs are one schedule
    assert plan.perftest is plan.perftest and plan.perftest.rounds == sched.rounds


def test_bounded_offsets_plan_at_fleet_size() -> None:
    # 40 supernodes of 18 hosts x 4 rails: the bounded plan takes few host offsets, so a NIC
    # meets one host of each other supernode; coverage 3 still reaches three peers each
    topo = Topology(inventory([18] * 40, 4))
    plan = connectivity_plan(topo)
    assert plan.cross_offsets is not None
    full = rail_pair_rounds(plan)
    sched = perftest_schedule(plan, 3)
    met = _peers(sched.rounds)
    assert len(met) == len(topo.hosts) * 4 and min(len(v) for v in met.values()) >= 3
    assert sched.pairs <= 3 * len(met) and sched.pairs * 10 < sched.plan_pairs
    _check_rounds(sched.rounds, full)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=2, max_size=4), st.integers(1, 3), st.integers(1, 5),
       st.sampled_from(["bounded", "all-pairs"]))
def test_every_nic_meets_min_of_coverage_and_its_plan_peers(sizes, cards, coverage, mode) -> None:
    plan = connectivity_plan(Topology(inventory(sizes, cards)), cross_supernode=mode)
    full = rail_pair_rounds(plan)
    sched = perftest_schedule(plan, coverage)
    in_plan, met = _peers(full), _peers(sched.rounds)
    assert set(met) == set(in_plan)
    for nic, peers in in_plan.items():
        assert len(met[nic]) >= min(coverage, len(peers)), nic
    assert sched.pairs <= coverage * len(in_plan)
    assert sched.min_peers == (min(len(v) for v in met.values()) if met else 0)
    _check_rounds(sched.rounds, full)


def test_all_keeps_every_rail_pair_of_the_plan() -> None:
    topo = Topology(inventory([8, 8, 8], 4))
    plan = connectivity_plan(topo, cross_supernode="all-pairs", tools_coverage="all")
    sched = perftest_schedule(plan)
    cross = sum(len(r.pairs) for r in plan.rounds if r.phase == "scale_out")
    assert sched.pairs == sched.plan_pairs == cross and sched.rounds == rail_pair_rounds(plan)
    assert sched.min_peers == 16 and sched.coverage == "all"


def test_a_scoped_plan_runs_all_its_pairs() -> None:
    topo = Topology(inventory([8, 8], 4))
    plan = connectivity_plan(topo, tools=("ib_write_bw",))
    scoped = scope_connectivity(plan, target_cards(topo, ["h003"]))
    sched = perftest_schedule(scoped)
    assert scoped.tools_coverage == "all" and sched.pairs == sched.plan_pairs
    met = _peers(sched.rounds)
    assert all(len(met[("h003", k)]) == 8 for k in range(4))  # every host of the other supernode
    assert perftest_schedule(plan).pairs < sum(len(r) for r in rail_pair_rounds(plan))


def test_a_hand_made_round_with_a_nic_twice() -> None:
    # a round that is not a plan's (a NIC at two pairs): judged one pair after the other
    rnd = Round(0, "scale_out", (("a/gpu0", "b/gpu0"), ("a/gpu0", "c/gpu0"), ("c/gpu0", "a/gpu0"),
                                 ("a/gpu0", "d/gpu0"), ("b/gpu0", "c/gpu0"), ("a/gpu0", "b/gpu1")))
    sched = perftest_schedule(ConnectivityPlan(rounds=(rnd,), hosts=()), 2)
    # c<->a again adds no peer (dropped); a is full at a<->d, kept for d; b<->c gives both a second
    # peer; a/gpu0<->b/gpu1 is not rail-aligned (not a perftest pair)
    assert [(p.client, p.server) for p in sched.rounds[0]] == [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c")]
    assert sched.plan_pairs == 5 and sched.nics == 4 and sched.min_peers == 1  # d's only peer is a


def test_tools_coverage_is_validated() -> None:
    def opts(value: str) -> dict:
        return load_playbook_text(f"layers:\n  - connectivity:\n      tools: [ib_write_bw]\n"
                                  f"      tools_coverage: {value}\n", "pb.yaml").layers[0].options

    assert opts("3")["tools_coverage"] == 3 and opts("all")["tools_coverage"] == "all"
    assert opts("1")["tools_coverage"] == 1
    for bad, shown in (("0", "got 0"), ("65", "got 65"), ("'two'", "got 'two'"), ("true", "got True"),
                       ("[2]", "got a list"), ("2.5", "got 2.5"), ("ALL", "got 'ALL'")):
        with pytest.raises(ConfigError, match=r"tools_coverage: must be an integer from 1 to 64 "
                                              r"\(distinct perftest peers per NIC\) or 'all'") as e:
            opts(bad)
        assert e.value.where == "pb.yaml:4" and shown in str(e.value), (bad, str(e.value))
