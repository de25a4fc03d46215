"""The verdict decided once (issue 19.2; issue 27: the record computes it), nothing unjudged
passes (18.2), scoped runs say what they covered (18.3): the flags are properties of the
typed record (sncheck.model.RunRecord), every output reads them."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.model import Basis, Verdict
from sncheck.report.firstscreen import first_screen
from sncheck.report.html import render_html
from sncheck.report.junit import render_junit
from sncheck.report.prometheus import render_prometheus
from sncheck.store.results import from_json, to_json

FLAGS = ("gates", "not_measured", "not_judged")
ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")  # 2 supernodes x 8 hosts x 4 cards
TINY = """name: tiny
design:
  scale_up: {bandwidth: "450 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}
supernodes:
  - {name: sn0, hosts: 'n[1-4]', cards_per_host: 2}
"""


def run(tmp_path: Path, *args: str, faults: list[str] = (), out: str = "out") -> tuple[int, dict, Path]:
    argv = [*args, "--backend", "mock", "--seed", "1", "--out", str(tmp_path / out), "-q",
            "--format", "html,junit,prometheus"]
    if faults:
        plan = tmp_path / f"{out}-faults.yaml"
        plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
        argv += ["--faults", str(plan)]
    r = CliRunner().invoke(main, argv)
    path = tmp_path / out / "results.json"
    assert path.exists(), r.output
    return r.exit_code, json.loads(path.read_text()), tmp_path / out


def junit(out: Path) -> dict[str, dict[str, str]]:
    """suite -> testcase -> its outcome (failure, error, skipped or pass)."""
    root = ET.fromstring((out / "junit.xml").read_text())
    cases: dict[str, dict[str, str]] = {}
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            kids = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
            cases.setdefault(suite.get("name"), {})[case.get("name")] = kids[0] if kids else "pass"
    return cases


def strip_flags(results: dict) -> dict:
    old = json.loads(json.dumps(results))
    for f in old["findings"]:
        for k in FLAGS:
            f.pop(k, None)
    return old


def envelope(**kw) -> dict:
    """A finished run's results.json with the one layer that measured its findings (no layer
    recorded is no pass: H10)."""
    return {"run_id": "r1", "playbook": "p", "backend": "mock", "inventory": "i", "started": "t0",
            "finished": "t1", "layers": [{"name": "connectivity", "verdict": "pass"}], **kw}


# ---- 19.2: the flags, computed by the record, read everywhere ---------------------------

def finding(rule: str, severity: str = "critical", **kw) -> dict:
    return {"entity": "node001/gpu0", "entity_kind": "card", "layer": "connectivity", "rule": rule,
            "severity": severity, "message": f"{rule} here", "evidence": {}, **kw}


def test_results_before_the_flags_read_what_a_finding_rests_on_from_its_rule():
    """A document written before the flags (issue 17) says what a finding rests on only by
    its rule's name: the JSON reader, and nothing else, still reads it so."""
    record = from_json(envelope(gate="warning", layers=[{"name": "connectivity", "verdict": "pass"}],
                                findings=[finding("p2p-bandwidth-below-design", "warning"), finding("not-measured"),
                                          finding("host-unreachable"), finding("not-run-timeout"), finding("x", "info"),
                                          finding("golden-not-judged", layer="golden"), finding("layer-not-judged")]))
    assert record.verdict == Verdict.FAIL
    got = [(f.rule, record.gates(f), f.not_measured, f.not_judged) for f in record.findings]
    assert got == [("p2p-bandwidth-below-design", True, False, False), ("not-measured", True, True, False),
                   ("host-unreachable", True, True, False), ("not-run-timeout", True, True, False),
                   ("x", False, False, False), ("golden-not-judged", True, False, True),
                   ("layer-not-judged", True, False, True)]
    # Written with its flags, a finding rests on what they say, whatever its rule's name.
    flagged = from_json(envelope(findings=[finding("not-run-timeout", not_measured=False, not_judged=True)]))
    assert flagged.findings[0].basis == Basis.NOT_JUDGED
    # A severity sncheck does not know is not a run's results.json: refused, with where.
    with pytest.raises(ConfigError, match="results.json"):
        from_json(envelope(findings=[finding("y", "fatal")]))


def test_a_blocked_isolation_fails_the_run_in_the_verdict():
    record = from_json(envelope(gate="critical", layers=[{"name": "connectivity", "verdict": "pass"}], findings=[],
                                isolation_blocked="the safety cap refused 3 of 8 hosts"))
    assert record.verdict == Verdict.FAIL
    assert record.layer_verdict(record.layers[0]) == Verdict.PASS  # the layer passed; the isolation did not


def test_an_unfinished_record_is_an_error():
    """A partial results.json (the run was killed mid-way) never reads as a pass."""
    record = from_json({**envelope(layers=[{"name": "connectivity", "verdict": "pass"}]), "finished": None})
    assert record.verdict == Verdict.ERROR


