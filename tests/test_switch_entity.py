"""A scale-out switch as an entity (DESIGN.md identifiers): its kind, its evidence, its
isolation (the switch, never a mask per card, held to the same cap) and how each output shows
a switch finding."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.run.inputs import load_inventory_text
from sncheck.health.policy import check_cap, decide, entity_kind
from sncheck.report.junit import render_junit
from sncheck.store.results import from_json
from sncheck.report.prometheus import render_prometheus
from sncheck.topology import Topology

HOSTS = 16


def inventory_text() -> str:
    sns = "".join(f"  - {{name: h{i:02d}, hosts: h{i:02d}}}\n" for i in range(1, HOSTS + 1))
    return f"name: hgx\nplatform: nvidia-hgx\nsupernodes:\n{sns}fabric: {{scalable_unit: 8, spines: 2}}\n"


TOPO = Topology(load_inventory_text(inventory_text(), "inv.yaml"))
RAIL3 = [f"h{i:02d}/nic3" for i in range(1, 9)]


def test_a_switch_is_its_own_kind_and_its_evidence_lists_what_it_explains():
    assert entity_kind("leaf:su0-rail3") == "switch" and entity_kind("spine:spine0") == "switch"
    assert entity_kind("h01/nic3<->leaf:su0-rail3[1]") == "link"   # a cable
    assert decide("leaf:su0-rail3", "switch", True, None, datetime.now(timezone.utc)) == "isolate"
    ev = TOPO.fabric.switch_evidence("leaf:su0-rail3", RAIL3)
    assert ev["nics"] == RAIL3 and ev["ports"] == [f"leaf:su0-rail3[{i}]" for i in range(1, 9)]
    assert ev["hosts"] == [f"h{i:02d}" for i in range(1, 9)] and ev["rails"] == [3] and ev["serves"] == 8
    spine = TOPO.fabric.switch_evidence("spine:spine0", ["h01/nic3", "h09/nic3"])
    assert spine["ports"] == ["spine:spine0[4]", "spine:spine0[12]"] and spine["serves"] == 128


def test_a_switch_counts_its_drained_rail_against_the_cap():
    switch = {"entity": "leaf:su0-rail3", "entity_kind": "switch", "action": "isolate"}
    cards = {"leaf:su0-rail3": [f"h{i:02d}/gpu3" for i in range(1, 9)]}
    held = check_cap([switch], 128, 16, 0.05, switch_cards=cards)
    assert held.cards == 8 and held.hosts == 0 and held.ok   # one host's worth of cards: allowed
    spine = {"entity": "spine:spine0", "entity_kind": "switch", "action": "isolate"}
    wide = check_cap([switch, spine], 128, 16, 0.05,
                     switch_cards={**cards, "spine:spine0": [f"h{i:02d}/gpu{r}" for i in range(1, 17) for r in range(8)]})
    assert not wide.ok and wide.cards == 128 and "safety cap" in wide.message
    # a card masked beside the switch that drains its rail is one card, not two
    both = check_cap([switch, {"entity": "h01/gpu3", "entity_kind": "card", "action": "isolate"}], 128, 16, 0.05,
                     switch_cards=cards)
    assert both.cards == 8


def test_isolating_a_switch_masks_no_card_and_says_repair_switch(tmp_path: Path):
    inv = tmp_path / "inv.yaml"
    inv.write_text(inventory_text())
    result = CliRunner().invoke(main, ["isolate", "leaf:su0-rail3", "-i", str(inv), "--via", "hostfile",
                                       "--via", "cuda_visible_devices", "--state-dir", str(tmp_path / "state"),
                                       "--apply"])
    assert result.exit_code == 0, result.output
    assert "repair switch leaf:su0-rail3: it carries rail 3 of 8 hosts (h01, h02, h03, h04 and 4 more)" in result.output
    assert "no card is masked" in result.output
    # no file masks a card: the file actions leave the switch to its operator
    assert not (tmp_path / "state" / "cuda_visible_devices.json").exists()
    assert not (tmp_path / "state" / "hostfile.txt").exists()
    card = CliRunner().invoke(main, ["isolate", "h01/gpu2", "-i", str(inv), "--via", "cuda_visible_devices",
                                     "--state-dir", str(tmp_path / "state"), "--apply"])
    assert card.exit_code == 0, card.output
    visible = json.loads((tmp_path / "state" / "cuda_visible_devices.json").read_text())
    assert visible["h01"] == "0,1,3,4,5,6,7" and visible["h02"] == "0,1,2,3,4,5,6,7"   # rail 3 still in use
    bad = CliRunner().invoke(main, ["isolate", "leaf:su9-rail3", "-i", str(inv), "--via", "hostfile"])
    assert bad.exit_code == 2 and "is not a card, host or switch of inventory hgx" in bad.output, bad.output


def _results() -> dict:
    ev = TOPO.fabric.switch_evidence("leaf:su0-rail3", RAIL3)
    return {"schema": "sncheck.run/1", "run_id": "r1", "playbook": "p", "backend": "mock", "inventory": "hgx",
            "verdict": "fail", "gate": "critical",
            "topology": {"supernodes": [{"name": f"h{i:02d}", "hosts": [f"h{i:02d}"]} for i in range(1, HOSTS + 1)]},
            "layers": [{"name": "connectivity", "verdict": "fail", "summary": {}}],
            "findings": [{"entity": "leaf:su0-rail3", "entity_kind": "switch", "layer": "connectivity",
                          "rule": "p2p-bandwidth-below-design", "severity": "critical",
                          "message": "leaf:su0-rail3: the 8 NICs on it at 0.50 of design", "evidence": ev}],
            "isolation": [{"entity": "leaf:su0-rail3", "entity_kind": "switch", "action": "isolate",
                           "reason": "confirmed", "applied": False}]}


def test_junit_fails_the_hosts_behind_the_switch_and_only_them():
    xml = render_junit(from_json(_results()))
    failed = [line for line in xml.splitlines() if "<testcase" in line]
    bad = [c for c in xml.split("<testcase")[1:] if "<failure" in c.split("</testcase>")[0]]
    assert len(failed) == HOSTS and len(bad) == 8
    assert all(f'name="h{i:02d}"' in "".join(bad) for i in range(1, 9))
    assert 'name="h09"' not in "".join(bad)


def test_prometheus_exports_the_switch_and_the_nics_it_explains():
    text = render_prometheus(from_json(_results()), None)
    assert 'sncheck_switch_finding_nics{switch="leaf:su0-rail3",rule="p2p-bandwidth-below-design",' \
           'severity="critical"} 8' in text
    assert 'sncheck_isolation_applied{entity="leaf:su0-rail3",entity_kind="switch",action="isolate"} 0' in text


def test_a_switch_retest_measures_pairs_through_it():
    """Every switch's retest sample holds pairs through that switch: one card per host (each
    host's card 0, one rail) routed rail 0's two leaves through one spine, and the other
    spine, slow at 0.47, was re-measured through nothing and released."""
    import numpy as np

    from sncheck.run.confirm import cards_of
    from sncheck.run.controls import DOMAIN_SAMPLE, switch_sample

    fabric = TOPO.fabric
    for switch in fabric.switches:
        sample = switch_sample(TOPO, switch, cards_of(switch, TOPO, "switch"))
        pos = np.array([fabric.card_position(c) for c in sample], np.int64)
        i, j = np.triu_indices(len(sample), k=1)
        through = int(fabric.through(switch, pos[i], pos[j]).sum())
        hosts = {c.split("/")[0] for c in sample}  # spread: a host twice only once every host is in
        assert 2 <= len(sample) <= DOMAIN_SAMPLE and len(hosts) == min(len(sample), len(fabric.hosts_of(switch)))
        assert through >= len(sample) - 1, (switch, sample, through)  # every card on a pair through it
        assert all(c in cards_of(switch, TOPO, "switch") for c in sample)
