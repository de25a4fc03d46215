from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from sncheck.run.inputs import load_inventory_text
from sncheck.probeplan import connectivity_plan, stress_groups
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


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=7), min_size=2, max_size=5), st.integers(min_value=1, max_value=3),
       st.integers(min_value=1, max_value=7))
def test_bounded_rail_rounds_meet_every_other_supernode(sizes, cards, depth):
    """Bounded: no card twice in a round, rail-aligned across supernodes, every rail of
    every host meets hosts of every other supernode, min(depth, |B|) or more of them
    (at least ceil(|B|/|A|)); never more pairs than all-pairs, never a pair twice."""
    topo = Topology(inventory(sizes, cards))
    rounds = rail_rounds(topo, depth)
    pairs = [p for r in rounds for p in r]
    for r in rounds:
        used = [c for p in r for c in p]
        assert len(used) == len(set(used))
    for a, b in pairs:
        assert topo.tier(a, b) == SCALE_OUT and a.rsplit("/", 1)[1] == b.rsplit("/", 1)[1]
    assert len({frozenset(p) for p in pairs}) == len(pairs) <= len([p for r in rail_rounds(topo) for p in r])
    met: dict[str, set[str]] = {}
    for a, b in pairs:
        met.setdefault(a, set()).add(b.split("/")[0])
        met.setdefault(b, set()).add(a.split("/")[0])
    sns = topo.inventory.supernodes
    for sa in sns:
        for sb in sns:
            if sa is sb:
                continue
            want = min(len(sb.hosts), max(depth, -(-len(sb.hosts) // len(sa.hosts))) if len(sa.hosts) <= len(sb.hosts)
                       else 1)
            for h in sa.hosts:
                for k in range(cards):
                    seen = {x for x in met.get(f"{h}/gpu{k}", ()) if x in sb.hosts}
                    assert len(seen) >= want, (h, k, sb.name, seen)


def test_bounded_plan_grows_linearly_and_states_its_size():
    """Doubling the supernodes doubles the bounded plan's pairs (all-pairs: x4 across)."""
    def plan(n_sn: int, mode: str):
        return connectivity_plan(Topology(inventory([16] * n_sn, 2)), cross_supernode=mode).summary()

    small, big = plan(4, "bounded"), plan(8, "bounded")
    assert big["pairs"] <= 2.2 * small["pairs"] and big["scale_out_pairs"] <= big["scale_up_pairs"]
    assert big["cross_supernode"] == "bounded" and big["cross_offsets"] >= 1
    full_small, full_big = plan(4, "all-pairs"), plan(8, "all-pairs")
    assert full_big["scale_out_pairs"] > 4 * full_small["scale_out_pairs"] and full_big["cross_offsets"] is None
    assert small["rounds"] == small["scale_up_rounds"] + small["scale_out_rounds"]
    assert small["pairs"] == small["scale_up_pairs"] + small["scale_out_pairs"]


def test_small_clusters_are_covered_in_full_by_the_bounded_plan():
    topo = Topology(inventory([8, 8], 4))
    assert connectivity_plan(topo).summary() == {**connectivity_plan(topo, cross_supernode="all-pairs").summary(),
                                                 "cross_supernode": "bounded"}


def test_plan_pairs_are_the_string_schedules():
    """The position arrays of a plan are exactly round_robin and rail_rounds."""
    topo = Topology(inventory([3, 2, 4], 3))
    plan = connectivity_plan(topo, cross_supernode="all-pairs")
    up = [list(r.pairs) for r in plan.rounds if r.phase == SCALE_UP]
    per_domain = [round_robin(topo.cards_of_supernode(sn)) for sn in topo.supernode_names]
    assert up == [[p for d in per_domain if i < len(d) for p in d[i]] for i in range(max(map(len, per_domain)))]
    assert [list(r.pairs) for r in plan.rounds if r.phase == SCALE_OUT] == rail_rounds(topo)


def test_cross_supernode_is_a_checked_playbook_option():
    from sncheck.errors import ConfigError
    from sncheck.run.inputs import load_playbook, load_playbook_text

    assert load_playbook("post-delivery").layers[0].options == {"cross_supernode": "all-pairs"}
    try:
        load_playbook_text("layers:\n  - connectivity: {cross_supernode: sideways}\n", "p.yaml")
    except ConfigError as e:
        assert "cross_supernode: must be one of bounded, all-pairs" in str(e) and "p.yaml" in str(e)
    else:
        raise AssertionError("an unknown cross_supernode mode was accepted")


def test_groups_are_built_once_per_topology_and_the_pair_plan_is_not_kept():
    """A run asks for the stress groups three times (the faults' check, the layer, the
    retests): built once per topology, the same frozen tuple, dropped with the topology.
    The connectivity plan is built anew each time: its pair arrays (64 MB at 16,384 cards)
    held with the topology raised the gate's peak RSS (1,539 -> 1,622 MB), so none is kept."""
    import gc
    import weakref

    from sncheck import probeplan

    topo = Topology(inventory([3, 2], 4))
    assert stress_groups(topo) is stress_groups(topo) and probeplan.golden_groups(topo) is probeplan.golden_groups(topo)
    plan = connectivity_plan(topo)
    again = connectivity_plan(topo)
    assert again is not plan and [list(r.pairs) for r in again.rounds] == [list(r.pairs) for r in plan.rounds]
    kept = weakref.ref(plan)
    del plan, again
    gc.collect()
    assert kept() is None   # nothing holds a pair plan once its user lets it go
    other = Topology(inventory([3, 2], 4))
    assert stress_groups(other) is not stress_groups(topo) and stress_groups(other) == stress_groups(topo)
    gone = weakref.ref(other)
    del other
    gc.collect()
    assert gone() is None and all(t is not None for t in probeplan._DERIVED)


def _mixed_inventory(shape: list[tuple[int, int]]):
    lines = ["design:", "  scale_up: {bandwidth: 450, latency: 3}", "  scale_out: {bandwidth: 50, latency: 15}",
             "supernodes:"]
    start = 1
    for i, (n, cards) in enumerate(shape):
        lines.append(f"  - {{name: sn{i}, hosts: 'h[{start:03d}-{start + n - 1:03d}]', cards_per_host: {cards}}}")
        start += n
    return load_inventory_text("\n".join(lines))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=1, max_value=5), st.integers(min_value=1, max_value=4)),
                min_size=1, max_size=9))
