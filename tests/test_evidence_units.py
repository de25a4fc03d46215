"""A finding's evidence says the unit of the values it gives (results.json ``measured``/``expected``/``unit``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sncheck.health.metrics import DetectContext
from sncheck.health.rules import evaluate, load_rules
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "demo-2sn.yaml"


def test_golden_step_time_evidence_gives_seconds_as_seconds_and_the_ratio_as_x_golden() -> None:
    # reviews20 #8: {"measured": 0.0631, "expected": 0.0503, "unit": "x golden"}: step times in seconds said
    # as a ratio; the report's Top actions printed "0.0631 x golden / expected 0.0503 x golden"
    topo = Topology(load_inventory(DEMO))
    rows = pd.DataFrame([{"kind": "golden", "layer": "golden", "group": f"host:{h}", "stage": "group", "step": s,
                          "loss": 2.0 - 0.01 * s, "step_time_s": t, "comm_share": 0.2}
                         for h, t in (("node001", 0.0631), ("node002", 0.0503)) for s in range(5)])
    reference = {"loss": [2.0 - 0.01 * s for s in range(5)], "step_time_s": 0.0503}
    rules = [r for r in load_rules("default").rules if r.name == "golden-step-time-regression"]
    found = evaluate(rules, rows, DetectContext(topo, topo.inventory.design, reference=reference))
    assert [f.entity for f in found] == ["node001"], found
    ev = found[0].evidence
    assert (ev["measured"], ev["expected"], ev["unit"]) == (0.0631, 0.0503, "s"), ev
    assert (ev["ratio"], ev["ratio_unit"]) == (1.2545, "x golden") and "1.2545 x golden" in found[0].message, ev
