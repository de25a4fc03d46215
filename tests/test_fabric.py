"""The fabric model (sncheck.fabric): the inventory's ``fabric:`` key, each NIC's leaf and
port, the spines, every pair's path, and the switch entities and their ids."""

from __future__ import annotations

import numpy as np
import pytest

from sncheck.run.inputs import load_inventory_text
from sncheck.errors import ConfigError
from sncheck.fabric import Measured
from sncheck.model import is_switch, parse_switch
from sncheck.model import EntityKind, Tier
from sncheck.topology import Topology


def hgx(hosts: int = 8, fabric: str = "") -> Topology:
    """``hosts`` HGX hosts (8 cards, one supernode each) with an optional ``fabric:`` block."""
    sns = "".join(f"  - {{name: h{i:02d}, hosts: h{i:02d}}}\n" for i in range(1, hosts + 1))
    return Topology(load_inventory_text(f"name: hgx\nplatform: nvidia-hgx\nsupernodes:\n{sns}{fabric}", "inv.yaml"))


def test_without_a_fabric_key_rail_r_hangs_off_one_leaf_per_rail():
    f = hgx(4).fabric
    assert f.leaf_names == tuple(f"su0-rail{r}" for r in range(8)) and f.spine_names == ()
    assert f.leaf_of("h03/gpu5") == f.leaf_of("h03/nic5") == "leaf:su0-rail5"
    assert f.cable_of("h03/nic5") == "h03/nic5<->leaf:su0-rail5[3]"   # host i on port i+1
    p = f.path("h01/gpu2", "h04/gpu2")
    assert p.tier == Tier.SCALE_OUT and p.nics == ("h01/nic2", "h04/nic2")
    assert p.switches == ("leaf:su0-rail2",)    # one shared leaf, no spine: none is declared
    assert p.shared == ("h01/gpu2<->h04/gpu2", "h01/nic2<->leaf:su0-rail2[1]", "h04/nic2<->leaf:su0-rail2[4]",
                        "leaf:su0-rail2")
    assert p.hosts == ("h01", "h04") and p.supernodes == ("h01", "h04")
    inside = f.path("h01/gpu2", "h01/gpu7")
    assert inside.tier == Tier.INTRA_HOST and inside.nics == () and inside.switches == () and inside.cables == ()


def test_scalable_units_and_spines_route_across_leaves_through_one_spine():
    f = hgx(16, "fabric: {scalable_unit: 8, spines: 2}\n").fabric
    assert len(f.leaf_names) == 16 and f.spine_names == ("spine0", "spine1")
    same = f.path("h02/gpu3", "h07/gpu3")
    assert same.switches == ("leaf:su0-rail3",)  # one leaf: no spine on the path
    across = f.path("h02/gpu3", "h10/gpu3")
    assert across.switches[:2] == ("leaf:su0-rail3", "leaf:su1-rail3") and across.switches[2].startswith("spine:")
    # the uplinks follow the 8 host ports; a spine's port is the leaf's place among its leaves
    spine = across.switches[2]
    si = f.spine_index[parse_switch(spine)[1]]
    assert across.cables[2:] == (f"leaf:su0-rail3[{9 + si}]<->{spine}[4]", f"leaf:su1-rail3[{9 + si}]<->{spine}[12]")
    # the spine of a leaf pair is fixed (a flow keeps its path), and both spines carry some leaf pairs
    assert set(f.spines_between(np.arange(16), np.roll(np.arange(16), 3)).tolist()) == {0, 1}
    assert f.path("h02/gpu3", "h10/gpu3") == across


def test_spines_joined_by_rail_and_two_leaves_without_a_common_spine():
    f = hgx(16, "fabric:\n  scalable_unit: 8\n  spines: [{name: s-even, rails: [0, 2, 4, 6]}, "
                "{name: s-odd, rails: [1, 3, 5, 7]}]\n").fabric
    assert f.path("h01/gpu1", "h09/gpu1").switches[-1] == "spine:s-odd"
    assert f.path("h01/gpu0", "h09/gpu0").switches[-1] == "spine:s-even"
    assert f.rails_of("spine:s-odd") == (1, 3, 5, 7)
    a, b = np.array([f.card_position("h01/gpu0")]), np.array([f.card_position("h09/gpu1")])
    assert f.spines_between(f.card_leaf[a], f.card_leaf[b]).tolist() == [-1]   # no declared spine joins them


def test_an_explicit_leaf_map_names_leaves_and_ports():
    leaves = "".join(f"    - {{name: l{r}, rail: {r}, hosts: 'h[01-04]', first_port: 11}}\n" for r in range(7))
    f = hgx(4, "fabric:\n  leaves:\n" + leaves + "    - {name: odd, ports: {h01/nic7: 5, h02/nic7: 7, h03/nic7: 1, "
            "h04/nic7: 2}}\n  spines: [core]\n").fabric
    assert f.leaf_of("h02/nic3") == "leaf:l3" and f.cable_of("h02/nic3") == "h02/nic3<->leaf:l3[12]"
    assert f.cable_of("h02/nic7") == "h02/nic7<->leaf:odd[7]"
    assert f.cable_at("leaf:odd[8]") == "leaf:odd[8]<->spine:core[8]"   # after the leaf's highest host port
    assert f.nics_of("leaf:odd") == ("h01/nic7", "h02/nic7", "h03/nic7", "h04/nic7")
    assert f.hosts_of("leaf:l3") == ("h01", "h02", "h03", "h04")
    assert len(f.nics_of("spine:core")) == 32


