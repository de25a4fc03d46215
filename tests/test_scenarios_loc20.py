"""Round 20 (loc20): wrong verdicts of the scenario sets r11 and r13, each as a small mock run.

r13-42: a scale-out link slow one way (0.3 from one end, 1.0 back) reads 0.65 in its pair tests (the mean
of the two directions), but a collective's edge carries both ways and runs at the slower (README "Mock
backend cost model"): the cross group through it, slow at about 0.3, read beyond the link's 0.65 and the
switch or domains above it were named. A link's factor for what it explains is its slow direction's
(``within.one_way``).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from tests.test_scenarios_r10 import TOR  # four 2-host supernodes of 2 cards, a top-of-rack leaf each

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
