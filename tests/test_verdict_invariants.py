"""The verdict's invariants (issue 8, "Unmeasured things pass"): each case ends with the
gate failing (exit 1) and a finding that says what was not measured or not judged.
Mock backend, driven through the CLI like a user would."""

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.backends.mock import MockBackend
from sncheck.cli.main import main
from sncheck.run.inputs import load_faults, load_inventory
from sncheck.health.culprits import lift_cards
from sncheck.health.findings import merge_findings
from sncheck.health.metrics import DetectContext
from sncheck.model import Finding
from sncheck.health.rules import load_rules
from sncheck.layers.base import LayerContext
from sncheck.run.confirm import confirm
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
DESIGN = """design:
  scale_up: {bandwidth: "450 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}
"""


def inventory(tmp_path, supernodes: str, name="tiny") -> str:
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"name: {name}\n{DESIGN}supernodes:\n{supernodes}")
    return str(p)


def cli(tmp_path, command, inv, faults=(), *extra, out="out"):
    args = [*command, "-i", inv, "--backend", "mock", "--seed", "1", "--out", str(tmp_path / out), "-q"]
    if faults:
        plan = tmp_path / f"{out}-faults.yaml"
        plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
        args += ["--faults", str(plan)]
    r = CliRunner().invoke(main, [*args, *extra])
    results = json.loads((tmp_path / out / "results.json").read_text()) if (tmp_path / out / "results.json").exists() else None
    return r, results


def rules_of(results, entity=None):
    return {(f["entity"], f["rule"]) for f in results["findings"] if entity in (None, f["entity"])}


def test_host_down_all_run_that_answers_at_the_retest_stays_not_measured(tmp_path):
    r, res = cli(tmp_path, ["connectivity"], DEMO, ["{type: down_host, target: node007, transient: true}"])
    assert r.exit_code == 1, r.output
    f = next(f for f in res["findings"] if f["entity"] == "node007")
    assert f["rule"] == "host-unreachable" and f["severity"] == "critical"
    assert "not re-measured" in f["evidence"]["retest"]
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == [("node007", "quarantine"), ("node007", "quarantine")]
    assert "release" not in {i["action"] for i in res["isolation"]}


def test_every_host_down_and_transient_is_not_a_pass(tmp_path):
    inv = inventory(tmp_path, "  - {name: sn0, hosts: 'n[1-2]', cards_per_host: 2}\n")
    r, res = cli(tmp_path, ["run", str(ROOT / "playbooks/post-delivery.yaml")], inv,
                 ["{type: down_host, target: n1, transient: true}", "{type: down_host, target: n2, transient: true}"])
    assert r.exit_code == 1, r.output
    assert res["verdict"] == "fail"
    assert {("n1", "host-unreachable"), ("n2", "host-unreachable")} <= rules_of(res)
    assert not any(i["action"] == "release" for i in res["isolation"])


@pytest.mark.parametrize("transient,code,last", [(True, 0, "release"), (False, 1, "isolate")])
def test_a_one_host_suspect_is_re_measured_on_its_own_pairs(tmp_path, transient, code, last):
    # One host, two cards: no peer outside the suspect's own two cards. The host's own pair
    # is re-measured against the design bar (before 4eba63e: never re-measured, quarantined).
    inv = inventory(tmp_path, "  - {name: sn0, hosts: 'n1', cards_per_host: 2}\n")
    t = ", transient: true" if transient else ""
    r, res = cli(tmp_path, ["connectivity"], inv, [f"{{type: dead_link, target: 'n1/gpu0<->n1/gpu1'{t}}}"])
    assert r.exit_code == code, r.output
    suspect = res["findings"][0]
    assert suspect["evidence"]["confirmed"] is (not transient), suspect["evidence"]
    assert "not re-measured" not in suspect["evidence"]["retest"]
    assert [i["action"] for i in res["isolation"]] == ["quarantine", last]


