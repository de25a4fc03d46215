from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from sncheck.inventory import load_inventory_text
from sncheck.plan import connectivity_plan, stress_groups
from sncheck.topology import INTRA_HOST, SCALE_OUT, SCALE_UP, Topology, link_id, rail_rounds, round_robin


def inventory(sizes: list[int], cards: int):
    lines = ["design:", "  scale_up: {bandwidth: 450, latency: 3}", "  scale_out: {bandwidth: 50, latency: 15}",
             "supernodes:"]
    start = 1
    for i, n in enumerate(sizes):
        lines.append(f"  - {{name: sn{i}, hosts: 'h[{start:03d}-{start + n - 1:03d}]', cards_per_host: {cards}}}")
        start += n
    return load_inventory_text("\n".join(lines))


@given(st.integers(min_value=2, max_value=80))
def test_round_robin_properties(n):
    rounds = round_robin(list(range(n)))
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [frozenset(p) for r in rounds for p in r]
    assert len(seen) == len(set(seen)) == n * (n - 1) // 2  # every pair exactly once
    for r in rounds:
        used = [x for p in r for x in p]
        assert len(used) == len(set(used))  # no card twice in a round
        assert len(r) == n // 2


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=6), min_size=2, max_size=4), st.integers(min_value=1, max_value=4))
def test_rail_rounds_cover_every_rail_of_every_host(sizes, cards):
    topo = Topology(inventory(sizes, cards))
    rounds = rail_rounds(topo)
    pairs = [p for r in rounds for p in r]
    for r in rounds:
        used = [c for p in r for c in p]
        assert len(used) == len(set(used))
    for a, b in pairs:
        assert topo.tier(a, b) == SCALE_OUT and a.rsplit("/", 1)[1] == b.rsplit("/", 1)[1]
    # Card k of each host meets card k of every host of every other supernode, exactly once.
    expected = {frozenset((f"{ha}/gpu{k}", f"{hb}/gpu{k}"))
                for sa, sb in combinations(topo.inventory.supernodes, 2)
                for ha in sa.hosts for hb in sb.hosts for k in range(cards)}
    assert {frozenset(p) for p in pairs} == expected and len(pairs) == len(expected)


def test_tiers_and_links():
    topo = Topology(inventory([2, 2], 2))
    assert topo.tier("h001/gpu0", "h001/gpu1") == INTRA_HOST
    assert topo.tier("h001/gpu0", "h002/gpu1") == SCALE_UP
    assert topo.tier("h001/gpu0", "h003/gpu0") == SCALE_OUT
    assert link_id("node10/gpu1", "node9/gpu0") == "node9/gpu0<->node10/gpu1"  # natural order


def test_connectivity_plan_covers_every_domain_pair():
    topo = Topology(inventory([3, 2], 4))
    plan = connectivity_plan(topo)
    up = [p for r in plan.rounds if r.phase == "scale_up" for p in r.pairs]
    assert len(up) == 12 * 11 // 2 + 8 * 7 // 2
    assert len([r for r in plan.rounds if r.phase == "scale_up"]) == 11  # domains run concurrently
    for r in plan.rounds:
        used = [c for p in r.pairs for c in p]
        assert len(used) == len(set(used))


def test_stress_groups_grid_narrows_to_one_card():
    topo = Topology(inventory([4, 4], 4))
    groups = {g.id: set(g.members) for g in stress_groups(topo)}
    assert groups["host:h002"] & groups["rail:sn0:gpu3"] == {"h002/gpu3"}
    kinds = {g.split(":")[0] for g in groups}
    assert kinds == {"host", "rail", "domain", "cross"}
