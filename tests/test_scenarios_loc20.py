"""Round 20 (loc20): wrong verdicts of the scenario sets r11 and r13, each as a small mock run.

r13-42: a scale-out link slow one way (0.3 from one end, 1.0 back) reads 0.65 in its pair tests (the mean
of the two directions), but a collective's edge carries both ways and runs at the slower (README "Mock
backend cost model"): the cross group through it, slow at about 0.3, read beyond the link's 0.65 and the
switch or domains above it were named. A link's factor for what it explains is its slow direction's
(``within.one_way``).

r13-46: mi355-2's XGMI pair gpu4-gpu5 over PCIe (rocm-smi's topology: a fact the tool states of the link)
beside a slow card gpu5 at its end: the link's host fact was folded into the card's finding, as a pair a host
tool measures is (a rail pair's perftest stopped by its port down), and the repair list lacked the link.

r6-19: the rail-1 leaf of a derived fabric (one leaf a rail, every host's NIC 1 under it) slow above 256 MiB,
found by the stress layer's pairs. Its retest took controls on its rail in other domains, and every such
card was behind it: the retest measured its own pairs only, had no level to judge them by and left it
quarantined. With no card of its rails left, the controls are on other rails (``controls.peers_for``).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.findings import merge_findings
from sncheck.health.within import measured_factors, one_way
from sncheck.model import Finding
from sncheck.store.frames import frames_of
from tests.test_scenarios_r10 import TOR, _ends  # TOR: four 2-host supernodes of 2 cards, a top-of-rack leaf each

DATA = Path(__file__).resolve().parent / "data"
CONNECTIVITY_STRESS = "name: connectivity-stress\nlayers:\n  - connectivity\n  - stress\ngate: warning\n"


def _run(tmp_path: Path, faults: list[str], playbook: str = CONNECTIVITY_STRESS) -> dict:
    """A mock run of ``playbook`` over TOR, seed 1: exit 1, its results."""
    inv, plan, pb, out = tmp_path / "tor.yaml", tmp_path / "faults.yaml", tmp_path / "pb.yaml", tmp_path / "run"
    inv.write_text(TOR)
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    pb.write_text(playbook)
    r = CliRunner().invoke(main, ["run", str(pb), "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def test_a_link_slow_one_way_explains_a_group_through_it_down_to_its_slow_direction(tmp_path):
    # before: the link at 0.65 (both ways' mean) explained cross:gpu1 at 0.3 no slower; the four supernodes
    # it spans were named (collective-group-slow) and stayed quarantined beside the link
    link = "pa1/gpu1<->pc1/gpu1"
    res = _run(tmp_path, [f"{{type: degraded_link, target: '{link}', factor: 0.3, direction: 'pa1/gpu1->pc1/gpu1'}}"])
    f = next(f for f in res["findings"] if f["entity"] == link)
    assert abs(f["evidence"]["factor"] - 0.65) < 0.05  # its pair tests: the two directions' mean
    assert abs(f["evidence"]["one_way_factor"] - 0.3) < 0.03  # what it explains of a collective
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {link: "isolate"}
    assert [g["entity"] for g in res["findings"] if g["severity"] != "info"] == [link]


def test_a_fact_a_tool_states_of_a_link_stays_its_own_finding_beside_the_slow_card_at_its_end():
    # before: one finding, the card's, with the link's host fact in its evidence.related
    link = "mi355-2/gpu4<->mi355-2/gpu5"
    card = Finding("mi355-2/gpu5", "card", "connectivity", "p2p-bandwidth-below-design", "critical", "slow", {})
    over_pcie = Finding(link, "link", "connectivity", "host-fact", "critical", f"{link}: XGMI: GPU4-GPU5 PCIE",
                        {"fact": "xgmi_links", "tool": "rocm-smi"})
    assert {f.entity for f in merge_findings([card, over_pcie])} == {"mi355-2/gpu5", link}
    assert not card.folded
    # a pair a host tool measured (a copy bench's card pair) through that card is still the card's symptom
    copied = Finding(link, "link", "connectivity", "host-fact", "critical", f"{link}: copy slow",
                     {"fact": "transferbench_p2p", "tool": "TransferBench"})
    assert [f.entity for f in merge_findings([card, copied])] == ["mi355-2/gpu5"] and card.folded == [copied]


def test_a_rail_leaf_holding_every_card_of_its_rail_is_retested_against_controls_on_other_rails(tmp_path):
    # before: "not judged (too few partners to apply its bar): no pair on its tier beside the suspect's own",
    # the leaf left quarantined
    plan, out = tmp_path / "faults.yaml", tmp_path / "run"
    plan.write_text("faults:\n  - {type: slow_switch, target: 'leaf:su0-rail1', factor: 0.4, above: 256M}\n")
    r = CliRunner().invoke(main, ["stress", "-i", str(DATA / "scenarios-r6/inv-quad-and-solos.yaml"), "--backend",
                                  "mock", "--faults", str(plan), "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    res = json.loads((out / "results.json").read_text())
    assert [(f["entity"], f["severity"]) for f in res["findings"]] == [("leaf:su0-rail1", "critical")]
    assert _ends(res) == {"leaf:su0-rail1": "isolate"}
    assert res["findings"][0]["evidence"]["retest"].startswith("collectives: reproduced")


def test_a_links_one_way_factor_reads_both_orientations_of_its_rows_and_only_a_clear_difference():
    link = "h1/gpu0<->h2/gpu0"

    def found() -> Finding:
        return Finding(link, "link", "connectivity", "p2p-bandwidth-below-design", "critical", "m", {"factor": 0.65})

    def p2p(src: str, dst: str, fwd: float, rev: float) -> dict:
        return {"kind": "p2p", "layer": "connectivity", "src": src, "dst": dst, "bw_GBps": fwd, "bw_rev_GBps": rev}

    # measured from each end once: h1 to h2 at 15 (0.3 of 50) in both rows, h2 to h1 at 50
    rows = frames_of([p2p("h1/gpu0", "h2/gpu0", 15.0, 50.0), p2p("h2/gpu0", "h1/gpu0", 50.0, 15.0)])
    one_way([f := found()], {"p2p-bandwidth-below-design"}, rows)
    assert f.evidence["one_way_factor"] == 0.3  # 0.65 x 15 / 32.5
    assert measured_factors([f]) == {link: 0.3}
    even = frames_of([p2p("h1/gpu0", "h2/gpu0", 32.0, 33.0)])  # the two directions alike: the mean stands
    one_way([g := found()], {"p2p-bandwidth-below-design"}, even)
    assert "one_way_factor" not in g.evidence and measured_factors([g]) == {link: 0.65}
