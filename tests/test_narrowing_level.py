"""The stress narrowing's tier level is its host mates' (pairs with no suspect end), never the
median of pairs a suspect is half of (health/metrics.py DetectContext.apart_cards, _pair_ratio;
reviews19 #4). Shipped nightly-stress (stress + golden, no connectivity layer), mock backend."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main as cli

ROOT = Path(__file__).parent.parent
DEMO = ROOT / "fixtures" / "inventories" / "demo-2sn.yaml"


def _nightly(tmp_path: Path, faults: list[str], seed: int) -> tuple[int, dict]:
    (tmp_path / "faults.yaml").write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    result = CliRunner().invoke(cli, ["run", "nightly-stress", "-i", str(DEMO), "--backend", "mock", "--faults",
                                      str(tmp_path / "faults.yaml"), "--seed", str(seed),
                                      "--out", str(tmp_path / "run"), "-q", "--force"])
    return result.exit_code, json.loads((tmp_path / "run" / "results.json").read_text())


def test_a_card_at_four_times_latency_is_named_not_its_host_and_supernode_under_a_pass(tmp_path):
    """Seed 1: the narrowing is node003's 6 intra-host pairs, 3 through gpu2 at ~3x; their median was
    the card's own (it read 1.6x, under the 2.0 bar), and the gate passed with host node003 and
    supernode sn0 "isolate" on warning group findings."""
    code, res = _nightly(tmp_path, ["{type: high_latency_card, target: node003/gpu2, factor: 4.0}"], 1)
    assert code == 1, res["findings"]
    assert [(f["entity"], f["severity"]) for f in res["findings"]] == [("node003/gpu2", "critical")]
    assert {i["entity"] for i in res["isolation"]} == {"node003/gpu2"}
