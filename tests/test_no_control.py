"""Where the stress narrowing has no control, design (or the one peer) is the control: three faults the
shipped nightly passed, exit 0 (reviews20 #2, #13, #15).

* #2: a ToR-style leaf holding both rails (inv-dualrail) at 0.4: every card a suspect, no control pair,
  the tier's median WAS the leaf's (health/pairratio.py: its pairs read against design).
* #15: a whole host at 0.6 (every card of it a suspect): its own pairs were their level; another host's
  pairs are the intra-host controls now (layers/stress.py ``_control_hosts``).
* #13: an NVLink pair between two rails of one NVL72 rack at 0.5: only the 72-rank domain group carries
  it, whose one peer (the other rack) was never compared at its bandwidth-bound sizes
  (health/groups.py ``LONE_PEER_BOUND``).

Shipped nightly-stress, mock backend; each clean counterpart passes with no finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).parent.parent
DUALRAIL = "tests/data/scenarios-r11/inv-dualrail.yaml"
DEMO = "fixtures/inventories/demo-2sn.yaml"
HGX = "fixtures/inventories/hgx-2su.yaml"
NVL72 = "fixtures/inventories/nvl72-2rack.yaml"


def _whole_host(host: str, cards: int) -> list[str]:
    return [f"{{type: slow_card, target: {host}/gpu{k}, factor: 0.6}}" for k in range(cards)]


def _nightly(tmp_path: Path, inventory: str, faults: list[str], seed: int) -> tuple[int, dict]:
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults) if faults else "faults: []\n")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", "nightly-stress", "-i", str(ROOT / inventory), "--backend", "mock",
                                  "--faults", str(plan), "--seed", str(seed), "--out", str(out), "-q", "--force"])
    return r.exit_code, json.loads((out / "results.json").read_text())


@pytest.mark.parametrize("inventory, faults, seed, entity, kind", [
    (DUALRAIL, ["{type: slow_switch, target: leaf:ld, factor: 0.4}"], 1, "leaf:ld", "switch"),
    (DUALRAIL, ["{type: slow_switch, target: leaf:lb, factor: 0.4}"], 3, "leaf:lb", "switch"),
    (DEMO, _whole_host("node010", 4), 2, "node010", "host"),
    (HGX, _whole_host("hgx05", 8), 1, "hgx05", "host"),
    (NVL72, ['{type: degraded_link, target: "r0tray03/gpu1<->r0tray09/gpu2", factor: 0.5}'], 1,
     "r0tray03/gpu1<->r0tray09/gpu2", "link"),
])
def test_a_fault_with_no_control_in_its_narrowing_is_named_critical(tmp_path, inventory, faults, seed, entity,
                                                                     kind) -> None:
    """Before: exit 0 every seed (the leaf's three warnings 'not localised', the host's warning, nothing for
    the NVLink pair); the host's supernode was planned isolated on a warning."""
    code, res = _nightly(tmp_path, inventory, faults, seed)
    assert code == 1, res["findings"]
    named = [(f["entity"], f["entity_kind"]) for f in res["findings"] if f["severity"] == "critical"]
    assert named == [(entity, kind)], res["findings"]
    assert not [s for s in res["isolation"] if s["entity_kind"] == "supernode"], res["isolation"]


@pytest.mark.parametrize("inventory, seed", [(DUALRAIL, 1), (DEMO, 2), (HGX, 3), (NVL72, 3)])
def test_the_clean_counterparts_pass_with_no_finding(tmp_path, inventory, seed) -> None:
    code, res = _nightly(tmp_path, inventory, [], seed)
    assert (code, res["findings"], res["isolation"]) == (0, [], [])
