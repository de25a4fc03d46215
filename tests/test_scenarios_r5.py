"""Round 5's outsider scenarios (tests/data/scenarios-r5, issue 29) whose misses were mended:
each played as a gate of its own on the mock."""

from __future__ import annotations

from pathlib import Path

import yaml

from mock_gate import actions, mock_gate, named
from sncheck.run.inputs import load_inventory

R5 = Path(__file__).resolve().parent / "data/scenarios-r5"


def play(tmp_path: Path, name: str, seed: int = 1) -> dict:
    sc = yaml.safe_load((R5 / f"{name}.yaml").read_text())
    faults = [yaml.safe_dump(f, default_flow_style=True, width=1000).strip() for f in sc["faults"]]
    return mock_gate(tmp_path, load_inventory(R5 / sc["inventory"]), faults, seed=seed).results


def test_a_transient_leaf_is_not_confirmed_by_a_known_nics_pairs_beneath_it(tmp_path):
    """r5-42: leaf pb-l2 slow during the run only, pb05's rail-5 NIC slow for good. The leaf's
    retest re-measured the NIC's pairs beside 180 pairs at design; those pairs are the NIC's
    (named and isolated on its own), so the leaf ends released, the NIC isolated."""
    res = play(tmp_path, "r5-42-hgx-transient-leaf-and-nic-below-it")
    assert ("pb05/nic5", "nic") in named(res)
    acts = actions(res)
    assert acts["pb05/nic5"][-1] == "isolate"
    assert acts["leaf:pb-l2"] == ["quarantine", "release"]