def test_a_link_whose_retest_points_at_its_host_is_confirmed(tmp_path):
    inv = load_inventory(DEMO)
    topo = Topology(inv)
    plan = tmp_path / "f.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {{type: slow_card, target: node003/gpu{g}, factor: 0.4}}\n"
                                          for g in range(4)))
    backend = MockBackend(topo, load_faults(str(plan), topo), seed=1)
    rows: list[dict] = []
    ctx = LayerContext(topo, backend, rows.append, dict(inv.design), rules=load_rules("default"), rows=rows)
    link = Finding("node003/gpu0<->node003/gpu1", "link", "connectivity", "p2p-bandwidth-below-design", "critical",
                   "link slow", {})
    outcome = confirm(ctx, [link])[link.entity]
    assert outcome.confirmed is True, outcome
    assert "host node003" in outcome.note or "card node003" in outcome.note


def test_golden_without_a_reference_for_this_configuration_is_not_judged(tmp_path):
    # Three cards per host: the mock ships no 3-rank golden reference and falls back to its
    # 4-rank one (mock-demo), which the runner drops for 3-rank replicas.
    inv = inventory(tmp_path, "  - {name: sn0, hosts: 'n[1-4]', cards_per_host: 3}\n")
    pb = tmp_path / "pb.yaml"
    pb.write_text("name: long\nlayers:\n  - golden: {steps: 330}\n")  # the mock's loss reaches inf by then
    r, res = cli(tmp_path, ["run", str(pb)], inv, ["{type: diverge, target: n2/gpu0}"])
    assert r.exit_code == 1, r.output
    assert ("sn0", "golden-not-judged") in rules_of(res)
    assert ("n2", "golden-loss-non-finite") in rules_of(res)
    not_judged = next(f for f in res["findings"] if f["rule"] == "golden-not-judged")
    assert not_judged["about"] == "check" and "sncheck golden record" in not_judged["message"]
    assert "4 ranks per replica" in res["inputs"]["golden_reference"]["ignored"]
    # A check finding isolates nothing; the diverging host is quarantined.
    assert {i["entity"] for i in res["isolation"]} == {"n2"}


def test_golden_marked_optional_passes_without_a_reference(tmp_path):
    inv = inventory(tmp_path, "  - {name: sn0, hosts: 'n[1-4]', cards_per_host: 3}\n")  # no 3-rank reference
    pb = tmp_path / "pb.yaml"
    pb.write_text("name: opt\nlayers:\n  - golden: {optional: true}\n")
    r, res = cli(tmp_path, ["run", str(pb)], inv)
    assert r.exit_code == 0, r.output  # optional: the gate passes ...
    # ... but the layer was not judged, and says so (issue 18.2), below the gate.
    assert [(f["entity"], f["rule"], f["severity"], f["gates"], f["not_judged"]) for f in res["findings"]] == \
        [("sn0", "golden-not-judged", "info", False, True)]
    assert [(layer["name"], layer["verdict"]) for layer in res["layers"]] == [("golden", "not_judged")]


def _curve(tmp_path, **changes):
    data = json.loads((ROOT / "fixtures/golden/mock-demo.json").read_text())
    data.update(changes)
    p = tmp_path / "curve.json"
    p.write_text(json.dumps(data))  # json writes NaN as NaN
    return p


@pytest.mark.parametrize("change", [
    {"band": {"step_rel": math.nan, "final_rel": 0.04}},
    {"loss": [4.8, math.nan, 4.5]},
    {"band": {"step_rel": math.inf, "final_rel": 0.04}},
])
def test_a_band_with_non_finite_values_is_rejected_when_it_loads(tmp_path, change):
    curve = _curve(tmp_path, **change)
    pb = tmp_path / "pb.yaml"
    pb.write_text(f"name: nan\nlayers:\n  - golden: {{reference: {curve}}}\n")
    r, res = cli(tmp_path, ["run", str(pb)], DEMO)
    assert r.exit_code == 2, r.output
    assert "finite" in r.output and str(curve) in r.output and "Traceback" not in r.output


