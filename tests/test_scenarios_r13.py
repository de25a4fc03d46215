"""Round 13 (README "Scenarios r13"): what the first try of tests/data/scenarios-r13 got wrong.

r13-27 (hgx-h200-3su): leaf sua-r4 at 0.85 and h200-02/nic4 under it at 0.4. The search took the NIC
first (its ten pairs the most exceptions) at 0.34, its pairs' level with the leaf's share in it; the
leaf, tried next, then "contradicted" that NIC (its pairs 1.18 of the 0.29 both predicted) and each of
the leaf's four other NICs was named on its own (both seeds). An end culprit's factor is its pairs over
the shared culprits on their paths, also when the shared one is found after it
(``separation.refit``).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

UNITS = """name: r13-units
design:
  intra_host: {bandwidth: "300 GB/s", latency: "2 us"}
  scale_up: {bandwidth: "300 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "12 us"}
supernodes:
""" + "".join(f"  - {{name: h{i}, hosts: h{i}, cards_per_host: 2}}\n" for i in range(1, 7)) + """fabric:
  leaves:
    - {name: ua-r0, rail: 0, hosts: "h[1-4]"}
    - {name: ua-r1, rail: 1, hosts: "h[1-4]"}
    - {name: ub-r0, rail: 0, hosts: "h[5-6]"}
    - {name: ub-r1, rail: 1, hosts: "h[5-6]"}
  spines: [core]
backend:
  type: mock
"""


def test_a_nic_found_before_the_mild_leaf_above_it_is_read_again_over_that_leaf(tmp_path: Path):
    # before: h2/nic0 at 0.34 and the leaf ua-r0 "contradicted" by it; the other unit's leaf ub-r0 was
    # named instead (released by its retest) and ua-r0 never (seeds 1 and 2)
    inv, plan, out = tmp_path / "units.yaml", tmp_path / "faults.yaml", tmp_path / "run"
    inv.write_text(UNITS)
    plan.write_text("faults:\n  - {type: slow_switch, target: 'leaf:ua-r0', factor: 0.85}\n"
                    "  - {type: slow_nic, target: h2, port: 1, factor: 0.4}\n")
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    res = json.loads((out / "results.json").read_text())
    named = {f["entity"]: f for f in res["findings"]}
    assert set(named) == {"h2/nic0", "leaf:ua-r0"}
    assert named["leaf:ua-r0"]["severity"] == "warning" and named["h2/nic0"]["severity"] == "critical"
    assert abs(named["h2/nic0"]["evidence"]["factor"] - 0.4) < 0.05  # its own, over the leaf's 0.85
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"h2/nic0": "isolate", "leaf:ua-r0": "isolate"}
