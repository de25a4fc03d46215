"""A baseline judges the fleet it was made on: ``baseline make`` records the inventory its runs
measured, refuses runs of two inventories, and a run given a baseline of another inventory is
refused naming both (hostile round 17's open case: another fleet's norms judged a run without
a word, exit 0). A baseline written before it said its inventory is taken as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures/inventories/demo-2sn.yaml"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    """demo-2sn and the same fleet under another name ('other-fleet'), one passing connectivity
    run each, kept in one state store."""
    tmp = tmp_path_factory.mktemp("fleets")
    other = tmp / "other.yaml"
    other.write_text(DEMO.read_text().replace("name: demo-2sn", "name: other-fleet", 1))
    for inv, out in ((DEMO, "demo"), (other, "other")):
        r = invoke("connectivity", "-i", inv, "--backend", "mock", "--out", tmp / out, "--state-dir", tmp / "state", "-q")
        assert r.exit_code == 0, r.output
    return tmp, other


def test_a_baseline_records_its_inventory_and_refuses_runs_of_two(fleets):
    tmp, _ = fleets
    r = invoke("baseline", "make", tmp / "demo", "--out", tmp / "demo.json")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp / "demo.json").read_text())["inventory"] == "demo-2sn"
    r = invoke("baseline", "make", tmp / "demo", tmp / "other", "--out", tmp / "mixed.json")
    assert r.exit_code == 2, r.output
    assert "measured inventory 'other-fleet'" in r.output and "'demo-2sn'" in r.output
    assert not (tmp / "mixed.json").exists()


def test_a_run_given_another_inventorys_baseline_is_refused_naming_both(fleets):
    tmp, other = fleets
    assert invoke("baseline", "make", tmp / "demo", "--out", tmp / "b.json").exit_code == 0
    r = invoke("connectivity", "-i", other, "--backend", "mock", "--baseline", tmp / "b.json", "--out", tmp / "x", "-q")
    assert r.exit_code == 2, r.output  # before: exit 0, judged against demo-2sn's norms
    assert "was made from runs of inventory 'demo-2sn'; this run's inventory is 'other-fleet'" in r.output
    assert str(tmp / "b.json") in r.output and len(r.output.strip().splitlines()) == 1
    # its own fleet's run takes it
    r = invoke("connectivity", "-i", DEMO, "--backend", "mock", "--baseline", tmp / "b.json", "--out", tmp / "y", "-q")
    assert r.exit_code == 0, r.output


def test_a_baseline_without_its_inventory_is_taken_as_before(fleets):
    tmp, other = fleets
    assert invoke("baseline", "make", tmp / "demo", "--out", tmp / "c.json").exit_code == 0
    old = json.loads((tmp / "c.json").read_text())
    del old["inventory"]
    (tmp / "old.json").write_text(json.dumps(old))
    r = invoke("connectivity", "-i", other, "--backend", "mock", "--baseline", tmp / "old.json", "--out", tmp / "z", "-q")
    assert r.exit_code == 0, r.output


def test_a_baseline_from_a_state_store_of_two_inventories_names_one(fleets):
    tmp, _ = fleets
    r = invoke("baseline", "make", "--from-state", tmp / "state", "--out", tmp / "s.json")
    assert r.exit_code == 2, r.output
    assert "the runs are of inventories 'demo-2sn', 'other-fleet'" in r.output
    r = invoke("baseline", "make", "--from-state", tmp / "state", "-i", "other-fleet", "--out", tmp / "s.json")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp / "s.json").read_text())["inventory"] == "other-fleet"


def _made_with(fleets, tmp_path: Path, findings: list[dict]):
    """``baseline make`` of the demo run with ``findings`` for its record's (as a run of them wrote it)."""
    tmp, _ = fleets
    run = tmp_path / "run"
    shutil.copytree(tmp / "demo", run)
    record = json.loads((run / "results.json").read_text())
    record["findings"] = findings
    (run / "results.json").write_text(json.dumps(record))
    return invoke("baseline", "make", run, "--out", tmp_path / "b.json")


