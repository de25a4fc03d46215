"""Round 10 (README "Scenarios r10"): a retest through what carries scale-out pairs only.

r10-13: a card slow beside a leaf-to-spine cable down. The cable, named in the same wave, was a
known culprit of kind link, so its cards (every card under the leaves its spine routes it to)
were no control inside a domain, as a link's two ends are not: the card's scale-up retest had
no known-good peer and it stayed quarantined. A cable carries scale-out pairs only; the cards
behind it are fair controls inside hosts and domains, as a switch's are.

r10-09, r10-10: a leaf and a NIC slow only above 128 MiB, which only the stress layer's cross
group shows. Their collectives retest paired the suspect's cards with peers inside its domain
(no pair crossed the leaf or the NIC) and, for the leaf, set the tier's level by the median of
its own pairs: both were released, and the leaf's gate passed (exit 0). The retest now measures
through it (a NIC with its rail's cards in other domains, a switch's cards with controls behind
other leaves) and a retest's level is its controls' (``metrics._pair_ratio``).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

# r10's inv-tor at half its size (2-card hosts; the same leaves, spines and routes): a top-of-rack
# leaf per supernode holds every rail of its two hosts; ECMP routes tor-a, tor-c and tor-d to each
# other over x2 and to tor-b over x3 (tests/data/scenarios-r9/paths.py: tor-c's uplink to x2
# carries 8 of its 12 pairs, no other element's 8)
TOR = """name: r10-tor-small
design:
  intra_host: {bandwidth: "300 GB/s", latency: "2 us"}
  scale_up: {bandwidth: "300 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "12 us"}
supernodes:
""" + "".join(f"  - {{name: p{s}, hosts: 'p{s}[1-2]', cards_per_host: 2}}\n" for s in "abcd") + """fabric:
  leaves:
""" + "".join(f"    - {{name: tor-{s}, ports: {{p{s}1/nic0: 1, p{s}1/nic1: 2, p{s}2/nic0: 3, p{s}2/nic1: 4}}}}\n"
              for s in "abcd") + """  spines: [x1, x2, x3]
backend:
  type: mock
"""


def _run(tmp_path: Path, layer: str, faults: list[str]) -> dict:
    """A mock run of one layer over TOR, seed 1: exit 1, its results."""
    inv, plan, out = tmp_path / "tor.yaml", tmp_path / "faults.yaml", tmp_path / "run"
    inv.write_text(TOR)
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    r = CliRunner().invoke(main, [layer, "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def _ends(res: dict) -> dict[str, str]:
    return {e["entity"]: e["action"] for e in res["isolation"]}


def test_a_card_beside_a_cable_down_is_retested_against_the_cards_behind_the_cable(tmp_path):
    # r10-13: before, pa1/gpu0 ended 'quarantine' ("no known-good peers to retest against on scale_up")
    res = _run(tmp_path, "connectivity", ["{type: slow_card, target: pa1/gpu0, factor: 0.5}",
                                          "{type: switch_port_down, target: 'leaf:tor-c[6]'}"])
    assert _ends(res) == {"pa1/gpu0": "isolate", "leaf:tor-c[6]<->spine:x2[3]": "isolate"}


def test_a_leaf_slow_only_at_stress_sizes_is_retested_through_it(tmp_path):
    # r10-09: before, 'collective-pair-slow' on leaf:tor-d was released and the stress gate passed
    res = _run(tmp_path, "stress", ["{type: slow_switch, target: 'leaf:tor-d', factor: 0.4, above: 256M}"])
    [f] = [f for f in res["findings"] if f["severity"] in ("warning", "critical")]
    assert (f["entity"], f["rule"]) == ("leaf:tor-d", "collective-pair-slow")
    assert _ends(res) == {"leaf:tor-d": "isolate"}
    # its evidence: the rows of the pairs through the leaf (review17 #7: before, its finding's file alone)
    [rows] = [p for p in f["evidence"]["files"] if p.endswith("rows.jsonl")]
    groups = {json.loads(ln)["group"] for ln in (tmp_path / "run" / rows).read_text().splitlines()}
    ends = [{c.startswith("pd") for c in g.removeprefix("pair:").split("<->")} for g in groups]
    assert groups and all(g.startswith("pair:") for g in groups) and all(e == {True, False} for e in ends)


def test_a_nic_slow_only_at_stress_sizes_is_retested_over_the_scale_out_network(tmp_path):
    # r10-10: before, nic pb1/nic0 was retested inside its domain, not reproduced and released
    res = _run(tmp_path, "stress", ["{type: slow_nic, target: pb1, port: 1, factor: 0.4, above: 128M}"])
    assert _ends(res) == {"pb1/nic0": "isolate"}


def test_every_nic_of_a_host_slow_while_its_nvlink_tier_is_healthy_is_its_nics(tmp_path):
    # r10-04: pa1's two NICs at 0.5 (its scale-out pairs 0.5, its intra-host and scale-up pairs 1.0);
    # a host is its cards, whose speed acts on scale-out only through the NIC's cap. Before: "host
    # pa1: bandwidth below design on 6 of 6 pair tests (scale_out)", the host drained.
    res = _run(tmp_path, "connectivity", ["{type: slow_nic, target: pa1, port: 1, factor: 0.5}",
                                          "{type: slow_nic, target: pa1, port: 2, factor: 0.5}"])
    named = {(f["entity"], f["entity_kind"]) for f in res["findings"] if f["severity"] in ("warning", "critical")}
    assert named == {("pa1/nic0", "nic"), ("pa1/nic1", "nic")}
    assert _ends(res) == {"pa1/nic0": "isolate", "pa1/nic1": "isolate"}


FLEET = Path(__file__).resolve().parent / "data/scenarios-r9/inv-fleet.yaml"


def test_a_group_that_ran_nothing_runs_again_without_the_card_named_before(tmp_path):
    # r9-18 (left in round 15): every NVLink of hx1/gpu5 down (an HGX host alone in its domain) beside a
    # slow tray card; connectivity names hx1/gpu5, the stress layer's one group of hx1 times out whole.
    # Before: hx1/gpu1-7 each "not measured: took part in no collective that ran", gating the run.
    playbook, plan, out = tmp_path / "pb.yaml", tmp_path / "faults.yaml", tmp_path / "run"
    playbook.write_text("name: connectivity-stress\nlayers: [connectivity, stress]\ngate: warning\n")
    plan.write_text("faults:\n  - {type: nvlink_down, target: hx1/gpu5, links: 18}\n"
                    "  - {type: slow_card, target: r2/gpu3, factor: 0.5}\n")
    r = CliRunner().invoke(main, ["run", str(playbook), "-i", str(FLEET), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    res = json.loads((out / "results.json").read_text())
    unmeasured = {f["entity"] for f in res["findings"] if f["rule"] == "not-measured"}
    # no card of hx1 unmeasured: the card named takes part in its rail's cross group (cross:gpu5, over its
    # NIC, which works), and its host's group runs again without it (before the cross group a rail, the
    # card itself was the one 'not-measured')
    assert unmeasured == set()
    named = {(f["entity"], f["rule"]) for f in res["findings"] if f["rule"] != "not-measured"}
    assert named == {("hx1/gpu5", "p2p-bandwidth-below-design"), ("r2/gpu3", "p2p-bandwidth-below-design")}
    [stress] = [layer["summary"] for layer in res["layers"] if layer["name"] == "stress"]
    assert stress["again"][0] == "host:hx1~hx1/gpu5" and "host:hx1~hx1/gpu5" not in stress.get("slow_groups", {})
    # the others: groups slow through the slow tray card, again without it (reviews17 #1), none slow without it
    assert stress["again"][1:] and all(g.endswith("~r2/gpu3") for g in stress["again"][1:]), stress["again"]
    assert not set(stress["again"][1:]) & set(stress.get("slow_groups", {})), stress
