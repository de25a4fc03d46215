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
from sncheck.health.findings import merge_findings
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
    # Two cards per host: the shipped mock reference was recorded with 4 ranks per replica.
    inv = inventory(tmp_path, "  - {name: sn0, hosts: 'n[1-4]', cards_per_host: 2}\n")
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
    inv = inventory(tmp_path, "  - {name: sn0, hosts: 'n[1-4]', cards_per_host: 2}\n")
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
    out = merge_findings([missing, card, ecc], lambda h: [f"{h}/gpu{i}" for i in range(4)])
    assert {(f.entity, f.rule, f.about) for f in out} == {
        ("node013", "not-run-missing-tool", "check"), ("node013/gpu1", "p2p-data-corruption", "hardware"),
        ("node013", "host-fact", "hardware")}
    assert all("related" not in f.evidence for f in out)


def test_a_card_finding_becomes_a_host_finding_only_when_every_card_shows_it():
    cards = lambda h: [f"{h}/gpu{i}" for i in range(4)]  # noqa: E731
    some = [Finding(f"n1/gpu{i}", "card", "stress", "collective-straggler", "warning", "late", {}) for i in range(3)]
    assert {f.entity for f in merge_findings(list(some), cards)} == {"n1/gpu0", "n1/gpu1", "n1/gpu2"}
    every = [Finding(f"n1/gpu{i}", "card", "stress", "collective-straggler", "warning", "late", {}) for i in range(4)]
    out = merge_findings(every, cards)
    assert [(f.entity, f.entity_kind, f.rule) for f in out] == [("n1", "host", "collective-straggler")]
    assert len(out[0].evidence["related"]) == 4


def test_a_nic_named_from_collectives_folds_into_its_sick_card_but_not_from_pair_tests():
    """bench_detection_accuracy scenario 1023: a card throttled to 0.65 (critical, bad on
    scale-up, healthy on scale-out pair tests) is slow on small messages in pairwise
    collectives across the scale-out network too (its launch latency), and that symptom was
    named as its NIC, a second culprit. A pairwise collective mixes both ends' compute and
    latency, so the sick card explains it. A NIC named from pair tests, which measure the
    NIC alone, stays its own finding while the card's scale-out pairs are healthy."""
    card = Finding("n9/gpu1", "card", "connectivity", "p2p-bandwidth-below-design", "critical", "slow card",
                   {"tiers": {"scale_up": {"bad_pairs": 24}, "scale_out": {"bad_pairs": 0}}})
    stress_nic = Finding("n9/nic1", "nic", "stress", "collective-pair-latency", "critical", "slow small messages",
                         {"tier": "scale_out"})
    p2p_nic = Finding("n9/nic1", "nic", "connectivity", "p2p-bandwidth-below-design", "critical", "slow NIC",
                      {"tier": "scale_out"})
    cards = lambda h: [f"{h}/gpu{i}" for i in range(4)]  # noqa: E731
    out = merge_findings([card, stress_nic], cards)
    assert [(f.entity, f.rule) for f in out] == [("n9/gpu1", "p2p-bandwidth-below-design")]
    assert [r["rule"] for r in out[0].evidence["related"]] == ["collective-pair-latency"]
    fresh = lambda f: Finding(f.entity, f.entity_kind, f.layer, f.rule, f.severity, f.message,  # noqa: E731
                              json.loads(json.dumps(f.evidence)))
    out = merge_findings([fresh(card), fresh(p2p_nic)], cards)
    assert {(f.entity, f.rule) for f in out} == {("n9/gpu1", "p2p-bandwidth-below-design"),
                                                 ("n9/nic1", "p2p-bandwidth-below-design")}