def test_not_measured_is_an_error_and_an_action_to_bring_it_back_in_every_output():
    """A `not-measured` finding: JUnit says error (it was not measured), the first screen
    says to bring it back; main matched "missing" in the rule name and missed it."""
    f = finding("not-measured", message="card node001/gpu0: not measured: took part in no pair test")
    results = envelope(gate="critical", topology={"supernodes": [{"name": "sn0", "hosts": ["node001"]}]},
                       layers=[{"name": "connectivity", "verdict": "fail"}], findings=[f], isolation=[])
    for given in (to_json(from_json(results)), strip_flags(results)):  # with and without the flags written
        record = from_json(given)
        root = ET.fromstring(render_junit(record))
        case = next(root.iter("testcase"))
        assert [c.tag for c in case if c.tag in ("failure", "error")] == ["error"]
        assert "bring the card back" in first_screen(record)["actions"][0]["action"]


def test_renderers_read_the_records_flags_not_the_ones_a_document_says():
    """The flags are the record's properties: a finding below the gate is not a failure in
    JUnit, whatever a results.json's ``gates`` says; at the gate it is."""
    results = envelope(gate="critical", topology={"supernodes": [{"name": "sn0", "hosts": ["node001"]}]},
                       layers=[{"name": "connectivity", "verdict": "pass"}],
                       findings=[finding("p2p-bandwidth-below-design", "warning", gates=True, not_measured=False,
                                         not_judged=False)],
                       isolation=[])
    cases = [c for c in ET.fromstring(render_junit(from_json(results))).iter("testcase")]
    assert [k.tag for c in cases for k in c if k.tag in ("failure", "error")] == []
    results["gate"] = "warning"
    cases = [c for c in ET.fromstring(render_junit(from_json(results))).iter("testcase")]
    assert [k.tag for c in cases for k in c if k.tag in ("failure", "error")] == ["failure"]


def test_results_written_before_the_flags_still_load(tmp_path):
    code, res, out = run(tmp_path, "connectivity", "-i", DEMO, faults=["{type: down_host, target: node007}",
                                                                     "{type: slow_card, target: node003/gpu2}"])
    assert code == 1
    assert all(isinstance(f[k], bool) for f in res["findings"] for k in FLAGS), res["findings"]
    assert any(f["not_measured"] for f in res["findings"]) and any(not f["not_measured"] for f in res["findings"])
    old, new = from_json(strip_flags(res)), from_json(res)
    # Every output of the old results is the output of the new ones.
    assert render_junit(old) == render_junit(new)
    assert render_prometheus(old, None) == render_prometheus(new, None)
    assert first_screen(old) == first_screen(new)
    assert "node007" in render_html(old, None)
    assert to_json(new) == res  # one writer: the document read back writes the same document
    # And history's diff reads a run directory of the old form.
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "results.json").write_text(json.dumps(strip_flags(res)))
    r = CliRunner().invoke(main, ["diff", str(tmp_path / "old"), str(out), "--json"])
    assert r.exit_code in (0, 1) and "Traceback" not in r.output, r.output


def test_one_set_of_verdict_words():
    """No "degraded": the first screen says the run's verdict word, with its caveats."""
    warn = finding("p2p-latency-card-slow", "warning")
    top = first_screen(from_json(envelope(gate="critical", findings=[warn], isolation=[])))
    assert top["verdict_state"] == "pass" and top["verdict_word"] == "PASS"
    assert "DEGRADED" not in top["verdict_svg"] and "1 finding below the gate" in top["verdict_svg"]
    words = {first_screen(from_json(envelope(**kw)))["verdict_word"]
             for kw in ({}, {"gate": "info", "findings": [warn]}, {"error": "cut short"})}
    assert words == {"PASS", "FAIL", "ERROR"}


# ---- 18.2: nothing unjudged passes -----------------------------------------------------

def all_disabled(path: Path) -> Path:
    data = yaml.safe_load((ROOT / "fixtures/rules/default.yaml").read_text())
    for rule in data["rules"]:
        rule["enabled"] = False
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_rules_check_refuses_a_file_that_judges_nothing_and_warns_per_layer(tmp_path):
    r = CliRunner().invoke(main, ["rules", "check", str(all_disabled(tmp_path / "off.yaml"))])
    assert r.exit_code == 2 and "no enabled rule judges any layer" in r.output and "ok:" not in r.output, r.output
    one = tmp_path / "one.yaml"
    one.write_text("rules:\n  - {name: bw, op: ratio_to_design, metric: p2p_bandwidth, below: 0.8, severity: critical}\n"
                   "  - {name: gone, op: missing, metric: missing, severity: critical}\n")
    r = CliRunner().invoke(main, ["rules", "check", str(one)])
    assert r.exit_code == 0, r.output
    warned = set(re.findall(r"no enabled rule judges the (\w+) layer", r.output))
    assert warned == {"stress", "golden"}, r.output  # the `missing` op judges no layer's measurements


