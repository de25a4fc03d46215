"""Runs sharing a state store: quarantine -> confirm -> isolate/release, repeat offenders,
status and the audit log across runs, and --apply through the isolation actions."""

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.store.rundir import read_rows

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")


def run(tmp_path, name, faults, *extra):
    plan = tmp_path / f"{name}.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    out = tmp_path / name
    r = CliRunner().invoke(main, ["connectivity", "-i", DEMO, "--backend", "mock", "--faults", str(plan),
                                  "--seed", "3", "--out", str(out), "--state-dir", str(tmp_path / "state"), "-q", *extra])
    return r, json.loads((out / "results.json").read_text())


def actions(results):
    return [(i["entity"], i["action"]) for i in results["isolation"]]


def test_release_then_repeat_offender_then_status(tmp_path):
    jitter = "{type: jittery_card, target: node005/gpu0, probability: 0.25, factor: 10"
    r1, res1 = run(tmp_path, "night1", [jitter + ", transient: true}"])
    assert actions(res1) == [("node005/gpu0", "quarantine"), ("node005/gpu0", "release")]
    # Released: kept on record as info, and it does not fail the gate.
    assert r1.exit_code == 0, r1.output
    assert [(f["entity"], f["severity"]) for f in res1["findings"]] == [("node005/gpu0", "info")]

    # The same card trips again within the window: isolated at once, no retest.
    r2, res2 = run(tmp_path, "night2", [jitter + ", transient: true}"])
    assert r2.exit_code == 1, r2.output
    assert actions(res2) == [("node005/gpu0", "quarantine"), ("node005/gpu0", "isolate")]
    assert "repeat offender" in res2["isolation"][1]["reason"]
    assert not any(r.get("layer") == "confirm" for r in read_rows(tmp_path / "night2"))

    # A persistent slow card on another night is confirmed and isolated.
    r3, res3 = run(tmp_path, "night3", ["{type: slow_card, target: node010/gpu2, factor: 0.6}"])
    assert actions(res3) == [("node010/gpu2", "quarantine"), ("node010/gpu2", "isolate")]

    status = CliRunner().invoke(main, ["status", "--state-dir", str(tmp_path / "state")])
    assert status.exit_code == 0, status.output
    assert "node005/gpu0" in status.output and "node010/gpu2" in status.output
    history = CliRunner().invoke(main, ["status", "--history", "--json", "--state-dir", str(tmp_path / "state")])
    decisions = [(d["entity"], d["action"], d["run_id"]) for d in json.loads(history.output)["history"]]
    assert [(e, a) for e, a, _ in decisions] == [
        ("node005/gpu0", "quarantine"), ("node005/gpu0", "release"),
        ("node005/gpu0", "quarantine"), ("node005/gpu0", "isolate"),
        ("node010/gpu2", "quarantine"), ("node010/gpu2", "isolate")]
    assert len({run_id for *_, run_id in decisions}) == 3
    audit = [json.loads(line) for line in (tmp_path / "state/audit.jsonl").read_text().splitlines()]
    assert audit and all({"run_id", "rule", "evidence", "applied"} <= set(a) for a in audit)
    assert all(a["applied"] is False for a in audit)  # no --apply: dry runs only


def test_apply_writes_isolation_files(tmp_path):
    r, res = run(tmp_path, "apply", ["{type: corrupt_card, target: node002/gpu1}"], "--apply",
                 "--via", "cuda_visible_devices")
    assert r.exit_code == 1, r.output
    cvd = json.loads((tmp_path / "apply/cuda_visible_devices.json").read_text())
    assert cvd["node002"] == "0,2,3" and cvd["node001"] == "0,1,2,3"
    assert "node002) export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0,2,3" in (
        tmp_path / "apply/cuda_visible_devices.env").read_text()
    assert [i["applied"] for i in res["isolation"] if i["action"] == "isolate"] == [True]


def test_apply_needs_state_dir(tmp_path):
    r = CliRunner().invoke(main, ["connectivity", "-i", DEMO, "--backend", "mock", "--apply", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--apply needs --state-dir" in r.output


def test_safety_cap_blocks_a_fabric_wide_fault(tmp_path):
    every_card = [f"{{type: slow_card, target: node{h:03d}/gpu{g}, factor: 0.4}}" for h in range(1, 9) for g in range(4)]
    r, res = run(tmp_path, "fabric", every_card, "--apply", "--via", "hostfile")
    assert r.exit_code == 1
    assert [(f["entity"], f["entity_kind"]) for f in res["findings"]] == [("sn0", "supernode")]
    assert "fabric-wide or harness problem" in res["isolation_blocked"]
    assert "fabric-wide or harness problem" in r.output
    assert not any(i["applied"] for i in res["isolation"])
    assert not (tmp_path / "fabric/exclude_hosts.txt").exists()  # nothing applied


def test_playbook_layout_reports_capacity_after_isolation(tmp_path):
    playbook = tmp_path / "p.yaml"
    playbook.write_text("name: cap\nlayers: [connectivity]\nlayout: {tp: 8, ep: 4, pp: 1, dp: 8}\n")
    (tmp_path / "f.yaml").write_text("faults:\n  - {type: corrupt_card, target: node003/gpu1}\n")
    r = CliRunner().invoke(main, ["run", str(playbook), "-i", DEMO, "--backend", "mock", "--faults",
                                  str(tmp_path / "f.yaml"), "--out", str(tmp_path / "run"), "-q"])
    assert r.exit_code == 1, r.output
    cap = json.loads((tmp_path / "run/results.json").read_text())["capacity"]
    per_sn = {s["name"]: s for s in cap["supernodes"]}
    assert per_sn["sn0"]["healthy"] == 31 and per_sn["sn1"]["healthy"] == 32
    assert per_sn["sn0"]["tp_groups"] == 3 and per_sn["sn1"]["tp_groups"] == 4
    assert cap["fits"] is False  # 64 ranks needed, 63 healthy cards