def test_a_baseline_leaves_out_what_the_runs_findings_named_released_or_not(fleets, tmp_path):
    # review17 #5: a passing run's transient NIC, found at 0.4 and released by its retest, gave its
    # card a 'known-good' level of 0.7 of the others'; a later night at 0.8 of design read above 0.9 of it
    released = {"entity": "node003/nic2", "entity_kind": "nic", "layer": "connectivity",
                "rule": "p2p-bandwidth-below-design", "severity": "info", "gates": False,
                "message": "nic node003/nic2: ... (not reproduced by the confirmation retest; released)",
                "evidence": {"severity_before_retest": "critical", "confirmed": False},  # as a release writes it
                "not_measured": False, "not_judged": False}
    host = {**released, "entity": "node010", "entity_kind": "host"}
    r = _made_with(fleets, tmp_path, [released, host])
    assert r.exit_code == 0, r.output
    assert "left out" in r.output and "node003/nic2, node010" in r.output
    made = json.loads((tmp_path / "b.json").read_text())
    assert made["left_out"] == ["node003/nic2", "node010"]
    cards = made["metrics"]["p2p_bandwidth"]["card"]
    assert "node003/gpu2" not in cards["scale_out"] and "node003/gpu2" in cards["scale_up"]  # a NIC: its scale-out pairs
    assert not any(c.startswith("node010/") for t in cards.values() for c in t)
    assert "node003/gpu1" in cards["scale_out"]  # the others kept


def test_an_info_finding_from_the_start_leaves_its_card_in_the_baseline(fleets, tmp_path):
    # reviews18 #2 addendum: fabric-errors-before-run (info: a counter already above zero when the run
    # began, an old burst nobody cleared) left node001/gpu0 out of every tier (39 rows), so a card
    # measured healthy lost its known-good level; a released suspect beside it is still left out
    old_burst = {"entity": "node001/gpu0", "entity_kind": "card", "layer": "connectivity",
                 "rule": "fabric-errors-before-run", "severity": "info", "gates": False,
                 "message": "card node001/gpu0: fabric error counters already above zero",
                 "evidence": {"counters": {"replay_errors": {"before": 3, "after": 3, "growth": 0}}},
                 "not_measured": False, "not_judged": False}
    released = {**old_burst, "entity": "node004/gpu1", "rule": "p2p-bandwidth-below-design",
                "message": "card node004/gpu1: ... (not reproduced by the confirmation retest; released)",
                "evidence": {"severity_before_retest": "warning", "confirmed": False}}
    r = _made_with(fleets, tmp_path, [old_burst, released])
    assert r.exit_code == 0, r.output
    made = json.loads((tmp_path / "b.json").read_text())
    assert made["left_out"] == ["node004/gpu1"], made.get("left_out")
    cards = made["metrics"]["p2p_bandwidth"]["card"]
    assert all("node001/gpu0" in cards[t] for t in ("intra_host", "scale_up", "scale_out")), cards.keys()
    assert not any("node004/gpu1" in c for c in cards.values())


def _group(sn: str, layer: str) -> dict:
    """A supernode's group symptom, released by its retest, as a run of it wrote it."""
    return {"entity": sn, "entity_kind": "supernode", "layer": layer, "rule": "collective-group-slow",
            "severity": "info", "message": f"{sn}: ... (released)",
            "evidence": {"severity_before_retest": "warning", "confirmed": False},
            "not_measured": False, "not_judged": False}


