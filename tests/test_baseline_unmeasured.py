"""A named baseline the run could compare with nothing is said, never silent (reviews19 #5): a
baseline holds connectivity's pair levels only, so the nightly (stress and golden, no pair rows)
named one compared nothing, said nothing and passed, exit 0; and ``baseline make`` over nightly
runs wrote ``"metrics": {}``, exit 0. Now the run has one critical baseline-not-judged finding a
supernode naming why (as 60047ff's mirror case, a baseline that holds nothing measured), and
``baseline make`` refuses a baseline with no metrics (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.drift import BASELINE_NOT_JUDGED, baseline_unmeasured
from sncheck.health.rules import load_rules
from sncheck.model import Basis, Severity

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures/inventories/demo-2sn.yaml"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def not_judged(out: Path) -> list[dict]:
    return [f for f in json.loads((out / "results.json").read_text())["findings"] if f["rule"] == BASELINE_NOT_JUDGED]


@pytest.fixture
def full_baseline(tmp_path) -> Path:
    """A baseline of demo-2sn's every tier, as ``baseline make`` writes one from a connectivity run."""
    bw = {"intra_host": 450.7, "scale_up": 449.97, "scale_out": 50.07}
    lat = {"intra_host": 3.0, "scale_up": 3.0, "scale_out": 15.0}
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"schema": "sncheck.baseline/1", "name": "b", "inventory": "demo-2sn", "runs": ["c"],
                                "metrics": {"p2p_bandwidth": {"tier": bw, "card": {}, "unit": "GB/s"},
                                            "p2p_latency": {"tier": lat, "card": {}, "unit": "us"}}}))
    return path


def test_the_nightly_named_a_baseline_it_measures_nothing_of_says_so_and_fails(full_baseline, tmp_path):
    r = invoke("run", "nightly-stress", "-i", DEMO, "--backend", "mock", "--baseline", full_baseline,
               "--out", tmp_path / "n", "-q")
    assert r.exit_code == 1, r.output  # before: exit 0, nothing said of the baseline
    found = not_judged(tmp_path / "n")
    assert sorted(f["entity"] for f in found) == ["sn0", "sn1"]
    assert all(f["severity"] == "critical" and f["not_judged"] for f in found), found
    assert "nightly-stress measures no p2p_bandwidth" in found[0]["message"]
    assert "the baseline was not compared" in found[0]["message"] and str(full_baseline) in found[0]["message"]


def test_baseline_make_over_a_nightly_is_refused_and_last_pass_is_the_last_that_measured_pairs(tmp_path):
    state = tmp_path / "state"
    for cmd, out in ((("connectivity",), "c"), (("run", "nightly-stress"), "n")):
        r = invoke(*cmd, "-i", DEMO, "--backend", "mock", "--out", tmp_path / out, "-q", "--state-dir", state)
        assert r.exit_code == 0, r.output
    r = invoke("baseline", "make", "--from-state", state, "--last", 1, "--out", tmp_path / "b.json")
    assert r.exit_code == 2, r.output  # before: exit 0, "metrics": {} written and stored
    assert len(r.output.strip().splitlines()) == 1 and "hold no pair levels" in r.output, r.output
    assert not (tmp_path / "b.json").exists()
    # last-pass is the last passing run that measured pair levels, not the nightly after it
    # (before: the nightly's nothing, and a critical baseline-not-judged, exit 1)
    r = invoke("connectivity", "-i", DEMO, "--backend", "mock", "--out", tmp_path / "c2", "-q", "--state-dir", state,
               "--baseline", "last-pass")
    assert r.exit_code == 0, r.output
    record = json.loads((tmp_path / "c2/results.json").read_text())
    assert record["baseline"]["runs"] == [json.loads((tmp_path / "c/results.json").read_text())["run_id"]]
    assert not not_judged(tmp_path / "c2")


def test_a_playbook_that_measures_what_the_rules_compare_has_no_such_finding():
    rules = load_rules("default").rules
    args = ("b.json", rules, "default", "pre-upgrade-gate")
    assert baseline_unmeasured(*args, ["connectivity", "stress", "golden"], ["sn0"]) == []
    found = baseline_unmeasured(*args[:3], "nightly-stress", ["stress", "golden"], ["sn0", "sn1"])
    assert [f.entity for f in found] == ["sn0", "sn1"]
    assert found[0].severity == Severity.CRITICAL and found[0].basis == Basis.NOT_JUDGED


def test_rules_without_a_rule_against_a_baseline_say_so():
    rules = [r for r in load_rules("default").rules if r.op not in ("baseline_regression", "card_baseline")]
    found = baseline_unmeasured("b.json", rules, "mine.yaml", "post-delivery", ["connectivity"], ["sn0"])
    assert len(found) == 1 and "the rules mine.yaml hold no rule against a baseline" in found[0].message
