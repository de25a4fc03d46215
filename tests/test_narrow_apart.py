"""The stress narrowing narrows each supernode's suspects apart, as one suspect alone is (reviews19 #3):
two slow cards in two supernodes, each pointed at by its host and rail groups, were one round robin of
their two hosts' cards (28 pairs, 16 of them scale-out, where one alone had its 6). Suspects a group
crossing supernodes pointed at together (a cross group) are narrowed together, over scale-out."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from sncheck.layers.stress import narrowing_plan
from sncheck.probeplan import StressPlan
from sncheck.run.inputs import load_inventory, load_playbook
from sncheck.topology import Topology, round_robin

ROOT = Path(__file__).resolve().parent.parent
TOPO = Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml"))
CTX = SimpleNamespace(topo=TOPO)
PLAN = StressPlan(groups=(), collectives=("all_reduce",), sizes=(8,))


def _pairs(suspects: set[str], joined=()) -> list[tuple[str, ...]]:
    plan = narrowing_plan(CTX, PLAN, suspects, (8192,), joined=joined)  # type: ignore[arg-type]
    return [g.members for g in plan.groups]


def test_two_suspects_in_two_supernodes_are_each_narrowed_among_their_host_mates() -> None:
    alone = {c: _pairs({c}) for c in ("node003/gpu2", "node012/gpu0")}
    assert [len(p) for p in alone.values()] == [6, 6], alone
    both = _pairs({"node003/gpu2", "node012/gpu0"})
    assert both == alone["node003/gpu2"] + alone["node012/gpu0"], both  # each as it is alone, in order
    assert not any(TOPO.by_id[a].supernode != TOPO.by_id[b].supernode for a, b in both), both


def test_one_suspect_is_narrowed_as_before() -> None:
    mates = [c.id for c in TOPO.cards if c.id.startswith("node003/")]
    assert _pairs({"node003/gpu2"}) == [p for rnd in round_robin(mates) for p in rnd]


def test_suspects_a_cross_group_pointed_at_together_are_narrowed_together() -> None:
    cross = [c.id for c in TOPO.cards if c.id.endswith("/gpu0")]  # a group holding both supernodes' suspects
    both = _pairs({"node003/gpu0", "node012/gpu0"}, joined=[cross])
    cards = [c.id for c in TOPO.cards if c.id.startswith(("node003/", "node012/"))]
    assert both == [p for rnd in round_robin(cards) for p in rnd], both  # 28 pairs, 16 over scale-out
    assert sum(TOPO.by_id[a].supernode != TOPO.by_id[b].supernode for a, b in both) == 16
    # a group inside one supernode joins nothing across
    rail = [c.id for c in TOPO.cards if c.id.endswith("/gpu0") and TOPO.by_id[c.id].supernode == "sn0"]
    assert len(_pairs({"node003/gpu0", "node012/gpu0"}, joined=[rail])) == 12


@pytest.mark.parametrize("inv, cards", [
    ("fixtures/inventories/demo-2sn.yaml", {"node003/gpu2": 0.5, "node012/gpu0": 0.6}),
    # seed 1 there: nd2/gpu2 was not named at all, the healthy link nd2/gpu0<->nd2/gpu2 and supernode nd isolated
    ("tests/data/scenarios-r9/inv-rail-spines.yaml", {"nd2/gpu2": 0.5, "nc2/gpu0": 0.6}),
], ids=["demo-2sn", "rail-spines"])
def test_two_slow_cards_in_two_supernodes_are_each_named_under_the_nightly(tmp_path: Path, inv: str,
                                                                            cards: dict[str, float]) -> None:
    """reviews19 #3's repros (shipped nightly-stress, seed 1): on demo-2sn 4 critical findings, the two cards
    (each by latency on scale-out) and beside each a link 'between two otherwise healthy cards' whose end it
    was, all isolated; now each card alone, as when it is the only fault."""
    from mock_gate import ends, mock_gate

    res = mock_gate(tmp_path, load_inventory(ROOT / inv),
                    [f"{{type: slow_card, target: {c}, factor: {f}}}" for c, f in cards.items()],
                    playbook=load_playbook(str(ROOT / "playbooks/nightly-stress.yaml"))).results
    assert ends(res) == {c: "isolate" for c in cards}, ends(res)