def test_every_replica_out_of_band_gives_findings(tmp_path):
    data = json.loads((ROOT / "fixtures/golden/mock-demo.json").read_text())
    curve = _curve(tmp_path, loss=[v * 1.5 for v in data["loss"]])  # a reference no replica can meet
    pb = tmp_path / "pb.yaml"
    pb.write_text(f"name: shifted\nlayers:\n  - golden: {{reference: {curve}}}\n")
    r, res = cli(tmp_path, ["run", str(pb)], DEMO, out="shifted")
    assert r.exit_code == 1, r.output
    hosts = {f["entity"] for f in res["findings"] if f["rule"] == "golden-loss-out-of-band"}
    assert len(hosts) == 16 and all(f["entity_kind"] == "host" for f in res["findings"])
    assert all("no single card explains it" in f["message"] for f in res["findings"])


def test_a_rules_file_without_the_missing_rule_cannot_pass_what_was_not_run(tmp_path):
    text = (ROOT / "fixtures/rules/default.yaml").read_text()
    start = text.index("  - name: not-run")
    end = text.index("  # --- stress")
    rules = tmp_path / "no-missing.yaml"
    rules.write_text(text[:start] + text[end:])
    assert "op: missing" not in rules.read_text()
    r, res = cli(tmp_path, ["run", str(ROOT / "playbooks/pre-upgrade-gate.yaml")], DEMO,
                 ["{type: down_host, target: node007}"], "--rules", str(rules))
    assert r.exit_code == 1, r.output
    assert ("node007", "host-unreachable") in rules_of(res)
    assert res["inputs"]["rules"]["path"] == str(rules.resolve())


def test_a_check_finding_absorbs_nothing_and_a_card_stays_a_card():
    missing = Finding("node013", "host", "connectivity", "not-run-missing-tool", "critical",
                      "node013: dcgmi not found", {"tool": "dcgmi"}, about="check")
    card = Finding("node013/gpu1", "card", "connectivity", "p2p-data-corruption", "critical", "corrupt", {})
    ecc = Finding("node013", "host", "connectivity", "host-fact", "critical", "ECC", {"fact": "ecc"})
    out = merge_findings([missing, card, ecc])
    assert {(f.entity, f.rule, f.about) for f in out} == {
        ("node013", "not-run-missing-tool", "check"), ("node013/gpu1", "p2p-data-corruption", "hardware"),
        ("node013", "host-fact", "hardware")}
    assert all("related" not in f.evidence for f in out)


def test_a_card_finding_becomes_a_host_finding_only_when_every_card_shows_it():
    """Cards a measurement flagged each on its own (launch skew) are one host finding only
    when every card of the host is flagged (sncheck.health.culprits.lift_cards); cards its
    tool named for one fact alike too, never mixed with another fact."""
    topo = Topology(load_inventory(DEMO))
    ctx = DetectContext(topo, dict(topo.inventory.design))
    late = lambda i: Finding(f"node002/gpu{i}", "card", "stress", "collective-straggler", "warning", "late", {})  # noqa: E731
    assert {f.entity for f in lift_cards([late(i) for i in range(3)], ctx)} == {f"node002/gpu{i}" for i in range(3)}
    out = lift_cards([late(i) for i in range(4)], ctx)
    assert [(f.entity, f.entity_kind, f.rule) for f in out] == [("node002", "host", "collective-straggler")]
    assert len(out[0].evidence["related"]) == 4
    throttled = [Finding(f"node002/gpu{i}", "card", "connectivity", "host-fact", "critical", "HW Slowdown",
                         {"fact": "clock_reasons"}) for i in range(4)]
    remap = Finding("node002/gpu1", "card", "connectivity", "host-fact", "critical", "remap", {"fact": "remapped_rows"})
    out = lift_cards([*throttled, remap], ctx)
    assert {(f.entity, f.entity_kind, f.evidence["fact"]) for f in out} == {
        ("node002", "host", "clock_reasons"), ("node002/gpu1", "card", "remapped_rows")}


