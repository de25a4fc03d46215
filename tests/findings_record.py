"""Findings of the scenario tests and the accuracy benchmark, in a comparable form.

The columnar row pipeline must leave findings unchanged; ``tests/data/findings-before-
pipeline.json`` holds each scenario's fault lines and its findings as computed on main
before that change (a12a675), so the comparison stays valid when scenarios.py grows.
Regenerate (only when detection itself changes on purpose):

    PYTHONPATH=. python3 tests/findings_record.py tests/data/findings-before-pipeline.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

SCENARIO_SEEDS = tuple(range(100, 110))   # tests/test_scenarios.py
ACCURACY_SEEDS = tuple(range(1000, 1060))  # tests/bench/bench_detection_accuracy.py


def findings_of(faults: list[str], seed: int, workdir: Path) -> list[list[str]]:
    """Sorted (entity, entity_kind, layer, rule, severity) of one run's findings."""
    from test_detection_mock import run

    outcome, _ = run(workdir / str(seed), faults, seed)
    return sorted([f["entity"], f["entity_kind"], f["layer"], f["rule"], f["severity"]]
                  for f in outcome.results["findings"])


def record(seed: int, workdir: Path) -> dict:
    """One scenario's fault lines (as scenarios.py made them then) and its findings."""
    from scenarios import scenario

    faults, _ = scenario(seed)
    return {"faults": faults, "findings": findings_of(faults, seed, workdir)}


def main(out: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = {str(s): record(s, Path(tmp)) for s in SCENARIO_SEEDS + ACCURACY_SEEDS}
    Path(out).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
