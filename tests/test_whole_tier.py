"""A tier measured beyond its pair bar on every pair of a domain (sncheck.health.wholetier): one
finding for the domain, with its median and whether the bar is above what the design gives,
retested once; not a link "between two otherwise healthy cards" per pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
STRICT = "rules:\n  - {name: any-bw-dip, op: ratio_to_design, metric: p2p_bandwidth, below: 1.5, severity: warning}\n"


def run(tmp_path: Path, inventory: str, option: str, text: str) -> dict:
    """A mock connectivity run of a shipped inventory with ``option`` (--rules, --faults) a file of ``text``:
    exit 1, its results."""
    given = tmp_path / "given.yaml"
    given.write_text(text)
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(ROOT / f"fixtures/inventories/{inventory}.yaml"),
                                  "--backend", "mock", option, str(given), "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def test_every_pair_of_a_domain_below_a_bar_above_design_is_one_finding(tmp_path):
    res = run(tmp_path, "nvl72", "--rules", STRICT)
    [f] = res["findings"]  # before: 2,556 links "between two otherwise healthy cards", each retested
    assert (f["entity"], f["entity_kind"], f["rule"]) == ("rack0", "supernode", "any-bw-dip")
    assert f["evidence"]["whole_tier"] is True and f["evidence"]["bad_pairs"] == f["evidence"]["pairs"] == 2556
    assert "on every one of its 2448 pair tests (scale_up), their median 1.00 of design" in f["message"]
    assert "the bar (1.5 of design) is above what the design gives" in f["message"]
    # no healthy pair meets a bar above design: about the check (it gates), never retested or
    # isolated (before: the whole rack quarantined, retested and isolated for a rule's bar)
    assert f["about"] == "check" and "confirmed" not in f["evidence"] and res["isolation"] == []


@pytest.mark.parametrize("faults", [
    # one slow link in the domain: the rest of its pairs are inside the bar, the link alone is named
    "faults:\n  - {type: degraded_link, target: 'gb200-tray01/gpu0<->gb200-tray02/gpu0', factor: 0.4}\n",
])
def test_a_domain_with_a_pair_inside_the_bar_is_not_named_whole(tmp_path, faults):
    res = run(tmp_path, "nvl72", "--faults", faults)
    assert {(f["entity_kind"]) for f in res["findings"]} == {"link"}
    assert not any(f["evidence"].get("whole_tier") for f in res["findings"])


def test_every_pair_of_the_fleet_below_the_bar_is_each_domain_once(tmp_path):
    # two domains and the scale-out network between them, every pair below a bar of 1.5 x design:
    # each domain once (its inside tiers and its scale-out pairs), no link, each retested once
    res = run(tmp_path, "demo-2sn", "--rules", STRICT)
    assert [(f["entity"], f["entity_kind"]) for f in res["findings"]] == [("sn0", "supernode"), ("sn1", "supernode")]
    for f in res["findings"]:
        assert set(f["evidence"]["tiers"]) == {"intra_host", "scale_up", "scale_out"}
        assert all(t["bad_pairs"] == t["pairs"] for t in f["evidence"]["tiers"].values())
        assert f["about"] == "check" and "confirmed" not in f["evidence"]
    assert res["isolation"] == []


def test_a_card_far_below_its_whole_domain_is_named_not_hidden(tmp_path):
    """The reviewer's case: a card at 0.4 inside a domain whose every pair is below a bar of
    1.5 x design. The domain at its median (1.00) does not explain the card's pairs at 0.4:
    the card is named on its own and the domain's message says it left them apart (before:
    one finding, 'no card, host or link inside it explains that', the card named nowhere)."""
    rules = tmp_path / "strict.yaml"
    rules.write_text(STRICT)
    given = tmp_path / "faults.yaml"
    given.write_text("faults:\n  - {type: slow_card, target: gb200-tray03/gpu1, factor: 0.4}\n")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(ROOT / "fixtures/inventories/nvl72.yaml"), "--backend",
                                  "mock", "--rules", str(rules), "--faults", str(given), "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    found = {(f["entity"], f["entity_kind"]): f for f in json.loads((out / "results.json").read_text())["findings"]}
    assert set(found) == {("gb200-tray03/gpu1", "card"), ("rack0", "supernode")}
    assert found[("gb200-tray03/gpu1", "card")]["evidence"]["factor"] == pytest.approx(0.4, abs=0.03)
    whole = found[("rack0", "supernode")]["message"]
    assert "far below that median, named apart" in whole and "no card, host or link inside it" not in whole
    # the rack is about the rule, so its cards are fair peers: the card's retest runs, and isolates it
    assert found[("gb200-tray03/gpu1", "card")]["evidence"]["confirmed"] is True
    assert [(i["entity"], i["action"]) for i in json.loads((out / "results.json").read_text())["isolation"]] == [
        ("gb200-tray03/gpu1", "quarantine"), ("gb200-tray03/gpu1", "isolate")]


def test_a_whole_domain_well_below_design_under_a_bar_above_it_is_still_hardware(tmp_path):
    """A bar above design makes a domain at design 'check the rule' (7cde0dc); a domain at 0.5 of
    design under that bar is slow by any bar, and is judged as hardware: retested, isolated (the
    review of stop 47)."""
    rules = tmp_path / "strict.yaml"
    rules.write_text(STRICT)
    given = tmp_path / "faults.yaml"
    given.write_text("faults:\n" + "".join(f"  - {{type: slow_card, target: gb200-tray{t:02d}/gpu{g}, factor: 0.5}}\n"
                                          for t in range(1, 19) for g in range(4)))
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(ROOT / "fixtures/inventories/nvl72.yaml"), "--backend",
                                  "mock", "--rules", str(rules), "--faults", str(given), "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    [f] = [f for f in json.loads((out / "results.json").read_text())["findings"] if f["entity"] == "rack0"]
    assert f["evidence"]["whole_tier"] is True and f.get("about", "hardware") == "hardware", f  # hardware: not written
