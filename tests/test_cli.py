"""The CLI contract: exit codes, outputs in the run directory, clear one-line errors."""

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.store.rundir import read_rows

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
GATE = str(ROOT / "playbooks/pre-upgrade-gate.yaml")
CONTRACT_KEYS = {"schema", "run_id", "playbook", "backend", "inventory", "started", "finished",
                 "verdict", "layers", "findings", "isolation"}
FINDING_KEYS = {"entity", "entity_kind", "layer", "rule", "severity", "message", "evidence"}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_demo_gate_with_faults_writes_contract_outputs(tmp_path):
    out = tmp_path / "run"
    r = invoke("run", GATE, "-i", DEMO, "--backend", "mock", "--faults", ROOT / "fixtures/faults/demo-mixed.yaml",
               "--seed", 1, "--out", out, "--format", "html,junit,prometheus")
    assert r.exit_code == 1, r.output
    results = json.loads((out / "results.json").read_text())
    assert CONTRACT_KEYS <= set(results) and results["schema"] == "sncheck.run/1"
    assert results["verdict"] == "fail" and results["backend"] == "mock" and results["inventory"] == "demo-2sn"
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{4}", results["run_id"])
    assert [layer["name"] for layer in results["layers"]] == ["connectivity", "stress", "golden"]
    assert results["layers"][0]["summary"]["pairs"] == 1248 and results["layers"][0]["summary"]["rounds"] == 39
    for f in results["findings"]:
        assert FINDING_KEYS <= set(f) and f["entity_kind"] in ("card", "link", "host", "supernode")
        assert f["severity"] in ("critical", "warning", "info")
        assert {"measured", "expected", "unit"} <= set(f["evidence"])
    culprits = {(f["entity"], f["entity_kind"]) for f in results["findings"]}
    assert culprits == {("node003/gpu2", "card"), ("node001/gpu0<->node001/gpu1", "link"),
                        ("node007", "host"), ("node012/gpu3", "card")}
    quarantined = [i["entity"] for i in results["isolation"] if i["action"] == "quarantine"]
    assert sorted(quarantined) == sorted(e for e, _ in culprits)  # at the first anomaly
    decided = {i["entity"]: i["action"] for i in results["isolation"] if i["action"] != "quarantine"}
    assert decided == {e: "isolate" for e, _ in culprits}  # every fault here persists: confirmed
    assert all(i["applied"] is False for i in results["isolation"])  # dry run without --apply
    rows = read_rows(out)
    assert {r["kind"] for r in rows} >= {"host_fact", "p2p", "collective", "rank", "golden", "not_run"}
    html = (out / "report.html").read_text()
    assert "node012/gpu3" in html and "<svg" in html
    assert not re.search(r"(src|href)=[\"']?https?:", html) and "<script" not in html
    assert (out / "junit.xml").read_text().startswith("<?xml")
    assert "sncheck_findings{" in (out / "sncheck.prom").read_text()


def test_healthy_demo_exits_zero(tmp_path):
    r = invoke("run", "pre-upgrade-gate", "-i", DEMO, "--backend", "mock", "--seed", 4, "--out", tmp_path, "-q")
    assert r.exit_code == 0, r.output
    assert r.output == ""  # -q: no progress, no summary
    assert json.loads((tmp_path / "results.json").read_text())["findings"] == []


