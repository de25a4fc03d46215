"""Capacity after isolation: TP and EP groups inside a supernode, world = TP x PP x DP."""

from __future__ import annotations

from pathlib import Path

import pytest

from sncheck.errors import ConfigError
from sncheck.config.playbook import ParallelLayout
from sncheck.health.capacity import capacity
from sncheck.run.inputs import load_inventory, load_inventory_text
from sncheck.topology import Topology

INVENTORIES = Path(__file__).resolve().parent.parent / "fixtures" / "inventories"


@pytest.fixture
def demo() -> Topology:
    return Topology(load_inventory(INVENTORIES / "demo-2sn.yaml"))  # 2 supernodes x 8 hosts x 4 cards


def test_a_full_layout_fits_a_healthy_cluster_exactly(demo: Topology) -> None:
    report = capacity(demo, [], ParallelLayout(tp=8, pp=2, dp=4))
    assert report.fits and report.healthy_cards == 64 == report.total_cards
    assert report.units_needed == 8 == report.units_available
    assert report.max_dp == 4
    assert [(s.name, s.healthy, s.tp_groups, s.stranded) for s in report.supernodes] == [
        ("sn0", 32, 4, 0), ("sn1", 32, 4, 0)]
    assert report.warnings == []


def test_one_bad_card_breaks_a_tight_layout(demo: Topology) -> None:
    report = capacity(demo, ["node003/gpu2"], ParallelLayout(tp=8, pp=2, dp=4))
    assert not report.fits
    sn0 = report.supernodes[0]
    assert (sn0.healthy, sn0.tp_groups, sn0.stranded, sn0.cards_out) == (31, 3, 7, ["node003/gpu2"])
    assert report.max_dp == 3
    assert any("does not fit" in w and "largest DP that fits is 3" in w for w in report.warnings)


def test_host_and_supernode_isolation_take_all_their_cards(demo: Topology) -> None:
    report = capacity(demo, ["node009", "node009/gpu1", "node010/gpu0"], ParallelLayout(tp=4))
    sn1 = report.supernodes[1]
    assert sn1.healthy == 27 and sn1.hosts_out == ["node009"] and sn1.cards_out == ["node010/gpu0"]
    report = capacity(demo, ["sn1"], ParallelLayout(tp=4, dp=8))
    assert report.supernodes[1].healthy == 0 and report.fits
    assert any("sn1: 0 healthy cards < TP=4" in w for w in report.warnings)


def test_links_and_unknown_entities_take_nothing_out(demo: Topology) -> None:
    report = capacity(demo, ["node001/gpu0<->node001/gpu1", "node999"], ParallelLayout())
    assert report.healthy_cards == 64
    assert len(report.ignored) == 2
    assert "a link takes no card out" in report.ignored[0] and "not in inventory" in report.ignored[1]


def test_ep_groups_and_the_placement_unit(demo: Topology) -> None:
    layout = ParallelLayout(tp=4, ep=16, pp=1, dp=16)  # world 64, unit lcm(4, 16) = 16
    assert layout.unit == 16 and layout.world == 64
    report = capacity(demo, [], layout)
    assert report.fits and [s.ep_groups for s in report.supernodes] == [2, 2]
    report = capacity(demo, ["node001/gpu0"], layout)
    sn0 = report.supernodes[0]
    assert (sn0.ep_groups, sn0.units, sn0.stranded, sn0.tp_groups) == (1, 1, 15, 7)
    assert not report.fits and report.max_dp == 12  # 3 units x 16 cards / TP 4, and EP=16 divides 4 x 12


def test_tp_or_ep_larger_than_a_supernode_is_warned(demo: Topology) -> None:
    report = capacity(demo, [], ParallelLayout(tp=64))
    assert not report.fits
    assert any("TP=64 is larger than every supernode's healthy cards" in w for w in report.warnings)
    report = capacity(demo, [], ParallelLayout(tp=2, ep=64, dp=32))
    assert any("forces EP groups across supernodes" in w for w in report.warnings)


def test_uneven_supernodes() -> None:
    inv = load_inventory_text(
        "supernodes:\n"
        "  - {name: big, hosts: 'b[1-18]', cards_per_host: 4}\n"
        "  - {name: small, hosts: 's[1-2]', cards_per_host: 4}\n", "uneven.yaml")
    report = capacity(Topology(inv), [], ParallelLayout(tp=72 // 2, pp=1, dp=2))
    assert [(s.name, s.tp_groups) for s in report.supernodes] == [("big", 2), ("small", 0)]
    assert report.fits
    assert any("small: 8 healthy cards < TP=36" in w for w in report.warnings)
    assert not any("every supernode" in w for w in report.warnings)


@pytest.mark.parametrize("kwargs, message", [
    ({"tp": 0}, "TP must be a positive integer"),
    ({"dp": -1}, "DP must be a positive integer"),
    ({"tp": 2, "ep": 3, "dp": 2}, "EP=3 must divide TP x DP = 4"),
])
def test_layout_is_validated(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        ParallelLayout(**kwargs)


def test_report_to_dict_is_json_ready(demo: Topology) -> None:
    import json

    d = capacity(demo, ["node003"], ParallelLayout(tp=4, ep=8, dp=8)).to_dict()
    assert d["layout"] == {"tp": 4, "ep": 8, "pp": 1, "dp": 8, "world": 32, "unit": 8}
    assert d["supernodes"][0]["hosts_out"] == ["node003"]
    json.dumps(d)


def test_a_nic_or_switch_isolation_takes_out_what_it_masks(demo: Topology) -> None:
    # reviews20 #12: a run isolated node003/nic2 (its card masked in cuda_visible_devices) and a leaf
    # (the fleet cap counted it as 16 cards out), and capacity said 64/64 healthy, 'not in inventory'
    report = capacity(demo, ["node003/nic2"], ParallelLayout())
    assert report.healthy_cards == 63 and report.supernodes[0].cards_out == ["node003/gpu2"] and not report.ignored
    assert report.taken == ["node003/nic2: its card node003/gpu2 is masked (a NIC is isolated by masking its card)"]
    report = capacity(demo, ["leaf:su0-rail2", "node003/nic2"], ParallelLayout())
    assert report.healthy_cards == 48 and not report.ignored
    assert report.supernodes[1].cards_out == [f"node{h:03d}/gpu2" for h in range(9, 17)]
    assert "leaf:su0-rail2: rail 2 drained on the 16 hosts it serves: 16 cards out of service" in report.taken[0]
    report = capacity(demo, ["node003/nic2<->leaf:su0-rail2[3]", "leaf:nope"], ParallelLayout())
    assert report.healthy_cards == 64 and "a cable takes no card out" in report.ignored[0]
    assert "not in inventory" in report.ignored[1]
