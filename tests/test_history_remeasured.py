"""A finding of the earlier run is 'resolved' only where the later run re-measured it: it ran the
layer that raised it, over a scope that holds its entity (reviews20 #4). Otherwise the report's
"Changes since the last run" and `sncheck diff` list it apart, as not re-measured, saying why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.history import Coverage, measured_by, split_gone
from sncheck.model import EntityKind, Finding
from sncheck.store.state import StateStore
from test_hostile_r5 import _run_dir

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
NIC = "node003/nic1"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def after_a_gate(tmp_path_factory):
    """The review's repro on the mock: a gate finds a 0.6 NIC (critical, connectivity), then with the
    fault still on a nightly (stress, golden) and, from a copy of the store, a golden-only run."""
    tmp = tmp_path_factory.mktemp("remeasured")
    plan = tmp / "faults.yaml"
    plan.write_text("faults: [{type: slow_nic, target: node003, port: 2, factor: 0.6}]\n")
    common = ["-i", DEMO, "--backend", "mock", "--faults", plan, "-q"]
    gate = invoke("run", "pre-upgrade-gate", *common, "--seed", 1, "--out", tmp / "gate", "--state-dir", tmp / "s")
    assert gate.exit_code == 1, gate.output
    shutil.copytree(tmp / "s", tmp / "s2")
    nightly = invoke("run", "nightly-stress", *common, "--seed", 2, "--out", tmp / "nightly", "--state-dir", tmp / "s")
    golden = invoke("golden", *common, "--seed", 3, "--out", tmp / "golden", "--state-dir", tmp / "s2")
    assert golden.exit_code in (0, 1), golden.output
    return tmp, nightly


def _results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def test_a_nightly_after_a_gate_does_not_resolve_the_gates_connectivity_finding(after_a_gate):
    tmp, nightly = after_a_gate
    assert [(f["entity"], f["layer"]) for f in _results(tmp / "gate")["findings"]] == [(NIC, "connectivity")]
    h = _results(tmp / "nightly")["history"]
    assert h["resolved"] == [] and h["ran"] == ["golden", "stress"], h  # before: the NIC, resolved
    [apart] = h["not_remeasured"]
    assert (apart["entity"], apart["severity"], apart["why"]) == (NIC, "critical", "it ran golden, stress (not connectivity)")
    html = (tmp / "nightly" / "report.html").read_text()
    assert "Resolved findings (0)" in html and "Not re-measured by this run (1): it ran golden, stress" in html


def test_a_golden_only_run_after_a_gate_resolves_nothing_it_did_not_measure(after_a_gate):
    tmp, _nightly = after_a_gate
    h = _results(tmp / "golden")["history"]
    assert h["resolved"] == [] and h["ran"] == ["golden"], h
    assert [(f["entity"], f["why"]) for f in h["not_remeasured"]] == [(NIC, "it ran golden (not connectivity)")]


def test_diff_of_two_run_directories_lists_the_finding_apart_and_notes_what_changed(after_a_gate):
    tmp, _nightly = after_a_gate
    r = invoke("diff", tmp / "gate", tmp / "nightly", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["findings"]["resolved"] == [] and [f["entity"] for f in d["findings"]["not_remeasured"]] == [NIC]
    assert "the runs are of different playbooks (pre-upgrade-gate -> nightly-stress)" in d["notes"]
    assert any(n.startswith("the runs ran different layers (connectivity, golden, stress -> golden, stress)")
               for n in d["notes"]), d["notes"]
    text = invoke("diff", tmp / "gate", tmp / "nightly").output
    assert "findings resolved: 0" in text and "findings not re-measured by RUN_B: 1" in text, text
    # the same runs by id from the store: the later run's layers read from its results.json
    ids = [_results(tmp / n)["run_id"] for n in ("gate", "nightly")]
    d = json.loads(invoke("diff", *ids, "--state-dir", tmp / "s", "--json").output)
    assert d["findings"]["resolved"] == [] and [f["entity"] for f in d["findings"]["not_remeasured"]] == [NIC]


def _finding(entity: str, kind: str, layer: str = "connectivity") -> dict:
    return {"entity": entity, "entity_kind": kind, "rule": "r", "severity": "critical", "message": "m", "layer": layer}


def test_a_scoped_run_resolves_only_what_its_scope_holds(tmp_path):
    layers = [{"name": "connectivity", "verdict": "pass"}]
    a = _run_dir(tmp_path, "a", layers=layers, verdict="fail",
                 findings=[_finding("n1/gpu0", "card"), _finding("n2/nic1", "nic"), _finding("n1/gpu1<->n2/gpu1", "link"),
                           _finding("leaf:l1", "switch")])
    scope = {"targets": ["n2"], "cards": ["n2/gpu0", "n2/gpu1"], "hosts": ["n2"]}
    b = _run_dir(tmp_path, "b", layers=layers, scope=scope)
    d = json.loads(invoke("diff", a, b, "--json").output)
    assert [f["entity"] for f in d["findings"]["resolved"]] == ["n2/nic1"]  # its card n2/gpu1 is in scope
    assert {f["entity"]: f["why"] for f in d["findings"]["not_remeasured"]} == dict.fromkeys(
        ("n1/gpu0", "n1/gpu1<->n2/gpu1", "leaf:l1"), "outside its scope (--targets n2)")
    assert "the runs measured different scopes (the whole inventory -> --targets n2)" in d["notes"]
    # a whole run of the layer resolves them all (what 'resolved' meant, where it was measured)
    d = json.loads(invoke("diff", a, _run_dir(tmp_path, "c", layers=layers), "--json").output)
    assert len(d["findings"]["resolved"]) == 4 and d["findings"]["not_remeasured"] == [] and d["notes"] == []


def test_a_layer_skipped_or_cut_short_re_measured_nothing(tmp_path):
    a = _run_dir(tmp_path, "a", layers=[{"name": "connectivity", "verdict": "fail"}], verdict="fail",
                 findings=[_finding("n1/gpu0", "card")])
    b = _run_dir(tmp_path, "b", layers=[{"name": "connectivity", "verdict": "skipped"},
                                        {"name": "stress", "verdict": "pass"}])
    d = json.loads(invoke("diff", a, b, "--json").output)
    assert d["findings"]["resolved"] == [] and d["findings"]["not_remeasured"][0]["why"] == "it ran stress (not connectivity)"


def test_a_retest_finding_is_re_measured_by_its_symptoms_layers_and_host_facts_by_connectivity():
    related = {"related": [{"layer": "stress", "rule": "allreduce-slow"}]}
    folded = Finding("n1/gpu0", EntityKind.CARD, "confirm", "r", "critical", "m", related)
    bare = Finding("n1", EntityKind.HOST, "confirm", "devices-changed", "critical", "m", {})
    assert measured_by(folded) == ["stress"] and measured_by(bare) == ["connectivity"]
    gone = [{**_finding("n1/gpu0", "card", "confirm"), "measured_by": ["stress"]}]
    assert split_gone(gone, Coverage({"connectivity"}, None))[0] == []
    assert [f["entity"] for f in split_gone(gone, Coverage({"stress"}, None))[0]] == ["n1/gpu0"]
    assert split_gone(gone, Coverage(None, None, "gone"))[1][0]["why"] == "what it measured is unknown: gone"


def test_a_stored_run_whose_results_json_is_gone_or_another_runs_resolves_nothing(after_a_gate, tmp_path):
    tmp, _nightly = after_a_gate
    ids = [_results(tmp / n)["run_id"] for n in ("gate", "nightly")]
    state = tmp_path / "s"
    shutil.copytree(tmp / "s", state)
    with StateStore(state) as st:  # where the nightly's record was: another run's now
        st.record_run(st.run(ids[1]) or {}, tmp / "gate" / "results.json")
    d = json.loads(invoke("diff", *ids, "--state-dir", state, "--json").output)
    assert d["findings"]["resolved"] == [] and d["findings"]["not_remeasured"][0]["why"] == (
        f"what it measured is unknown: its results.json ({tmp / 'gate' / 'results.json'}) is now run {ids[0]}'s")
    assert d["notes"][1].startswith(f"RUN_B {ids[1]}: what it measured is unknown: its results.json"), d["notes"]


def test_a_finding_on_a_host_the_later_run_could_not_reach_is_not_resolved(tmp_path):
    layers = [{"name": "connectivity", "verdict": "fail"}]
    a = _run_dir(tmp_path, "a", layers=layers, verdict="fail",
                 findings=[_finding("n1/gpu0", "card"), _finding("n2/gpu0", "card")])
    unreachable = {**_finding("n1", "host"), "rule": "host-unreachable", "not_measured": True, "not_judged": False}
    b = _run_dir(tmp_path, "b", layers=layers, verdict="fail", findings=[unreachable])
    d = json.loads(invoke("diff", a, b, "--json").output)
    assert [f["entity"] for f in d["findings"]["resolved"]] == ["n2/gpu0"]  # before: n1/gpu0 as well
    assert [(f["entity"], f["why"]) for f in d["findings"]["not_remeasured"]] == [
        ("n1/gpu0", "n1 was not measured (host-unreachable)")]
