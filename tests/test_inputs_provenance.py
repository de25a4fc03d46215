"""Reproducible configuration (issue 8 item 9): shipped names resolve to the package's
own files, a stray file in the working directory changes nothing, and results.json
records each input with its sha256."""

import hashlib
import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.config.shipped import data_dir

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_stray_rules_file_in_the_working_directory_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    stray = tmp_path / "fixtures" / "rules"
    stray.mkdir(parents=True)
    # Were this used, a slow card would pass: it judges nothing but corrupted payloads.
    (stray / "default.yaml").write_text("rules:\n  - {name: only, op: counter_nonzero, metric: p2p_checksum_failures, "
                                        "severity: critical}\n")
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "post-delivery.yaml").write_text("name: stray\nlayers: [golden]\n")
    (tmp_path / "faults.yaml").write_text("faults:\n  - {type: slow_card, target: node003/gpu2, factor: 0.5}\n")
    r = CliRunner().invoke(main, ["run", "post-delivery", "-i", DEMO, "--backend", "mock", "--faults", "faults.yaml",
                                  "--seed", "1", "--out", "out", "-q"])
    assert r.exit_code == 1, r.output
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["playbook"] == "post-delivery" and [layer["name"] for layer in res["layers"]] == ["connectivity"]
    assert ("node003/gpu2", "card") in {(f["entity"], f["entity_kind"]) for f in res["findings"]}
    rules = data_dir("fixtures") / "rules" / "default.yaml"
    playbook = data_dir("playbooks") / "post-delivery.yaml"
    assert res["inputs"]["rules"]["sha256"] == sha(rules)
    assert res["inputs"]["rules"]["path"] == str(rules.resolve()) and res["inputs"]["rules"]["shipped"] is True
    assert res["inputs"]["playbook"]["sha256"] == sha(playbook)
    assert res["inputs"]["baseline"]["sha256"] is None  # none named

    # Named by path, the working directory's file is used, and recorded as such.
    r = CliRunner().invoke(main, ["run", "post-delivery", "-i", DEMO, "--backend", "mock", "--faults", "faults.yaml",
                                  "--seed", "1", "--out", "out2", "-q", "--rules", "fixtures/rules/default.yaml"])
    res = json.loads((tmp_path / "out2" / "results.json").read_text())
    assert res["inputs"]["rules"]["path"] == str((stray / "default.yaml").resolve())
    assert res["inputs"]["rules"]["shipped"] is False
    assert ("node003/gpu2", "card") not in {(f["entity"], f["entity_kind"]) for f in res["findings"]}


def test_the_golden_reference_is_recorded(tmp_path):
    r = CliRunner().invoke(main, ["golden", "-i", DEMO, "--backend", "mock", "--seed", "1", "--out",
                                  str(tmp_path / "g"), "-q"])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "g" / "results.json").read_text())
    curve = data_dir("fixtures") / "golden" / "mock-demo.json"
    assert res["inputs"]["golden_reference"]["name"] == "mock-demo"
    assert res["inputs"]["golden_reference"]["sha256"] == sha(curve)
