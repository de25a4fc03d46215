"""A retest whose every pair joins the suspect and its controls cannot tell the two sides apart
(a pair's bandwidth is its slower end's: README "Mock backend cost model"): the symptom is the
suspect's again, never the controls' (round 5's r5-39, scen7). Before: host a2 (every card at
0.7) was retested as 8 cards against 5 controls of a1, all 40 pairs at 0.7; the search named the
smaller side, host a1, 'seen during the confirmation retest' and left quarantined with no peer
to retest against, while a2's own symptom read 'not reproduced' and the slow host was released."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

INVENTORY = """name: two-by-two
design:
  scale_up:  {bandwidth: "392 GB/s", latency: "4 us"}
  scale_out: {bandwidth: "200 Gb/s", latency: "12 us"}
supernodes:
  - {name: sa, hosts: "a[1-2]", cards_per_host: 8}
  - {name: sb, hosts: "b[1-2]", cards_per_host: 8}
"""


def _connectivity(tmp_path: Path, faults: list[str]) -> tuple[int, dict]:
    (tmp_path / "inv.yaml").write_text(INVENTORY)
    (tmp_path / "faults.yaml").write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(tmp_path / "inv.yaml"), "--backend", "mock", "--faults",
                                  str(tmp_path / "faults.yaml"), "--seed", "1", "--out", str(out), "-q"])
    assert (out / "results.json").exists(), r.output
    return r.exit_code, json.loads((out / "results.json").read_text())


def test_a_slow_host_retested_only_against_one_hosts_controls_is_confirmed_not_its_controls(tmp_path: Path) -> None:
    code, res = _connectivity(tmp_path, [f"{{type: slow_card, target: a2/gpu{g}, factor: 0.7}}" for g in range(8)])
    assert code == 1
    assert [(f["entity"], f["rule"]) for f in res["findings"]] == [("a2", "p2p-bandwidth-below-design")], \
        res["findings"]
    a2 = res["findings"][0]
    assert a2["evidence"]["confirmed"] is True and "reproduced" in a2["evidence"]["retest"], a2["evidence"]
    assert "measured only against a2" in a2["evidence"]["retest"], a2["evidence"]["retest"]
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == [("a2", "quarantine"), ("a2", "isolate")]

