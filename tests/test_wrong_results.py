"""Wrong results are never a pass: a collective group that gave wrong values is narrowed to its
cards whatever culprit sits on it, and where nothing localises it, it is a finding of its own.

CI of stop 52: a loaded SSH gate named two slow loopback links on node2/gpu0 at connectivity; every
stress group node2/gpu0's collective corruption showed in held one of them, so no pair was narrowed
and the wrong results were on record with no finding. The mock acts the same out deterministically.
"""

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.invariants import WRONG_NOT_LOCALISED, wrong_not_localised
from sncheck.model import EntityKind, Finding, Severity
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
INV = ROOT / "fixtures/inventories/demo-2sn.yaml"
TOPO = Topology(load_inventory(INV))
FAULTS = """faults:
  - {type: collective_corruption, target: node002/gpu1}
  - {type: degraded_link, target: "node002/gpu1<->node002/gpu2", factor: 0.3}
  - {type: degraded_link, target: "node001/gpu1<->node002/gpu1", factor: 0.3}
"""


def _run(tmp_path: Path, *extra: str) -> dict:
    faults = tmp_path / "faults.yaml"
    faults.write_text(FAULTS)
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "pre-upgrade-gate", "-i", str(INV), "--faults", str(faults),
                                       "--out", str(out), "-q", *extra])
    assert result.exit_code == 1, result.output
    return json.loads((out / "results.json").read_text())


def test_slow_links_on_a_corrupting_card_do_not_hide_its_wrong_results(tmp_path: Path) -> None:
    results = _run(tmp_path)
    named = {(f["entity"], f["rule"]) for f in results["findings"]}
    # the links connectivity named stay named, and the card's wrong reductions are its own finding
    assert ("node002/gpu1", "collective-wrong-results") in named, named
    assert {("node001/gpu1<->node002/gpu1", "p2p-bandwidth-below-design"),
            ("node002/gpu1<->node002/gpu2", "p2p-bandwidth-below-design")} <= named, named
    assert not any(r == WRONG_NOT_LOCALISED for _, r in named), named
    isolated = {d["entity"] for d in results["isolation"] if d["action"] == "isolate"}
    assert "node002/gpu1" in isolated, results["isolation"]


def test_wrong_results_no_rule_localises_are_a_finding(tmp_path: Path) -> None:
    """A rules file without the pairwise wrong-results rule still fails the gate on them."""
    rules = tmp_path / "rules.yaml"
    text = (ROOT / "fixtures/rules/default.yaml").read_text()
    assert "  - name: collective-wrong-results\n" in text
    rules.write_text(text.replace("  - name: collective-wrong-results\n",
                                  "  - name: collective-wrong-results\n    enabled: false\n"))
    results = _run(tmp_path, "--rules", str(rules))
    wrong = {f["entity"]: f for f in results["findings"] if f["rule"] == WRONG_NOT_LOCALISED}
    # host:node002 and rail:sn0:gpu1 cross at node002/gpu1, which domain:sn0 holds too: the card, not its
    # host and supernode (review18 #8: one card's corruption held 32 cards)
    assert set(wrong) == {"node002/gpu1"}, sorted(wrong)
    card = wrong["node002/gpu1"]
    assert card["severity"] == "critical" and card["evidence"]["measured"] > 0 and not card["evidence"]["localised"]
    assert {"host:node002", "rail:sn0:gpu1", "domain:sn0"} <= set(card["evidence"]["groups"]), card
    assert "cross only at it" in card["message"]


def _rows(wrong: dict[str, int]) -> pd.DataFrame:
    return pd.DataFrame([{"kind": "collective", "layer": "stress", "group": g,
                          "group_kind": g.partition(":")[0], "wrong": n, "size_bytes": 4096}
                         for g, n in wrong.items()])


def _finding(entity: str, kind: EntityKind, rule: str) -> Finding:
    return Finding(entity, kind, "stress", rule, Severity.CRITICAL, "x", {})


def test_only_a_wrong_value_finding_on_the_group_localises_it() -> None:
    rows = _rows({"host:node002": 8, "host:node003": 0, "pair:node002/gpu1<->node002/gpu2": 4})
    values = {"collective-wrong-results"}
    # nothing named: the host group is a finding on its host (the pair group is the rules' to judge)
    bare = wrong_not_localised("stress", rows, TOPO, [], values)
    assert [(f.entity, f.rule, f.evidence["measured"]) for f in bare] == [("node002", WRONG_NOT_LOCALISED, 8)]
    # a slow link inside the group explains no wrong value
    slow = _finding("node002/gpu1<->node002/gpu2", EntityKind.LINK, "p2p-bandwidth-below-design")
    assert [f.entity for f in wrong_not_localised("stress", rows, TOPO, [slow], values)] == ["node002"]
    # a wrong-results finding on a card of it does; on a card of another host it does not
    mine = _finding("node002/gpu1", EntityKind.CARD, "collective-wrong-results")
    other = _finding("node003/gpu1", EntityKind.CARD, "collective-wrong-results")
    assert wrong_not_localised("stress", rows, TOPO, [mine], values) == []
    assert [f.entity for f in wrong_not_localised("stress", rows, TOPO, [other], values)] == ["node002"]
    # host and rail groups crossing at one card that every wrong group holds: that card
    grid = _rows({"host:node002": 8, "rail:sn0:gpu1": 4, "domain:sn0": 16})
    assert [f.entity for f in wrong_not_localised("stress", grid, TOPO, [], values)] == ["node002/gpu1"]
    # a domain group that does not hold it (another supernode's): no crossing explains them all
    apart = _rows({"host:node002": 8, "rail:sn0:gpu1": 4, "domain:sn1": 16})
    assert sorted(f.entity for f in wrong_not_localised("stress", apart, TOPO, [], values)) == ["node002", "sn0", "sn1"]
    # folded into another finding, it still localises
    lead = _finding("node002/gpu1", EntityKind.CARD, "collective-pair-slow")
    lead.folded.append(mine)
    assert wrong_not_localised("stress", rows, TOPO, [lead], values) == []
