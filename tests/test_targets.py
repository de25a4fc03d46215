"""Scoped re-validation (--targets): only what touches the targets runs, the run says so,
and ``release --after-repair`` releases only on a pass of that scoped run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.run.inputs import load_inventory
from sncheck.probeplan import connectivity_plan, scope_connectivity, scope_groups, stress_groups, target_cards
from sncheck.store.rundir import read_rows
from sncheck.topology import Topology

REPO = Path(__file__).resolve().parents[1]
DEMO = str(REPO / "fixtures" / "inventories" / "demo-2sn.yaml")  # 2 supernodes x 8 hosts x 4 cards


def sncheck(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def topo() -> Topology:
    return Topology(load_inventory(DEMO))


def test_target_cards_take_cards_hosts_hostlists(topo: Topology) -> None:
    assert target_cards(topo, ["node003/gpu2"]) == {"node003/gpu2"}
    assert len(target_cards(topo, ["node[003-004]"])) == 8
    assert target_cards(topo, ["node[003-004]/gpu1,node009/gpu0"]) == {"node003/gpu1", "node004/gpu1", "node009/gpu0"}
    assert len(target_cards(topo, ["sn1"])) == 32
    for bad in (["node099"], ["node003/gpu9"], ["node[3"]):
        with pytest.raises(ConfigError):
            target_cards(topo, bad)


def test_target_cards_take_nics_links_switches_and_cables(topo: Topology) -> None:
    # reviews20 #14: '--targets leaf:su0-rail2' was "bad host name", '--targets node003/nic2' "not a card,
    # host or supernode": a repaired NIC, leaf or cable could not be validated by a scoped run
    assert target_cards(topo, ["node003/nic2"]) == {"node003/gpu2"}
    assert target_cards(topo, ["node003/gpu1<->node011/gpu1"]) == {"node003/gpu1", "node011/gpu1"}
    assert target_cards(topo, ["node003/nic2<->leaf:su0-rail2[3]"]) == {"node003/gpu2"}
    assert target_cards(topo, ["leaf:su0-rail2,node001"]) == {f"node{h:03d}/gpu2" for h in range(1, 17)} | \
        {f"node001/gpu{i}" for i in range(4)}
    for bad in (["leaf:nope"], ["node003/nic9"], ["leaf:su0-rail2[3]"], ["node003/gpu1<->node003/gpu1"]):
        with pytest.raises(ConfigError):
            target_cards(topo, bad)


def test_scoped_plans_touch_the_targets_only(topo: Topology) -> None:
    full = connectivity_plan(topo)
    cards = target_cards(topo, ["node003/gpu2"])
    scoped = scope_connectivity(full, cards)
    pairs = [p for r in scoped.rounds for p in r.pairs]
    # 31 partners in its supernode + rail-aligned gpu2 of the 8 hosts of the other supernode.
    assert full.pair_count == 1248 and scoped.pair_count == len(pairs) == 39
    assert all("node003/gpu2" in p for p in pairs) and scoped.hosts == ("node003",)
    every = {frozenset(p) for r in full.rounds for p in r.pairs if "node003/gpu2" in p}
    assert {frozenset(p) for p in pairs} == every  # none of its pairs left out
    groups = scope_groups(stress_groups(topo), cards)
    # and its rail's cross-supernode group: every rail's scale-out is stressed (reviews19 #2)
    assert {g.id for g in groups} == {"host:node003", "rail:sn0:gpu2", "domain:sn0", "cross:gpu2"}


def test_run_scoped_to_one_card_tests_only_its_pairs(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text("faults:\n  - {type: slow_card, target: node003/gpu2, factor: 0.5}\n"
                      "  - {type: slow_card, target: node010/gpu1, factor: 0.5}\n")
    out = tmp_path / "scoped"
    res = sncheck("run", "post-delivery", "-i", DEMO, "--backend", "mock", "--targets", "node003/gpu2",
                  "--faults", str(faults), "--out", str(out), "-q")
    assert res.exit_code == 1, res.output
    results = json.loads((out / "results.json").read_text())
    assert results["scope"] == {"targets": ["node003/gpu2"], "cards": ["node003/gpu2"], "hosts": ["node003"]}
    assert results["layers"][0]["summary"]["pairs"] == 39
    p2p = [r for r in read_rows(out) if r["kind"] == "p2p" and r.get("round") is not None and r["layer"] == "connectivity"]
    assert p2p and all("node003/gpu2" in (r["src"], r["dst"]) for r in p2p)
    # The slow target is named, its known-good partners are not; node010/gpu1 was out of scope.
    culprits = {f["entity"] for f in results["findings"] if f["severity"] == "critical"}
    assert culprits == {"node003/gpu2"}, results["findings"]
    assert "Scoped run</b>: only what touches node003/gpu2" in (out / "report.html").read_text()

    full = tmp_path / "full"
    res = sncheck("run", "post-delivery", "-i", DEMO, "--backend", "mock", "--out", str(full), "-q")
    assert json.loads((full / "results.json").read_text())["layers"][0]["summary"]["pairs"] == 1248
    assert "scope" not in json.loads((full / "results.json").read_text())


def test_bad_target_is_a_one_line_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["connectivity", "-i", DEMO, "--backend", "mock", "--targets", "node077/gpu1",
                                    "--out", str(tmp_path / "r"), "-q"])
    assert res.exit_code == 2 and "node077/gpu1" in res.output and "Traceback" not in res.output


def test_release_after_repair_releases_only_on_a_pass(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    res = sncheck("isolate", "node003/gpu2", "-i", DEMO, "--via", "cuda_visible_devices", "--apply", "--state-dir", state)
    assert res.exit_code == 0, res.output
    still_bad = tmp_path / "faults.yaml"
    still_bad.write_text("faults:\n  - {type: slow_card, target: node003/gpu2, factor: 0.5}\n")
    res = sncheck("release", "node003/gpu2", "--after-repair", "-i", DEMO, "--backend", "mock", "--faults",
                  str(still_bad), "--out", str(tmp_path / "v1"), "--via", "cuda_visible_devices", "--apply",
                  "--state-dir", state)
    assert res.exit_code == 1 and "nothing released" in res.output, res.output
    status = json.loads(sncheck("status", "--json", "--state-dir", state).output)["status"]
    assert [(r["entity"], r["action"]) for r in status] == [("node003/gpu2", "isolate")]
    assert json.loads((tmp_path / "v1" / "results.json").read_text())["scope"]["cards"] == ["node003/gpu2"]

    res = sncheck("release", "node003/gpu2", "--after-repair", "-i", DEMO, "--backend", "mock",
                  "--out", str(tmp_path / "v2"), "--via", "cuda_visible_devices", "--apply", "--state-dir", state)
    assert res.exit_code == 0 and "scoped validation of node003/gpu2: pass" in res.output, res.output
    status = json.loads(sncheck("status", "--json", "--state-dir", state).output)["status"]
    assert status == []


def test_a_nic_switch_or_link_is_validated_after_repair_and_a_scoped_run_releases_its_quarantine(tmp_path: Path) -> None:
    """reviews20 #12/#14: `release node003/nic2 --after-repair` was refused ("not in inventory": a
    NIC could only be released unvalidated), and a scoped run released card and host quarantines
    only: a switch, NIC or link quarantine stayed for good after a clean run that measured it."""
    from sncheck.actions.batch import released_by_scope
    from sncheck.health.history import Coverage
    from sncheck.store.results import read_record
    targets = ("node003/nic2", "leaf:su0-rail1", "node005/gpu0<->node013/gpu0")
    res = sncheck("release", *targets, "--after-repair", "-i", DEMO, "--backend", "mock", "--playbook",
                  "post-delivery", "--out", str(tmp_path / "v"), "--state-dir", str(tmp_path / "state"))
    assert res.exit_code == 0 and "scoped validation of node003/nic2, leaf:su0-rail1, node005/gpu0<->node013/gpu0: pass" \
        in res.output, res.output
    assert "leaf:su0-rail1 released: put its rail into use again" in res.output, res.output  # (was "repair switch")
    run = read_record(tmp_path / "v" / "results.json")
    assert run.scope["fabric"] == ["leaf:su0-rail1", "node005/gpu0<->node013/gpu0"] and "node003/gpu2" in run.scope["cards"]

    def quarantined(entity: str, kind: str, layer: str = "connectivity") -> dict:
        return {"entity": entity, "entity_kind": kind, "action": "quarantine", "evidence": {"layer": layer},
                "reason": "slow", "rule": "p2p-bandwidth-below-design", "run_id": "earlier"}
    status = [quarantined("leaf:su0-rail1", "switch"), quarantined("node003/nic2", "nic"),
              quarantined("node005/gpu0<->node013/gpu0", "link"), quarantined("node003/nic2<->leaf:su0-rail2[3]", "link"),
              quarantined("leaf:su0-rail3", "switch"), quarantined("node009/nic3", "nic"),
              quarantined("node001/nic1", "nic", layer="stress")]  # the stress layer's symptom: not measured here
    steps = {s.entity: s.action.value for s in released_by_scope(run, status)}
    assert steps == {"leaf:su0-rail1": "release", "node003/nic2": "release", "node005/gpu0<->node013/gpu0": "release",
                     "node003/nic2<->leaf:su0-rail2[3]": "release", "node001/nic1": "quarantine"}, steps
    # and the history's 'resolved' reads the same scope: the leaf was re-measured, another leaf was not
    cover = Coverage.of(run)
    assert cover.holds("leaf:su0-rail1", "switch") and not cover.holds("leaf:su0-rail3", "switch")