def test_a_released_group_symptom_of_the_collectives_leaves_no_pair_out(fleets, tmp_path):
    # reviews20 #7: a passing gate's released collective-group-slow on rail:sn0:gpu2 (supernode sn0) took
    # every pair with an end in sn0 out of the baseline, demo-2sn's whole scale-out tier with it: every
    # later gate against it on the healthy fleet failed 'baseline-not-judged'. The stress layer measured no
    # pair row; connectivity measured and judged them clean: a released symptom is no hole
    r = _made_with(fleets, tmp_path, [_group("sn0", "stress"), _group("sn1", "golden")])
    assert r.exit_code == 0, r.output
    made = json.loads((tmp_path / "b.json").read_text())
    assert "left_out" not in made and "left out" not in r.output, r.output
    bw = made["metrics"]["p2p_bandwidth"]
    assert set(bw["tier"]) == {"intra_host", "scale_up", "scale_out"}
    assert "node003/gpu2" in bw["card"]["scale_out"] and "node012/gpu1" in bw["card"]["scale_up"]


def test_a_run_whose_every_row_or_tier_a_suspect_measured_says_so(fleets, tmp_path):
    # a symptom of the pairs themselves (connectivity's) held every supernode suspect: every row left out;
    # the refusal said 'the runs hold no rows'
    r = _made_with(fleets, tmp_path, [_group(sn, "connectivity") for sn in ("sn0", "sn1")])
    assert r.exit_code == 2 and not (tmp_path / "b.json").exists(), r.output
    assert "every measurement row was left out: the runs' findings held suspect sn0, sn1" in r.output, r.output
    # one supernode of two: every scale-out pair has an end in it; a baseline without the tier the run
    # measured would fail every later gate, so it is refused, the tier named
    r = _made_with(fleets, tmp_path / "one", [_group("sn0", "connectivity")])
    assert r.exit_code == 2 and not (tmp_path / "one/b.json").exists(), r.output
    assert "every scale_out pair was left out: the runs' findings held suspect sn0" in r.output, r.output


def test_a_nic_cable_named_leaves_its_nics_scale_out_pairs_out_of_a_baseline() -> None:
    """A NIC's cable to its leaf (``<host>/nic<r><->leaf:<name>[<port>]``) is the NIC's path: its card's
    scale-out pairs are a suspect's values, as the NIC's own (the round's quick review: it matched no
    pair as a card-to-card link, and was listed as left out while its pairs stayed)."""
    import pandas as pd
    from sncheck.health.baseline import named_rows
    from sncheck.model import EntityKind, Finding, Severity
    frame = pd.DataFrame({"src": ["a1/gpu0", "a1/gpu0", "a1/gpu1", "b1/gpu0"],
                          "dst": ["b1/gpu0", "a1/gpu1", "b1/gpu1", "c1/gpu0"],
                          "tier": ["scale_out", "intra_host", "scale_out", "scale_out"]})
    f = Finding("a1/nic0<->leaf:l1[1]", EntityKind.LINK, "connectivity", "p2p-bandwidth-below-design",
                Severity.CRITICAL, "slow cable", {})
    mask, named = named_rows(frame, (f,), {})
    assert mask.tolist() == [True, False, False, False] and named == ["a1/nic0<->leaf:l1[1]"]


