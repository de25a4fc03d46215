"""The fleet cap over a run's isolations is applied entity by entity in order of evidence: what fits is
applied, what does not is named; a switch counts what its isolation takes out (repair advice: no card)
(reviews20 #17, and #5's blocked card)."""

from __future__ import annotations

import json
from pathlib import Path

from sncheck.actions.batch import apply_run_isolation
from sncheck.run.inputs import load_inventory
from tests.test_cli_ops import INVENTORY, entry, finding, run_results

VIA = ["hostfile", "cuda_visible_devices"]


def _isolate(state: Path, isolations: list[tuple[str, str]], severity: dict[str, str]):
    findings = [{**finding(e, k), "severity": severity.get(e, "critical"),
                 "evidence": {**finding(e, k)["evidence"], "confirmed": True}} for e, k in isolations]
    results = run_results("20261208T010000Z-cap1", [entry(e, k, "isolate") for e, k in isolations], findings)
    return apply_run_isolation(results, load_inventory(INVENTORY), state, VIA, apply=True)


def test_a_domain_over_the_cap_leaves_a_confirmed_card_beside_it_applied(tmp_path):
    # reviews20 #5: a bogus supernode (32 of 64 cards) rode in the batch of a confirmed half-speed card; the cap
    # refused the whole batch ("Nothing was applied") and the card stayed in service.
    done = _isolate(tmp_path / "s", [("sn0", "supernode"), ("node012/gpu2", "card")], {"sn0": "warning"})
    assert [(e.entity, e.applied) for e in done.steps] == [("sn0", False), ("node012/gpu2", True)]
    assert done.blocked is not None and done.blocked.startswith(
        "safety cap: supernode sn0 not applied: with it 33 of 64 cards (51.6%) and 8 of 16 hosts (50.0%) would be out "
        "of service, over the fleet cap of 10%"), done.blocked
    assert "within the cap and applied: node012/gpu2" in done.blocked
    assert json.loads((tmp_path / "s/cuda_visible_devices.json").read_text())["node012"] == "0,1,3"
    held = [r for r in done.records if r.get("blocked_by_cap")]
    assert {r["entity"] for r in held} == {"sn0"} and all(r["outcome"] == "skipped" for r in held)


def test_a_confirmed_leaf_counts_no_card_and_blocks_nothing(tmp_path):
    # reviews20 #17: the leaf's isolation masks no card (repair advice) yet counted its rail's 16 cards
    done = _isolate(tmp_path / "s", [("node012/gpu2", "card"), ("leaf:su0-rail1", "switch")], {})
    assert done.blocked is None
    assert [(e.entity, e.applied) for e in done.steps][0] == ("node012/gpu2", True)
    assert json.loads((tmp_path / "s/cuda_visible_devices.json").read_text())["node012"] == "0,1,3"


def test_the_stronger_evidence_is_admitted_first(tmp_path):
    # two hosts on 16 (the cap allows one): the critical one is applied whatever the order of the steps
    done = _isolate(tmp_path / "s", [("node003", "host"), ("node009", "host")], {"node003": "warning"})
    assert [(e.entity, e.applied) for e in done.steps] == [("node003", False), ("node009", True)]
    assert done.blocked is not None and "host node003 not applied" in done.blocked