def test_a_run_with_every_rule_disabled_fails_as_not_judged(tmp_path):
    code, res, out = run(tmp_path, "run", "pre-upgrade-gate", "-i", DEMO, "--rules", str(all_disabled(tmp_path / "off.yaml")),
                         faults=["{type: slow_card, target: node003/gpu2, factor: 0.5}",
                                 "{type: corrupt_card, target: node010/gpu1}"])
    assert code == 1
    unjudged = [f for f in res["findings"] if f["rule"] == "layer-not-judged"]
    assert {f["entity"] for f in unjudged} == {"sn0", "sn1"}
    assert all(f["severity"] == "warning" and f["gates"] and f["not_judged"] for f in unjudged)  # the gate's severity
    layers = {f["layer"] for f in unjudged} | {r["layer"] for f in unjudged for r in f["evidence"].get("related", [])}
    assert layers == {"connectivity", "stress", "golden"}
    assert {layer["verdict"] for layer in res["layers"]} == {"fail"}
    assert "pass" not in set(junit(out)["sncheck.stress"].values())


def test_a_rules_file_covering_one_layer_leaves_the_others_not_judged(tmp_path):
    one = tmp_path / "one.yaml"
    one.write_text("rules:\n  - {name: bw, op: ratio_to_design, metric: p2p_bandwidth, below: 0.5, severity: critical}\n")
    inv = tmp_path / "tiny.yaml"
    inv.write_text(TINY)
    pb = tmp_path / "pb.yaml"
    pb.write_text("name: two\nlayers:\n  - connectivity\n  - stress\ngate: critical\n")
    code, res, _ = run(tmp_path, "run", str(pb), "-i", str(inv), "--rules", str(one))
    assert code == 1
    assert [(f["entity"], f["layer"], f["rule"], f["severity"]) for f in res["findings"]] == \
        [("sn0", "stress", "layer-not-judged", "critical")]
    assert [(layer["name"], layer["verdict"]) for layer in res["layers"]] == [("connectivity", "pass"), ("stress", "fail")]


def test_an_optional_golden_layer_without_a_reference_is_not_judged_in_every_output(tmp_path):
    inv = tmp_path / "tiny.yaml"
    inv.write_text(TINY.replace("cards_per_host: 2", "cards_per_host: 3"))  # 3-rank replicas: the mock has no such reference
    pb = tmp_path / "pb.yaml"
    pb.write_text("name: opt\nlayers:\n  - golden: {optional: true}\n")
    code, res, out = run(tmp_path, "run", str(pb), "-i", str(inv))
    assert code == 0  # optional: it does not fail the gate ...
    assert res["layers"][0]["verdict"] == "not_judged"  # ... and it is not a pass
    cases = junit(out)["sncheck.golden"]
    assert cases and set(cases.values()) == {"skipped"}, cases
    prom = (out / "sncheck.prom").read_text()
    assert 'sncheck_layer_verdict{layer="golden",verdict="not_judged"} 1' in prom
    assert 'sncheck_layer_verdict{layer="golden",verdict="pass"} 0' in prom
    html = (out / "report.html").read_text()
    assert "\u2713 PASS" not in html and "golden not judged" in html


# ---- 18.3: scoped runs say what they covered ----------------------------------------------

def test_a_scoped_run_with_a_down_peer_is_not_measured_and_lists_only_its_scope(tmp_path):
    code, res, out = run(tmp_path, "run", "post-delivery", "-i", DEMO, "--targets", "node003/gpu2",
                         faults=["{type: down_host, target: node004}"])
    assert code == 1  # main: exit 0, every host a passing testcase
    gaps = [f for f in res["findings"] if f["entity"] == "node003/gpu2"]
    assert [(f["rule"], f["not_measured"], f["gates"]) for f in gaps] == [("not-measured", True, True)]
    assert gaps[0]["evidence"]["peers"] == [f"node004/gpu{i}" for i in range(4)]
    assert res["isolation"] == []  # not measured: nothing to isolate for it
    cases = junit(out)
    assert cases == {"sncheck.connectivity": {"node003": "error"}}, cases
    props = {p.get("name"): p.get("value") for p in ET.fromstring((out / "junit.xml").read_text()).iter("property")}
    assert props["scope"] == "node003/gpu2"
    prom = (out / "sncheck.prom").read_text()
    assert 'sncheck_run_scope{targets="node003/gpu2"} 1' in prom
    cards = set(re.findall(r'^sncheck_card_\w+\{hostname="([^"]+)",gpu="(\d+)"', prom, re.M))
    assert cards == {("node003", "2")}, cards


@pytest.mark.parametrize("down", ["node003"])
def test_a_scoped_run_whose_target_host_is_down_names_the_host(tmp_path, down):
    code, res, out = run(tmp_path, "connectivity", "-i", DEMO, "--targets", "node003/gpu2",
                         faults=[f"{{type: down_host, target: {down}}}"])
    assert code == 1
    assert [(f["entity"], f["rule"]) for f in res["findings"]] == [("node003", "host-unreachable")]
    assert junit(out) == {"sncheck.connectivity": {"node003": "error"}}
