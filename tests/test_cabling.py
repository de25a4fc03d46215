"""Cabling and switch-port counters judged on plain data (sncheck.health.cabling), and the
topology reader's naming, on the real ibnetdiscover capture of the ibsim fabric: what a
discovery can get wrong is a finding, never a guess."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sncheck.run.inputs import load_inventory_text
from sncheck.fabric import Cabling, Fabric
from sncheck.health.cabling import cabling_findings, counter_growth_findings, growth_bars
from sncheck.health.rules import load_rules
from sncheck.vendors import registry
from sncheck.vendors.parsers import strip_source_header

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures/real/ib-fabric/01_ibnetdiscover_ibsim_2leaf_1spine_8hosts_2rails.txt"
INVENTORY = ("name: ib8\nsupernodes:\n  - {name: a, hosts: 'h[01-04]', cards_per_host: 2}\n"
             "  - {name: b, hosts: 'h[05-08]', cards_per_host: 2}\nfabric:\n  spines: [spine0]\n")
FABRIC = Fabric(load_inventory_text(INVENTORY, "ib8.yaml"))
DISC = registry.fabric_discovery()
PARSED = DISC.parse_topology(strip_source_header(CAPTURE.read_text()))
CARDS = {f"h0{i}": 2 for i in range(1, 9)}


def test_the_capture_reads_as_the_fabric_but_for_its_one_moved_nic():
    found = DISC.cabling(PARSED, CARDS)
    declared = FABRIC.declared_cabling()
    assert found.uplinks == declared.uplinks and found.unread == {} and found.strays == ()
    assert {n for n in declared.nics if found.nics[n] != declared.nics[n]} == {"h05/nic1"}
    assert [f.entity for f in cabling_findings(FABRIC, found)] == ["h05/nic1<->leaf:su0-rail1[5]"]


def test_rails_are_never_guessed_and_strays_are_not_judged():
    # an inventory with 3 cards on h02: its two adapters cannot say which rails they are
    found = DISC.cabling(PARSED, {**CARDS, "h02": 3})
    assert "h02" in found.unread and not any(n.startswith("h02/") for n in found.nics)
    inv = load_inventory_text(INVENTORY.replace("'h[01-04]', cards_per_host: 2}",
                                                "'h[01-04]', cards_per_host: 2}\n  - {name: c, hosts: h09, "
                                                "cards_per_host: 2}"), "ib9.yaml")
    findings = cabling_findings(Fabric(inv), DISC.cabling(PARSED, {**CARDS, "h09": 2}))
    assert ("h09", "host") in {(f.entity, f.entity_kind) for f in findings}   # no adapter of it: one finding
    assert not any(f.entity.startswith("h09/") for f in findings)
    fewer = DISC.cabling(PARSED, {h: 2 for h in list(CARDS)[:4]})     # h05-h08 belong to another cluster
    assert len(fewer.strays) == 8 and set(fewer.nics) == {f"h0{i}/nic{r}" for i in range(1, 5) for r in (0, 1)}


def test_uplinks_missing_moved_or_undeclared_are_findings():
    declared = FABRIC.declared_cabling()
    moved = replace(declared, uplinks={("su0-rail0", 9): ("spine0", 7), ("su0-rail1", 10): ("spine0", 2)})
    said = {f.entity: f.message for f in cabling_findings(FABRIC, moved)}
    assert "leaf:su0-rail0[9] is found on spine:spine0[7]" in said["leaf:su0-rail0[9]<->spine:spine0[1]"]
    assert "is not cabled" in said["leaf:su0-rail1[9]<->spine:spine0[2]"]
    assert "does not declare it" in said["leaf:su0-rail1[10]<->spine:spine0[2]"]
    gone = replace(declared, nics={k: v for k, v in declared.nics.items() if k != "h01/nic0"})
    assert [f.message for f in cabling_findings(FABRIC, gone)] == [
        "h01/nic0 is not cabled: the fabric has no link from it (declared on leaf:su0-rail0[1])"]


def test_counters_judge_growth_only_between_two_reads():
    found = Cabling({"h03/nic0": ("su0-rail0", 3)}, {("su0-rail0", 9): ("spine0", 1)})
    before = {"leaf:su0-rail0[3]": {"symbol_error": 5, "link_downed": 2}, "spine:spine0[1]": {"port_rcv_errors": 0}}
    after = {"leaf:su0-rail0[3]": {"symbol_error": 5, "link_downed": 2}, "spine:spine0[1]": {"port_rcv_errors": 3},
             "leaf:su0-rail0[4]": {"symbol_error": 900}}   # not read before: not judged
    bars = growth_bars(load_rules().rules)
    (new, f) = counter_growth_findings(before, after, found, bars)   # in port order
    assert f.entity == "leaf:su0-rail0[9]<->spine:spine0[1]" and f.evidence["switch_port"] == "spine:spine0[1]"
    assert new.not_judged and new.evidence["switch_port"] == "leaf:su0-rail0[4]"  # growth unknown: never a pass
    del after["leaf:su0-rail0[4]"]
    # a counter read lower (reset, wrapped, another port): no growth, and not judged either (it
    # passed: hostile round 8, H8-05)
    (lower,) = counter_growth_findings(after, before, found, bars)
    assert lower.not_judged and lower.evidence["counters"] == {"port_rcv_errors": {"before": 3, "after": 0,
                                                                                   "growth": None}}
    (bare,) = counter_growth_findings({"leaf:x[7]": {"symbol_error": 0}}, {"leaf:x[7]": {"symbol_error": 1}},
                                      None, bars)
    assert bare.entity == "leaf:x[7]"   # nothing known cabled there: the port itself


def test_switch_names_hold_no_id_delimiter():
    assert DISC.switch_name("MF0;ib-leaf-01:MQM9700/U1") == "MF0-ib-leaf-01-MQM9700-U1"
    assert DISC.switch_name("  ") == "unnamed"