@pytest.mark.parametrize("block, message", [
    ("fabric: {scalable_unit: 0}\n", "inv.yaml:6: fabric.scalable_unit: must be an integer from 1"),
    ("fabric: {racks: 2}\n", "unknown key 'racks' in fabric"),
    ("fabric:\n  leaves:\n    - {name: a, rail: 0, hosts: 'h[01-02]'}\n    - {name: b, rail: 0, hosts: h02}\n",
     "inv.yaml:9: h02/nic0 hangs off two leaves: a and b"),
    ("fabric:\n  leaves:\n    - {name: a, rail: 0, hosts: 'h[01-02]'}\n", "h01/nic1 hangs off no leaf"),
    ("fabric:\n  leaves:\n    - {name: a, rail: 8, hosts: h01}\n", "h01 has 8 cards, so no rail 8"),
    ("fabric:\n  leaves:\n    - {name: a, rail: 0, hosts: h09}\n", "host 'h09' is in no supernode"),
    ("fabric:\n  leaves:\n    - {name: a, ports: {h01/nic0: 1, h02/nic0: 1}}\n", "leaf a port 1 is cabled twice"),
    ("fabric:\n  leaves:\n    - {name: 'a:b', rail: 0, hosts: h01}\n", "fabric.leaves[0].name: 'a:b' must be letters"),
    ("fabric:\n  leaves:\n    - {name: a, ports: {h01/gpu0: 1}}\n", "'h01/gpu0' is not a NIC id"),
    ("fabric: {scalable_unit: 1, spines: [{name: s, leaves: [su9-rail0]}]}\n",
     "spine s: 'su9-rail0' is not a leaf of the fabric"),
    ("fabric: {spines: [s, s]}\n", "duplicate spine name 's'"),
    ("fabric: {spines: true}\n", "fabric.spines: must be a count"),
    ("fabric: {scalable_unit: 2, leaves: []}\n", "give scalable_unit or leaves, not both"),
])
def test_a_bad_fabric_block_names_the_file_and_line(block, message):
    with pytest.raises(ConfigError) as e:
        hgx(2, block)
    assert message in str(e.value), str(e.value)


def test_switches_ports_and_cables_are_entities_of_the_cluster():
    t = hgx(16, "fabric: {scalable_unit: 8, spines: 2}\n")
    assert EntityKind.SWITCH == "switch"
    for entity in ("leaf:su1-rail3", "spine:spine1", "leaf:su1-rail3[2]", "h10/nic3<->leaf:su1-rail3[2]",
                   "leaf:su1-rail3[9]<->spine:spine0[12]", "leaf:su1-rail3[10]"):
        assert t.is_entity(entity), entity
    for entity in ("leaf:su2-rail3", "spine:spine2", "leaf:su1-rail3[11]", "h10/nic3<->leaf:su1-rail3[3]",
                   "leaf:su1-rail3[9]<->spine:spine1[12]", "leaf:su1-rail3[0]", "leaf:"):
        assert not t.is_entity(entity), entity
    assert is_switch("leaf:su1-rail3") and not is_switch("leaf:su1-rail3[2]") and not is_switch("h01")


def test_covering_switches_names_the_leaf_that_serves_every_symptom():
    f = hgx(16, "fabric: {scalable_unit: 8, spines: 2}\n").fabric
    nics = [f"h{i:02d}/nic3" for i in range(1, 9)]
    best = f.covering_switches(nics)[0]
    assert best.switch == "leaf:su0-rail3" and best.explains == tuple(nics) and best.others == 0
    part = f.covering_switches(nics[:5])[0]
    assert part.switch == "leaf:su0-rail3" and part.others == 3  # evidence against it: f.nics_of lists them
    assert f.covering_switches(["h01/nic3"]) == []
    assert [c.switch for c in f.covering_switches(nics)] == ["leaf:su0-rail3"]   # no spine for one leaf's NICs
    both = f.covering_switches(["h01/nic3", "h02/nic3", "h09/nic3", "h10/nic3"])
    assert {c.switch for c in both} == {"leaf:su0-rail3", "leaf:su1-rail3", "spine:spine0", "spine:spine1"}
    assert both[0].switch.startswith("spine:") and both[0].others == 128 - 4


def test_crosses_says_which_measured_pairs_go_through_an_element():
    t = hgx(16, "fabric: {scalable_unit: 8, spines: 2}\n")
    f = t.fabric
    pos = f.card_position
    rail_pair = Measured(np.array([pos("h01/gpu3")]), np.array([pos("h10/gpu3")]))
    path = f.path("h01/gpu3", "h10/gpu3")
    for element in (*path.shared, "h01/nic3", "h10/nic3", "leaf:su0-rail3[1]"):
        assert f.crosses(element, rail_pair), element
    for element in ("h02/nic3", "leaf:su0-rail2", "h01/gpu3<->h10/gpu2", "leaf:su0-rail3[2]"):
        assert not f.crosses(element, rail_pair), element
    other = ({"spine:spine0", "spine:spine1"} - {path.switches[2]}).pop()
    assert not f.crosses(other, rail_pair)
    # an all-to-all group measures every pair among its members
    group = Measured(np.zeros(0, np.int64), np.zeros(0, np.int64), (np.array([pos(f"h{i:02d}/gpu3") for i in (1, 2, 9)]),))
    assert f.crosses("h01/gpu3<->h09/gpu3", group) and f.crosses("leaf:su1-rail3", group)
    assert not f.crosses("leaf:su1-rail2", group)
