"""Confirmation retests for real on the local backend (gloo ranks on this machine): a
collective finding is retested by the same collectives (pairs with known-good peers, a
group of the suspect with its peers, a control group of the peers alone), and a golden
finding by the golden model trained again on the suspect's card. The faults are acted
out by the torch probe itself, as on a real cluster."""

import json
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

pytest.importorskip("torch")

from sncheck.cli.main import main  # noqa: E402
from sncheck.config.shipped import shipped  # noqa: E402
from sncheck.store.rundir import read_rows  # noqa: E402

pytestmark = pytest.mark.torch
SUSPECT = "localhost/gpu1"


# The stress layer's timing rules: on a shared CPU a loaded machine makes pairs slow at random
# (CI, load 11: gpu0<->gpu3 at 0.43 of the tier median). Their ends are other suspects, never a
# retest's controls, so the corruption retest ran with one peer and no control group.
TIMING_RULES = ("collective-pair-slow", "collective-pair-latency", "collective-straggler")


def retested_rules(tmp_path: Path) -> Path:
    """The shipped CPU rules, with wrong results retested instead of isolated at once
    (an operator's choice the rules file allows): the collective retest must then run.
    Without the stress layer's timing rules, so that the retest's peers are the same
    three cards on a quiet machine and a loaded one."""
    text = shipped("fixtures", "rules", "local-cpu.yaml").read_text()
    block = text.index("name: collective-wrong-results")
    hard = "confirm: none                # wrong results are hard evidence"
    assert text.index(hard, block) < text.index("- name:", block)
    rules = yaml.safe_load(text[:block] + text[block:].replace(hard, "confirm: retest", 1))
    kept = [r for r in rules["rules"] if r["name"] not in TIMING_RULES]
    assert len(kept) == len(rules["rules"]) - len(TIMING_RULES)
    out = tmp_path / "rules.yaml"
    out.write_text(yaml.safe_dump({**rules, "rules": kept}, sort_keys=False))
    return out


def run(tmp_path: Path, layer: str, faults: str, *extra) -> tuple[int, dict, list[dict]]:
    (tmp_path / "f.yaml").write_text(f"faults:\n  - {faults}\n")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, [layer, "--cards", "4", "--faults", str(tmp_path / "f.yaml"),
                                  "--out", str(out), "-q", *map(str, extra)])
    assert (out / "results.json").exists(), r.output
    return r.exit_code, json.loads((out / "results.json").read_text()), read_rows(out)


def test_a_collective_corruption_is_confirmed_by_the_collective_retest(tmp_path):
    code, res, rows = run(tmp_path, "stress", f"{{type: collective_corruption, target: {SUSPECT}}}",
                          "--rules", retested_rules(tmp_path))
    assert code == 1
    f = next(f for f in res["findings"] if f["entity"] == SUSPECT)
    assert f["rule"] == "collective-wrong-results" and f["evidence"]["confirmed"] is True, f
    assert f["evidence"]["retest"].startswith("collectives: reproduced"), f["evidence"]["retest"]
    assert "confirm" not in f["evidence"]  # retested, not isolated as hard evidence
    steps = [(i["entity"], i["action"]) for i in res["isolation"] if i["entity"] == SUSPECT]
    assert steps == [(SUSPECT, "quarantine"), (SUSPECT, "isolate")], res["isolation"]
    # the retest ran for real: its own collective rows, tagged with the suspect
    retest = [r for r in rows if r["kind"] == "collective" and r.get("confirms") == SUSPECT]
    groups = {r["group"] for r in retest}
    peers = {"localhost/gpu0", "localhost/gpu2", "localhost/gpu3"}
    pairs = {g for g in groups if g.startswith("pair:")}
    assert len(pairs) == 6  # every pair of the suspect and its three peers
    assert {f"confirm:{SUSPECT}", f"control:{SUSPECT}"} <= groups, groups
    assert all(r["status"] == "ok" and r["time_us"] > 0 for r in retest)
    by_group = {}
    for r in retest:
        by_group[r["group"]] = by_group.get(r["group"], 0) + (r["wrong"] or 0)
    # wrong data wherever the suspect takes part, none in the control group of its peers
    assert by_group[f"confirm:{SUSPECT}"] > 0 and by_group[f"control:{SUSPECT}"] == 0
    assert all((by_group[g] > 0) == (SUSPECT in g) for g in pairs), by_group
    control = next(r for r in retest if r["group"] == f"control:{SUSPECT}")
    assert control["ranks"] == len(peers)


def test_a_diverging_card_is_confirmed_by_the_golden_retest(tmp_path):
    code, res, rows = run(tmp_path, "golden", "{type: diverge, target: localhost/gpu2}")
    assert code == 1
    f = next(f for f in res["findings"] if f["entity"] == "localhost/gpu2")
    assert f["evidence"]["confirmed"] is True, f
    assert f["evidence"]["retest"].startswith("golden model: reproduced: "), f["evidence"]["retest"]
    assert "card:localhost/gpu2: the loss became non-finite" in f["evidence"]["retest"]
    steps = [(i["entity"], i["action"]) for i in res["isolation"]]
    assert steps == [("localhost/gpu2", "quarantine"), ("localhost/gpu2", "isolate")], res["isolation"]
    # the golden model trained again for real, on the suspect's card alone
    retest = [r for r in rows if r["kind"] == "golden" and r.get("confirms") == "localhost/gpu2"]
    assert {(r["group"], r["stage"]) for r in retest} == {("card:localhost/gpu2", "solo")}
    assert any(not math.isfinite(r["loss"]) for r in retest if r["loss"] is not None) or \
        any(r["loss"] is None for r in retest)


@pytest.mark.parametrize("layer, fault, how", [
    ("stress", f"{{type: collective_corruption, target: {SUSPECT}, transient: true}}", "collectives"),
    ("golden", f"{{type: diverge, target: {SUSPECT}, transient: true}}", "golden model"),
])
def test_a_fault_gone_by_the_retest_is_measured_again_and_released(tmp_path, layer, fault, how):
    """The same retests judge for real: the fault ended before the retest (transient), the
    suspect is measured again within bounds, and released."""
    extra = ("--rules", retested_rules(tmp_path)) if layer == "stress" else ()
    code, res, rows = run(tmp_path, layer, fault, *extra)
    f = next(f for f in res["findings"] if f["entity"] == SUSPECT)
    assert f["evidence"]["confirmed"] is False, f
    assert f["evidence"]["retest"].startswith(f"{how}: not reproduced"), f["evidence"]["retest"]
    assert f["severity"] == "info" and f["evidence"]["severity_before_retest"] == "critical"
    assert (SUSPECT, "release") in [(i["entity"], i["action"]) for i in res["isolation"]]
    retest = [r for r in rows if r.get("confirms") == SUSPECT and r["kind"] in ("collective", "golden")]
    assert retest and all((r.get("wrong") or 0) == 0 for r in retest)