def test_golden_step_time_of_a_slow_domain_s_hosts_folds_into_the_domain():
    """A whole supernode slow alike makes every one of its hosts' golden replicas slow:
    those are the supernode's symptoms (the retest re-measures them), not three more
    culprits. A host of another domain, or a host fact, is still its own finding."""
    cards = lambda h: [f"{h}/gpu{i}" for i in range(2)]  # noqa: E731
    domain = {"a1": "snA", "a2": "snA", "a3": "snA", "b1": "snB"}.get
    sn = Finding("snA", "supernode", "connectivity", "p2p-bandwidth-below-design", "critical", "slow domain", {})
    steps = [Finding(h, "host", "golden", "golden-step-time-regression", "warning", f"{h}: step time", {})
             for h in ("a1", "a2", "b1")]
    fact = Finding("a3", "host", "connectivity", "host-fact", "critical", "a3: driver", {"fact": "driver"})
    out = merge_findings([sn, *steps, fact], cards, domain)
    assert {(f.entity, f.rule) for f in out} == {("snA", "p2p-bandwidth-below-design"), ("a3", "host-fact"),
                                                 ("b1", "golden-step-time-regression")}
    folded = next(f for f in out if f.entity == "snA").evidence["related"]
    assert [(r["entity"], r["rule"]) for r in folded] == [("a1", "golden-step-time-regression"),
                                                          ("a2", "golden-step-time-regression")]
    # Without the domains (an older caller), nothing is folded into the supernode.
    again = [Finding(f.entity, f.entity_kind, f.layer, f.rule, f.severity, f.message, {}) for f in (sn, *steps)]
    assert len(merge_findings(again, cards)) == 4


def test_cards_and_links_of_a_domain_slow_as_a_whole_fold_into_it():
    """Half of a two-domain cluster slow alike: a peer rule's tier median lies between the
    two domains, so the slow one splits into cards and links "between two otherwise
    healthy cards" (bench_platform_accuracy scenario 5032: 160 extra findings). They are
    the domain's symptoms; a link well below its ends, a card its tool named, a critical
    card in a domain faint as a whole, and anything in another domain stay culprits."""
    cards = lambda h: [f"{h}/gpu{i}" for i in range(2)]  # noqa: E731
    domain = {"a1": "snA", "a2": "snA", "b1": "snB"}.get
    sn = Finding("snA", "supernode", "connectivity", "p2p-bandwidth-below-design", "critical", "slow", {"pairs": 9})
    peer = "p2p-bandwidth-below-peers"
    folded = [Finding("a1/gpu0<->a2/gpu1", "link", "connectivity", peer, "critical", "l", {}),
              Finding("a2/gpu0", "card", "connectivity", peer, "critical", "c", {}),
              Finding("a2/gpu1<->b1/gpu1", "link", "connectivity", peer, "critical", "rail pair", {})]
    kept = [Finding("a1/gpu0<->a1/gpu1", "link", "connectivity", peer, "critical", "dead", {"independent": True}),
            Finding("a1/gpu1", "card", "connectivity", "host-fact-hardware-fault", "critical", "ecc", {"fact": "ecc"}),
            Finding("b1/gpu0", "card", "connectivity", peer, "critical", "other domain", {})]
    out = merge_findings([sn, *folded, *kept], cards, domain)
    assert {f.entity for f in out} == {"snA"} | {f.entity for f in kept}
    assert {r["entity"] for r in next(f for f in out if f.entity == "snA").evidence["related"]} == \
        {f.entity for f in folded}
    faint = Finding("snA", "supernode", "connectivity", "p2p-bandwidth-domain-below-design", "warning", "faint", {})
    card = Finding("a2/gpu0", "card", "connectivity", peer, "critical", "slow card", {})
    assert {f.entity for f in merge_findings([faint, card], cards, domain)} == {"snA", "a2/gpu0"}
    # A host of the faint domain whose every card a per-card rule flagged alike (the tier
    # median pooled with the healthy domain: bench scenario 5044) is the domain's symptom;
    # a host fact or an unreachable host is not.
    card_slow = [Finding(f"a1/gpu{i}", "card", "connectivity", "p2p-bandwidth-card-slow", "warning", "low", {})
                 for i in range(2)]
    fact = Finding("a2", "host", "connectivity", "host-fact-warning", "warning", "a2: pcie", {"fact": "pcie_width"})
    out = merge_findings([faint, *card_slow, fact], cards, domain)
    assert {(f.entity, f.entity_kind) for f in out} == {("snA", "supernode"), ("a2", "host")}