def test_golden_step_time_is_the_symptom_of_a_culprit_on_its_host_or_domain():
    """A host's golden step time is the compute and gradient all-reduce of its cards: a
    culprit on the host, or the supernode culprit holding it, explains it (its retest
    re-measures it); a host of another domain, or a host fact, is still its own finding."""
    domain = {"a1": "snA", "a2": "snA", "a3": "snA", "b1": "snB", "b2": "snB"}.get
    sn = Finding("snA", "supernode", "connectivity", "p2p-bandwidth-below-design", "critical", "slow domain", {})
    card = Finding("b2/gpu1", "card", "connectivity", "p2p-bandwidth-below-design", "critical", "slow card", {})
    steps = [Finding(h, "host", "golden", "golden-step-time-regression", "warning", f"{h}: step time", {})
             for h in ("a1", "a2", "b1", "b2")]
    fact = Finding("a3", "host", "connectivity", "host-fact", "critical", "a3: driver", {"fact": "driver"})
    out = merge_findings([sn, card, *steps, fact], domain)
    assert {(f.entity, f.rule) for f in out} == {("snA", "p2p-bandwidth-below-design"), ("a3", "host-fact"),
                                                 ("b2/gpu1", "p2p-bandwidth-below-design"),
                                                 ("b1", "golden-step-time-regression")}
    folded = next(f for f in out if f.entity == "snA").evidence["related"]
    assert [(r["entity"], r["rule"]) for r in folded] == [("a1", "golden-step-time-regression"),
                                                          ("a2", "golden-step-time-regression")]
    # Without the domains (an older caller), nothing is folded into the supernode.
    again = [Finding(f.entity, f.entity_kind, f.layer, f.rule, f.severity, f.message, {}) for f in (sn, *steps)]
    assert len(merge_findings(again)) == 5


def test_findings_of_other_kinds_on_one_culprit_merge_and_nothing_else_folds():
    """One finding per entity (the most severe, the others its evidence); a link, a card
    and a host named by different measurements each stand: who explains what was decided
    per kind by the explainer (a link at 0.3 beside a high-latency card is the issue's
    masked link)."""
    slow = Finding("n1/gpu0", "card", "connectivity", "p2p-latency-above-design", "critical", "latency", {})
    late = Finding("n1/gpu0", "card", "stress", "collective-straggler", "warning", "late", {})
    link = Finding("n1/gpu0<->n1/gpu1", "link", "connectivity", "p2p-bandwidth-below-design", "critical", "0.3", {})
    remap = Finding("n1/gpu1", "card", "connectivity", "host-fact-hardware-fault", "critical", "remap",
                    {"fact": "remapped_rows"})
    out = merge_findings([late, slow, link, remap])
    assert {(f.entity, f.rule) for f in out} == {("n1/gpu0", "p2p-latency-above-design"),
                                                 ("n1/gpu0<->n1/gpu1", "p2p-bandwidth-below-design"),
                                                 ("n1/gpu1", "host-fact-hardware-fault")}
    assert [r["rule"] for r in next(f for f in out if f.entity == "n1/gpu0").evidence["related"]] == \
        ["collective-straggler"]


class NoDcgmMock(MockBackend):
    """The mock, plus node013 answering `dcgmi diag` with the shell's "not found" (exit
    127), judged by the same fact engine the SSH backend uses."""

    def host_facts(self, hosts, emit):
        from sncheck.vendors.facts import Expect, evaluate
        from sncheck.vendors.nvidia.checks import COMMANDS

        super().host_facts(hosts, emit)
        for h in hosts:
            if h == "node013":
                for row in evaluate(h, COMMANDS["dcgmi_diag"], Expect(cards=4), exit_code=127, stdout="",
                                    stderr="sh: 1: dcgmi: not found"):
                    emit(row)