def test_plans_by_supernode_equal_their_pairwise_definitions(shape):
    """The cross-supernode pairs one host offset adds (every supernode pair, its smaller
    side's cards: of the first listed on a tie) and the stress groups' per-supernode host
    lists, as their plain definitions over every pair and every host say (they were
    written so: 12 and 10 s of the 131,072-card gate's planning, quadratic in supernodes)."""
    from sncheck.topology import rail_pairs_per_offset

    topo = Topology(_mixed_inventory(shape))
    inv, sns = topo.inventory, topo.inventory.supernodes
    total = 0
    for i, a in enumerate(sns):
        for b in sns[i + 1:]:
            small = a if len(a.hosts) <= len(b.hosts) else b
            total += sum(inv.hosts[h].cards for h in small.hosts)
    assert rail_pairs_per_offset(topo) == total
    rails = {g.id: g.members for g in stress_groups(topo) if g.kind == "rail"}
    for sn in topo.supernode_names:
        hosts = [h for h in topo.hosts if topo.supernode_of_host(h) == sn]
        for k in range(max(inv.hosts[h].cards for h in hosts)):
            members = tuple(f"{h}/gpu{k}" for h in hosts if inv.hosts[h].cards > k)
            assert rails.get(f"rail:{sn}:gpu{k}", members) == members
            assert (f"rail:{sn}:gpu{k}" in rails) == (len(hosts) >= 2 and len(members) >= 2)