def test_cards_of_a_one_host_domain_slow_as_a_whole_fold_into_the_host():
    """An MI300X host is its own supernode: a whole host faint alike (0.92 of design) is
    named as the host by the domain rule (evidence ``domain``), while the per-card rule,
    its tier median pooled with the healthy hosts, names most of its cards (not all, so
    they do not lift to the host: bench_platform_accuracy scenario 5119, 6 extra cards).
    They are the domain's symptoms; a critical card, a card its tool named and a card of
    another host stay culprits."""
    cards = lambda h: [f"{h}/gpu{i}" for i in range(8)]  # noqa: E731
    domain = {"mi01": "mi01", "mi02": "mi02"}.get
    host = Finding("mi01", "host", "connectivity", "p2p-bandwidth-domain-below-design", "warning", "faint",
                   {"tier": "intra_host", "cards": 8, "domain": "mi01"})
    slow = [Finding(f"mi01/gpu{i}", "card", "connectivity", "p2p-bandwidth-card-slow", "warning", "low",
                    {"tier": "intra_host"}) for i in (0, 1, 2, 4, 5, 6)]
    kept = [Finding("mi01/gpu3", "card", "connectivity", "p2p-bandwidth-below-design", "critical", "slow", {}),
            Finding("mi01/gpu7", "card", "connectivity", "host-fact-warning", "warning", "ecc", {"fact": "ecc"}),
            Finding("mi02/gpu0", "card", "connectivity", "p2p-bandwidth-card-slow", "warning", "low", {})]
    out = merge_findings([host, *slow, *kept], cards, domain)
    assert {f.entity for f in out} == {"mi01"} | {f.entity for f in kept}
    assert {r["entity"] for r in next(f for f in out if f.entity == "mi01").evidence["related"]} == \
        {f.entity for f in slow}
    # The domain's symptom folded into another host finding (its most severe) still holds it.
    worse = Finding("mi01", "host", "stress", "collective-pair-slow", "critical", "slow pairs", {"tier": "intra_host"})
    out = merge_findings([worse, host, *slow], cards, domain)
    assert [(f.entity, f.rule) for f in out] == [("mi01", "collective-pair-slow")]


def test_a_card_its_tool_named_is_not_folded_into_a_host_symptom_shared_alike():
    """A pending remap in gpu1's nvidia-smi section and a host whose pairs are all slow
    (localized from pair tests, every card alike): two culprits. The slow host may be
    released by its retest; the remap must not go with it."""
    cards = lambda h: [f"{h}/gpu{i}" for i in range(2)]  # noqa: E731
    slow = Finding("n1", "host", "connectivity", "p2p-bandwidth-below-peers", "critical", "slow host",
                   {"pairs": 4, "bad_pairs": 4})
    remap = Finding("n1/gpu1", "card", "connectivity", "host-fact-hardware-fault", "critical", "n1/gpu1: remap",
                    {"fact": "remapped_rows"})
    late = Finding("n1/gpu0", "card", "stress", "collective-straggler", "warning", "late", {})
    out = merge_findings([slow, remap, late], cards)
    assert {(f.entity, f.rule) for f in out} == {("n1", "p2p-bandwidth-below-peers"),
                                                 ("n1/gpu1", "host-fact-hardware-fault")}
    host = next(f for f in out if f.entity == "n1")
    assert [r["rule"] for r in host.evidence["related"]] == ["collective-straggler"]
    # every card throttled alike in its own section: one host finding of that fact
    throttled = [Finding(f"n1/gpu{i}", "card", "connectivity", "host-fact", "critical", "HW Slowdown",
                         {"fact": "clock_reasons"}) for i in range(2)]
    out = merge_findings(throttled, cards)
    assert [(f.entity, f.entity_kind, f.evidence["fact"]) for f in out] == [("n1", "host", "clock_reasons")]


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
    assert r.exit_code == 2 and f"{bad}:6" in r.output and "confirm must be one of retest, none" in r.output
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