def test_a_missing_tool_fails_the_gate_isolates_nothing_and_a_card_fault_there_is_the_card(tmp_path, monkeypatch):
    from sncheck import backends
    from sncheck.config.playbook import single_layer
    from sncheck.run.runner import RunOptions, execute

    monkeypatch.setitem(backends.BACKENDS, "nodcgm", (__name__, "NoDcgmMock"))
    plan = tmp_path / "f.yaml"
    plan.write_text("faults:\n  - {type: corrupt_card, target: node013/gpu1}\n")
    outcome = execute(single_layer("connectivity"), load_inventory(DEMO),
                      RunOptions(backend="nodcgm", faults=str(plan), seed=2, out=str(tmp_path / "run")))
    res = outcome.results
    assert outcome.exit_code == 1 and res["verdict"] == "fail"
    found = {(f["entity"], f["rule"], f.get("about", "hardware")) for f in res["findings"]}
    assert found == {("node013", "not-run-missing-tool", "check"), ("node013/gpu1", "p2p-data-corruption", "hardware")}
    tool = next(f for f in res["findings"] if f["entity"] == "node013")
    assert "dcgmi not found" in tool["message"] and "checks: {dcgmi: false}" in tool["message"]
    # Hard evidence isolates the card at once; the missing tool isolates nothing.
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == [
        ("node013/gpu1", "quarantine"), ("node013/gpu1", "isolate")]
    assert "confirm: none" in res["isolation"][1]["reason"]


def test_rules_confirm_field_is_validated_and_shown(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - name: x\n    op: counter_nonzero\n    metric: pair_wrong\n    severity: critical\n"
                   "    confirm: maybe\n")
    r = CliRunner().invoke(main, ["rules", "check", str(bad)])
    assert r.exit_code == 2 and f"{bad}:6" in r.output and "rules.x.confirm: must be one of retest, none, got 'maybe'" in r.output
    r = CliRunner().invoke(main, ["rules", "check", "default"])
    assert r.exit_code == 0, r.output
    lines = {line.split()[0]: line for line in r.output.splitlines()[1:]}
    assert lines["p2p-data-corruption"].endswith("confirm: none")
    assert lines["host-fact-hardware-fault"].endswith("confirm: none")
    assert lines["p2p-bandwidth-below-design"].endswith("confirm: retest")
    assert "confirm (retest|none)" in CliRunner().invoke(main, ["rules", "list"]).output
    scope = tmp_path / "scope.yaml"
    scope.write_text("rules:\n  - {name: y, op: counter_nonzero, metric: host_fact_failures, severity: critical, "
                     "scope: card}\n")
    r = CliRunner().invoke(main, ["rules", "check", str(scope)])
    assert r.exit_code == 2 and "scope must be host" in r.output


@pytest.mark.parametrize("transient, expected", [(False, True), (True, False)])
def test_a_collective_finding_is_retested_by_collectives_with_a_control_group(tmp_path, transient, expected):
    inv = load_inventory(DEMO)
    topo = Topology(inv)
    plan = tmp_path / "f.yaml"
    plan.write_text(f"faults:\n  - {{type: slow_card, target: node004/gpu2, factor: 0.5, transient: {str(transient).lower()}}}\n")
    backend = MockBackend(topo, load_faults(str(plan), topo), seed=3)
    backend.begin_confirmation()
    rows: list[dict] = []
    ctx = LayerContext(topo, backend, rows.append, dict(inv.design), rules=load_rules("default"), rows=rows)
    suspect = Finding("node004/gpu2", "card", "stress", "collective-pair-slow", "critical", "slow in pairs", {})
    outcome = confirm(ctx, [suspect])[suspect.entity]
    assert outcome.how == "collectives" and outcome.confirmed is expected, outcome
    groups = {r["group"] for r in rows if r["kind"] == "collective"}
    assert any(g.startswith("pair:") and "node004/gpu2" in g for g in groups)
    assert "confirm:node004/gpu2" in groups and "control:node004/gpu2" in groups
    control = [r for r in rows if r.get("group") == "control:node004/gpu2" and r["kind"] == "rank"]
    assert control and all(r["card"] != "node004/gpu2" for r in control)
    assert {r["layer"] for r in rows} == {"confirm"}
