"""Round 11 (README "Scenarios r11"): what the first try of tests/data/scenarios-r11 got wrong.

r11-23: h200-06/gpu0's reductions wrong (``collective_corruption``) and a scale-out link slow only
above 256 MiB, which only the stress layer's cross group (gpu0 of every host) crosses there. The
cross group held h200-06/gpu0, a suspect its wrong results showed, and a slow group holding such a
suspect was taken for that suspect's symptom, so its cards were never narrowed at the size it was
slow at and the link went unnamed. A wrong value costs no time in the cost model: only a group that
failed or was slow at the narrowing's own sizes explains a group's slowness.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

# three one-host supernodes of two cards: the cross group is a1/gpu0, b1/gpu0, c1/gpu0
TINY = """name: r11-tiny
design:
  intra_host: {bandwidth: "300 GB/s", latency: "2 us"}
  scale_up: {bandwidth: "300 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "12 us"}
supernodes:
""" + "".join(f"  - {{name: s{h}, hosts: {h}1, cards_per_host: 2}}\n" for h in "abc") + """backend:
  type: mock
"""


def _stress(tmp_path: Path, faults: list[str]) -> dict:
    inv, plan, out = tmp_path / "tiny.yaml", tmp_path / "faults.yaml", tmp_path / "run"
    inv.write_text(TINY)
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    r = CliRunner().invoke(main, ["stress", "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def test_wrong_reductions_in_a_group_do_not_explain_its_slowness_at_a_large_size(tmp_path):
    # before: c1/gpu0's wrong results explained cross:gpu0's slowness from 512 MiB; nothing was narrowed
    # there, c1/gpu0 was named as the link c1/gpu0<->c1/gpu1 and the three supernodes 'not localised'
    res = _stress(tmp_path, ["{type: collective_corruption, target: c1/gpu0}",
                             "{type: degraded_link, target: 'a1/gpu0<->b1/gpu0', factor: 0.3, above: 256M}"])
    summary = res["layers"][0]["summary"]
    assert summary["slow_groups"] == {"cross:gpu0": 512 << 20} and 512 << 20 in summary["narrowing_sizes"]
    named = {(f["entity"], f["rule"]) for f in res["findings"] if f["severity"] in ("warning", "critical")}
    assert named == {("c1/gpu0", "collective-wrong-results"), ("a1/gpu0<->b1/gpu0", "collective-pair-slow")}
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"c1/gpu0": "isolate", "a1/gpu0<->b1/gpu0": "isolate"}
