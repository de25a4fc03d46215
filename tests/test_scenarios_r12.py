"""Round 12 (README "Scenarios r12"): what the first try of tests/data/scenarios-r12 got wrong.

r12-31: gb200-4rack's two rail leaves of pod ab (rails 0 and 1) at 0.5. The spine joining those
rails carries 2,592 of their 3,240 slow pairs, more than either leaf, and the greedy search took it
first; each leaf then read healthier on its cross-pod pairs than the spine and it together predict
(0.5, not 0.25), and the 648 pairs inside the pod were 648 links, one a step, every candidate
evaluated again at each: 345 s of CPU and no end. Now a step that falls to links takes them all at
once, and the search runs again without the culprit that blocked a larger candidate, keeping the
smaller explanation (sncheck.health.greedy).

r12-27: cq18/gpu0 corrupting every payload and its RoCE pair with cr01/gpu0 dead. The card was
isolated on hard evidence and the link retested; the link's retest measured cq18/gpu0 with one
control, that pair's payloads arrived corrupted, and one partner is no card: the symptom search
named a new link "between two otherwise healthy cards", isolated. The suspects of a retest's wave
are, for the rules that named them, culprits found already (``DetectContext.shown``).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.levels import Level

PODS = """name: r12-pods
design:
  intra_host: {bandwidth: "400 GB/s", latency: "2 us"}
  scale_up: {bandwidth: "400 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "12 us"}
supernodes:
  - {name: s1, hosts: "a[1-3]", cards_per_host: 2}
  - {name: s2, hosts: "b[1-3]", cards_per_host: 2}
backend:
  type: mock
"""


def test_a_corrupting_cards_pair_in_its_dead_links_retest_is_the_cards_symptom_not_a_new_link(tmp_path: Path):
    # before: a1/gpu0<->b2/gpu0 "data corrupted (scale_out) between two otherwise healthy cards (seen during
    # the confirmation retest of link a1/gpu0<->b1/gpu0)", isolated (seeds 1 and 2)
    inv, plan, out = tmp_path / "pods.yaml", tmp_path / "faults.yaml", tmp_path / "run"
    inv.write_text(PODS)
    plan.write_text("faults:\n  - {type: corrupt_card, target: a1/gpu0}\n"
                    "  - {type: dead_link, target: 'a1/gpu0<->b1/gpu0'}\n")
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    res = json.loads((out / "results.json").read_text())
    assert {(f["entity"], f["rule"]) for f in res["findings"]} == {
        ("a1/gpu0", "p2p-data-corruption"), ("a1/gpu0<->b1/gpu0", "p2p-bandwidth-below-design")}
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"a1/gpu0": "isolate", "a1/gpu0<->b1/gpu0": "isolate"}


# r12-31 in small: four racks of three 2-card hosts, a rail leaf per rail for each pair of racks,
# one spine over both rails (gb200-4rack's shape)
RACKS = """name: r12-racks
design:
  scale_up: {bandwidth: "400 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "12 us"}
supernodes:
  - {name: r1, hosts: "a[1-3]", cards_per_host: 2}
  - {name: r2, hosts: "b[1-3]", cards_per_host: 2}
  - {name: r3, hosts: "c[1-3]", cards_per_host: 2}
  - {name: r4, hosts: "d[1-3]", cards_per_host: 2}
fabric:
  leaves:
    - {name: ab-rail0, rail: 0, hosts: "a[1-3],b[1-3]"}
    - {name: ab-rail1, rail: 1, hosts: "a[1-3],b[1-3]"}
    - {name: cd-rail0, rail: 0, hosts: "c[1-3],d[1-3]"}
    - {name: cd-rail1, rail: 1, hosts: "c[1-3],d[1-3]"}
  spines:
    - {name: sp, rails: [0, 1]}
backend:
  type: mock
"""


def _counted(tmp_path: Path, monkeypatch, faults: list[str]) -> tuple[dict, dict[tuple[Level, str], int]]:
    """A mock connectivity run of RACKS, exit 1: its results, and how many times each search
    (``Level``) evaluated each candidate (its factors read)."""
    evaluated: dict[tuple[Level, str], int] = {}  # (each search held: no id reused by the next)
    factors = Level.factors

    def counted(self, e):
        evaluated[self, e.name] = evaluated.get((self, e.name), 0) + 1
        return factors(self, e)

    monkeypatch.setattr(Level, "factors", counted)
    inv, plan, out = tmp_path / "racks.yaml", tmp_path / "faults.yaml", tmp_path / "run"
    inv.write_text(RACKS)
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text()), evaluated


def test_two_leaves_under_one_spine_are_the_two_leaves_in_a_bounded_search(tmp_path, monkeypatch):
    # before: the spine and the 6 links inside pod ab, each link a step of its own in which every
    # candidate was evaluated again (7 times for the racks and leaves)
    res, evaluated = _counted(tmp_path, monkeypatch, ["{type: slow_switch, target: 'leaf:ab-rail0', factor: 0.5}",
                                                      "{type: slow_switch, target: 'leaf:ab-rail1', factor: 0.5}"])
    assert {(f["entity"], f["rule"]) for f in res["findings"]} == {
        ("leaf:ab-rail0", "p2p-bandwidth-below-design"), ("leaf:ab-rail1", "p2p-bandwidth-below-design")}
    assert {e["entity"]: e["action"] for e in res["isolation"] if e["action"] != "quarantine"} == {
        "leaf:ab-rail0": "isolate", "leaf:ab-rail1": "isolate"}
    # two searches (with and without the spine) of two steps each: a candidate evaluated once a step
    assert evaluated and max(evaluated.values()) <= 4, sorted(evaluated.items(), key=lambda kv: -kv[1])[:5]


def test_links_no_candidate_explains_are_taken_in_one_step(tmp_path, monkeypatch):
    # nine links at 0.3, three disjoint in each of three racks: the search's one step takes them all,
    # each candidate evaluated once (before: a step a link, the last one evaluated 9 times)
    links = [f"{h}1/gpu0<->{h}2/gpu1" for h in "abc"] + [f"{h}1/gpu1<->{h}3/gpu0" for h in "abc"] + \
        [f"{h}2/gpu0<->{h}3/gpu1" for h in "abc"]
    res, evaluated = _counted(tmp_path, monkeypatch, [f"{{type: degraded_link, target: '{x}', factor: 0.3}}"
                                                      for x in links])
    assert {f["entity"] for f in res["findings"]} == set(links)
    assert {e["entity"]: e["action"] for e in res["isolation"] if e["action"] != "quarantine"} == {x: "isolate" for x in links}
    assert evaluated and max(evaluated.values()) == 1, sorted(evaluated.items(), key=lambda kv: -kv[1])[:5]


def test_two_leaves_of_one_rail_in_two_pods_are_the_two_leaves(tmp_path, monkeypatch):
    # the sweep of two switches at once (levels19): gb200-4rack's pod-ab-rail0 and pod-cd-rail0 at 0.5.
    # Each leaf read 0.25 from its pairs through both (more than its pairs inside it), its inside pairs at
    # 0.5 contradicted it, and the cable above one leaf (0.25) and 648 links were named
    res, evaluated = _counted(tmp_path, monkeypatch, ["{type: slow_switch, target: 'leaf:ab-rail0', factor: 0.5}",
                                                      "{type: slow_switch, target: 'leaf:cd-rail0', factor: 0.5}"])
    assert {(f["entity"], f["rule"]) for f in res["findings"]} == {
        ("leaf:ab-rail0", "p2p-bandwidth-below-design"), ("leaf:cd-rail0", "p2p-bandwidth-below-design")}
    assert {e["entity"]: e["action"] for e in res["isolation"] if e["action"] != "quarantine"} == {
        "leaf:ab-rail0": "isolate", "leaf:cd-rail0": "isolate"}
    # three searches (without the first cable, then without both) of two steps each
    assert evaluated and max(evaluated.values()) <= 6, sorted(evaluated.items(), key=lambda kv: -kv[1])[:5]
