"""Round 7's wrong entities, mended by the cost model (README "Scenarios r7").

A pair reads ``min(end_a, end_b) * shared`` (README "Mock backend cost model"): an end culprit's
factor is its pairs over the shared culprits on their paths only. Read over the ends' too, a card
at 0.2 inside a domain at 0.5 got the factor 0.4, which ``min(0.5, 0.4)`` never explains, and the
card's 31 pairs were named as links "well below what its two ends explain" (stop 47's review).
Its retest then had no known-good peer (every card of its domain a culprit's): the domain's other
cards are fair controls for a card named apart from it (``controls.fair_mates``).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


def connectivity(tmp_path: Path, inventory: Path, faults: list[str], seed: int = 1) -> dict:
    """A mock connectivity run with the faults given as fault-plan lines: exit 1, its results."""
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inventory), "--backend", "mock", "--faults", str(plan),
                                  "--seed", str(seed), "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def test_a_card_far_below_its_slow_domain_is_the_card_not_its_links(tmp_path):
    # the reviewer's demo-2sn case: every card of sn0 at 0.5, node003/gpu1 at 0.2 inside it
    cards = [f"node{h:03d}/gpu{g}" for h in range(1, 9) for g in range(4)]
    faults = [f"{{type: slow_card, target: {c}, factor: {0.2 if c == 'node003/gpu1' else 0.5}}}" for c in cards]
    res = connectivity(tmp_path, ROOT / "fixtures/inventories/demo-2sn.yaml", faults)
    named = {(f["entity"], f["entity_kind"]) for f in res["findings"] if f["severity"] in ("warning", "critical")}
    assert named == {("sn0", "supernode"), ("node003/gpu1", "card")}  # before: sn0 and 31 links
    [card] = [f for f in res["findings"] if f["entity"] == "node003/gpu1"]
    assert abs(card["evidence"]["factor"] - 0.2) < 0.03  # its own speed, not 0.4 of the domain's
    # retested against the domain's other cards (before: "no known-good peers", left quarantined)
    last = {e["entity"]: e["action"] for e in res["isolation"]}
    assert last == {"sn0": "isolate", "node003/gpu1": "isolate"}


def test_a_control_slower_than_the_suspect_is_found_and_isolated(tmp_path):
    # r5-23's class on round 7's 3 x 2 inventory (r7-39): ga1/gpu1 at 0.5, and its retest's one
    # scale-up control of the same index, ga2/gpu1, at 0.3 from the retest on (late). With every
    # control on ga2, the domain's one other host, ga2/gpu1 was measured against the suspect alone:
    # its one pair at 0.3 read as the suspect's symptom again and it was never named. A host mate of
    # the suspect against the same controls gives it a second partner: named and isolated.
    inv = ROOT / "tests/data/scenarios-r7/inv-gen-3x2.yaml"
    res = connectivity(tmp_path, inv, ["{type: slow_card, target: ga1/gpu1, factor: 0.5}",
                                       "{type: slow_card, target: ga2/gpu1, factor: 0.3, late: true}"])
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"ga1/gpu1": "isolate", "ga2/gpu1": "isolate"}
    [late] = [f for f in res["findings"] if f["entity"] == "ga2/gpu1"]
    assert late["entity_kind"] == "card" and late["severity"] == "critical"
    assert "seen during the confirmation retest of card ga1/gpu1" in late["message"]


def test_a_faint_card_of_a_two_host_domain_is_judged_by_its_retest(tmp_path):
    # r5-39's faint az1/gpu9 on round 7's 3 x 2 inventory: gc2/gpu3 at 0.88 (p2p-bandwidth-card-slow,
    # judged against its tier's level). Its scale-up controls are all on gc1, the domain's one other
    # host, so no retest pair on the tier was without the suspect and nothing set that level: it
    # stayed quarantined ("no pair on its tier beside the suspect's own"). A host mate of the suspect
    # against the same controls gives those pairs: confirmed and isolated.
    inv = ROOT / "tests/data/scenarios-r7/inv-gen-3x2.yaml"
    res = connectivity(tmp_path, inv, ["{type: slow_card, target: gc2/gpu3, factor: 0.88}"])
    assert [(f["entity"], f["rule"]) for f in res["findings"]] == [("gc2/gpu3", "p2p-bandwidth-card-slow")]
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"gc2/gpu3": "isolate"}


def test_a_latency_link_between_two_nics_of_two_pairs_is_the_link(tmp_path):
    # r7-25: ma/gpu1<->mc/gpu1 at 3x latency on three MI300X hosts: each end's NIC has two scale-out
    # pairs, one of them this. The NIC at one end (its factor the median of 1/3 and 1, 0.67)
    # explained the one bad pair as well as the link, its other pair measured 1.00 where it
    # predicts 0.67, inside latency's 2x bars, and won the tie as the more specific: "nic ma/nic1:
    # latency high on 1 of 2 pair tests". Of candidates explaining as much, the one fitting its own
    # pairs is the culprit: the link.
    res = connectivity(tmp_path, ROOT / "tests/data/scenarios-r7/inv-mi300x-3.yaml",
                       ['{type: high_latency_link, target: "ma/gpu1<->mc/gpu1", factor: 3}'])
    assert [(f["entity"], f["entity_kind"]) for f in res["findings"]] == [("ma/gpu1<->mc/gpu1", "link")]
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"ma/gpu1<->mc/gpu1": "isolate"}


def test_a_card_with_every_nvlink_down_is_the_card_not_its_links(tmp_path):
    # r7-31: hx4/gpu6 with all 18 NVLinks inactive. The cost model's NVLink share n_c acts on its
    # NVLink pairs only (its scale-out pairs, B_card = s B_up, read healthy); read as its speed,
    # the card at 0 predicted its scale-out pairs dead, was contradicted by them, and its 7 NVLink
    # pairs were named as 7 links "between two otherwise healthy cards".
    res = connectivity(tmp_path, ROOT / "tests/data/scenarios-r7/inv-hgx-4.yaml",
                       ["{type: nvlink_down, target: hx4/gpu6, links: 18}"])
    assert {(f["entity"], f["entity_kind"]) for f in res["findings"]} == {("hx4/gpu6", "card")}
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"hx4/gpu6": "isolate"}


def test_a_host_of_the_slow_domain_named_in_the_card_s_retest_is_the_domain_again(tmp_path):
    # r7-04 (seed 2): dm1's cards at 0.8 (at the pair bar: about half its pairs beyond it), m1t2/gpu3
    # at 0.35. The card's retest runs against the domain's other cards (fair_mates); there one of
    # their hosts read below the bar on 5 of 8 pairs and was named "seen", then stayed quarantined
    # with no known-good peer: that is the domain's level again, a culprit already named.
    cards = [f"m1t{t}/gpu{g}" for t in range(1, 5) for g in range(4)]
    faults = [f"{{type: slow_card, target: {c}, factor: {0.35 if c == 'm1t2/gpu3' else 0.8}}}" for c in cards]
    res = connectivity(tmp_path, ROOT / "tests/data/scenarios-r7/inv-nvl72-2x4.yaml", faults, seed=2)
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"m1t2/gpu3": "isolate", "dm1": "isolate"}
