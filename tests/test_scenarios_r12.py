"""Round 12 (README "Scenarios r12"): what the first try of tests/data/scenarios-r12 got wrong.

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