def test_a_baseline_from_the_state_store_leaves_out_a_released_nics_card(tmp_path: Path) -> None:
    """The round's leftover of review17 #5: `baseline make --from-state` took every stored card level,
    a NIC found at 0.4 and released by its retest (a transient) included: its card's scale-out level
    became known-good. Left out now, as `baseline make RUN_DIR` leaves its rows out."""
    faults = tmp_path / "faults.yaml"
    faults.write_text("faults: [{type: slow_nic, target: node003, port: 3, factor: 0.4, transient: true}]\n")
    r = invoke("connectivity", "-i", DEMO, "--backend", "mock", "--faults", faults, "--out", tmp_path / "run",
               "--state-dir", tmp_path / "state", "-q")
    assert r.exit_code == 0, r.output  # the retest released it: a pass, with the NIC on record at info
    found = json.loads((tmp_path / "run/results.json").read_text())["findings"]
    assert any(f["entity"] == "node003/nic2" and f["severity"] == "info" for f in found), found
    r = invoke("baseline", "make", "--from-state", tmp_path / "state", "--out", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    made = json.loads((tmp_path / "b.json").read_text())
    cards = made["metrics"]["p2p_bandwidth"]["card"]
    assert "node003/gpu2" not in cards["scale_out"] and "node003/gpu2" in cards["scale_up"]
    assert "node003/gpu1" in cards["scale_out"] and made["left_out"] == ["node003/nic2"]
    assert "left out the card levels" in r.output and "node003/nic2" in r.output


def test_a_card_the_baseline_left_out_is_judged_against_its_tier(fleets, tmp_path: Path) -> None:
    """review18 #10: a baseline leaves out a card its run named (released or not); the next clean run
    with it failed on that card's supernode ('baseline-not-judged', critical), every night. The card is
    judged against its tier's baseline value instead: clean passes, slowed it is named."""
    tmp, _ = fleets
    assert invoke("baseline", "make", tmp / "demo", "--out", tmp_path / "b.json").exit_code == 0
    made = json.loads((tmp_path / "b.json").read_text())
    for tier in made["metrics"]["p2p_bandwidth"]["card"].values():
        tier.pop("node003/gpu2", None)  # as baseline make leaves a named card out
    (tmp_path / "b.json").write_text(json.dumps(made))
    clean = invoke("connectivity", "-i", DEMO, "--backend", "mock", "--baseline", tmp_path / "b.json",
                   "--seed", "4", "--out", tmp_path / "clean", "-q")
    assert clean.exit_code == 0, clean.output
    faults = tmp_path / "f.yaml"
    faults.write_text("faults: [{type: slow_card, target: node003/gpu2, factor: 0.85}]\n")
    slow = invoke("connectivity", "-i", DEMO, "--backend", "mock", "--baseline", tmp_path / "b.json",
                  "--faults", faults, "--seed", "4", "--out", tmp_path / "slow", "-q")
    found = json.loads((tmp_path / "slow/results.json").read_text())["findings"]
    assert not any(f["rule"] == "baseline-not-judged" for f in found), found
    named = {(f["entity"], f["rule"]) for f in found}
    related = {(f["entity"], r["rule"]) for f in found for r in f["evidence"].get("related", [])}
    assert ("node003/gpu2", "p2p-bandwidth-below-baseline") in named | related, (slow.output, named)


@pytest.mark.parametrize("topology", [[1, 2], "sn0", {"supernodes": {"sn0": ["node001"]}}, {"supernodes": [["node001"]]}])
def test_a_record_whose_topology_is_no_mapping_is_refused_in_one_line(fleets, tmp_path: Path, topology) -> None:
    """review18 #3: `diff` and `baseline make` of a results.json whose topology is a list raised an
    internal error (exit 3, a crash log): named_rows and the summaries read it unchecked."""
    tmp, _ = fleets
    run = tmp_path / "run"
    shutil.copytree(tmp / "demo", run)
    record = json.loads((run / "results.json").read_text())
    record["topology"] = topology
    (run / "results.json").write_text(json.dumps(record))
    for args in (("baseline", "make", run, "--out", tmp_path / "b.json"), ("diff", tmp / "demo", run)):
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.output)
        assert "topology is not a mapping" in r.output and "internal error" not in r.output, r.output


def test_the_state_store_keeps_the_card_levels_a_released_group_symptom_named() -> None:
    """reviews20 #7, the state path: a run with a supernode named gave no card level at all; a released
    group symptom of the collectives keeps them, a released card of the pairs still leaves its own out."""
    from sncheck.health.history import _without_named
    from sncheck.store.results import finding_from_json
    summ = {("card", c, "p2p_bandwidth/scale_up"): (450.0, 1.0, 7) for c in ("a1/gpu0", "a1/gpu1")}
    card = {**_group("a1/gpu1", "connectivity"), "entity_kind": "card"}
    kept, named = _without_named(summ, tuple(map(finding_from_json, (_group("sn0", "stress"), card))))
    assert list(kept) == [("card", "a1/gpu0", "p2p_bandwidth/scale_up")] and named == ["a1/gpu1"]