def test_json_flag_prints_results(tmp_path):
    r = CliRunner().invoke(main, ["connectivity", "-i", DEMO, "--backend", "mock", "--out", str(tmp_path), "--json", "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["layers"][0]["name"] == "connectivity"


@pytest.mark.parametrize("inventory", ["nvl72.yaml"])
def test_other_inventories_run_all_layers(tmp_path, inventory):
    r = invoke("run", GATE, "-i", ROOT / "fixtures/inventories" / inventory, "--backend", "mock", "--out", tmp_path, "-q")
    assert r.exit_code == 0, r.output
    results = json.loads((tmp_path / "results.json").read_text())
    assert [layer["verdict"] for layer in results["layers"]] == ["pass"] * 3
    assert results["layers"][0]["summary"]["pairs"] == 72 * 71 // 2


def test_report_escapes_names(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text(Path(DEMO).read_text().replace("name: demo-2sn", 'name: "<script>alert(1)</script>"'))
    r = invoke("connectivity", "-i", inv, "--backend", "mock", "--out", tmp_path / "run", "-q")
    assert r.exit_code == 0, r.output
    html = (tmp_path / "run" / "report.html").read_text()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


def _bad(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("case", ["malformed_inventory", "unknown_key", "bad_hostlist", "bad_unit", "fault_target",
                                  "fault_type", "fault_param", "unknown_layer", "unknown_format", "no_playbook",
                                  "cards_with_inventory", "bad_layout"])
def test_bad_input_exits_2_with_one_line(tmp_path, case):
    demo = Path(DEMO).read_text()
    inv, faults, playbook, extra = DEMO, None, GATE, []
    if case == "malformed_inventory":
        inv = _bad(tmp_path, "inv.yaml", demo.replace("cards_per_host: 4\n  - name: sn1", "cards_per_host: [4\n  - name: sn1"))
        needle = "inv.yaml:"
    elif case == "unknown_key":
        inv = _bad(tmp_path, "inv.yaml", demo.replace("  type: mock", "  typo: mock"))
        needle = "unknown key 'typo'"
    elif case == "bad_hostlist":
        inv = _bad(tmp_path, "inv.yaml", demo.replace("node[001-008]", "node[001-008"))
        needle = "unbalanced"
    elif case == "bad_unit":
        inv = _bad(tmp_path, "inv.yaml", demo.replace('"15 us"', '"15 furlongs"'))
        needle = "unknown latency unit"
    elif case == "fault_target":
        faults = _bad(tmp_path, "f.yaml", "faults:\n  - {type: slow_card, target: node003/gpu9, factor: 0.5}\n")
        needle = "f.yaml:2: slow_card target 'node003/gpu9' is not a card"
    elif case == "fault_type":
        faults = _bad(tmp_path, "f.yaml", "faults:\n  - {type: melted_card, target: node003/gpu1}\n")
        needle = "unknown fault type 'melted_card'"
    elif case == "fault_param":
        faults = _bad(tmp_path, "f.yaml", "faults:\n  - {type: slow_card, target: node003/gpu1, factor: 1.5}\n")
        needle = "f.yaml:2: faults[0].factor: must be a number above 0 and below 1"
    elif case == "unknown_layer":
        playbook = _bad(tmp_path, "p.yaml", "name: x\nlayers:\n  - connectivity\n  - stres: {repeats: 2}\n")
        needle = "p.yaml:4: layers[1].stres: unknown layer 'stres'; did you mean 'stress'?"
    elif case == "bad_layout":
        playbook = _bad(tmp_path, "p.yaml", "name: x\nlayers: [connectivity]\nlayout: {tp: 8, ep: 3, dp: 2}\n")
        needle = "p.yaml:3: EP=3 must divide TP x DP = 16"
    elif case == "unknown_format":
        extra = ["--format", "pdf"]
        needle = "unknown report format 'pdf'"
    elif case == "no_playbook":
        playbook = "no-such-playbook"
        needle = "no such playbook"
    else:
        extra = ["--cards", "3"]
        needle = "--cards applies to the embedded local inventory"
    args = ["run", playbook, "-i", inv, "--backend", "mock", "--out", tmp_path / "run", *extra]
    if faults:
        args += ["--faults", faults]
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert needle in r.output, r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_every_shipped_playbook_loads():
    from sncheck.run.inputs import load_playbook

    names = {p.stem for p in (ROOT / "playbooks").glob("*.yaml")}
    assert names == {"post-delivery", "nightly-stress", "pre-upgrade-gate"}
    gates = {n: load_playbook(n).gate for n in names}
    assert gates["pre-upgrade-gate"] == "warning" and gates["nightly-stress"] == "critical"
    assert [layer.name for layer in load_playbook("pre-upgrade-gate").layers] == ["connectivity", "stress", "golden"]


def test_parse_command(tmp_path):
    fx = ROOT / "fixtures/real/nccl-tests/all_reduce_perf/01_h100_16ranks_2nodes_float_newcols.txt"
    r = invoke("parse", "nccl-tests", fx, "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["collective"] == "all_reduce" and data["ranks"] == 16 and data["rows"][0]["size_bytes"] == 8
    bad = invoke("parse", "nvidia-smi-banana", fx)
    assert bad.exit_code == 2 and "nccl-tests" in bad.output


def test_parse_failed_run_exits_1():
    fx = ROOT / "fixtures/real/nccl-tests/all_reduce_perf/05_nccl1_p100_8gpu_very_old_cols_NCCL_failure.txt"
    r = invoke("parse", "nccl-tests", fx)
    assert r.exit_code == 1
    assert "NCCL failure" in r.output


@pytest.mark.parametrize("args, words", [
    (["run", "pre-upgrade-gate", "--cards", "100000"], "--cards"),
    (["connectivity", "--backend", "nosuch"], "--backend"),
    (["parse"], "TOOL"),
    (["nosuchcommand"], "nosuchcommand"),
])
def test_click_usage_errors_are_one_line_and_exit_2(args, words):
    r = CliRunner().invoke(main, args)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and words in lines[0] and "--help" in lines[0], r.output
