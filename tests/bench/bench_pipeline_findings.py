"""The columnar pipeline leaves findings unchanged: all 70 recorded scenarios (the 10 of
tests/test_scenarios.py and the 60 of bench_detection_accuracy.py), each with the fault
lines and findings main gave before the change (tests/findings_record.py).

Run: python -m pytest tests/bench/bench_pipeline_findings.py --benchmark-enable -s -q
"""

import json
from pathlib import Path

import pytest

from findings_record import findings_of

BEFORE = json.loads((Path(__file__).parent.parent / "data/findings-before-pipeline.json").read_text())


def measure(tmp_path) -> dict:
    changed = {}
    for seed, recorded in BEFORE.items():
        now = findings_of(recorded["faults"], int(seed), tmp_path)
        if now != recorded["findings"]:
            changed[seed] = {"before": recorded["findings"], "now": now}
    return {"scenarios": len(BEFORE), "changed": changed}


def test_findings_unchanged_by_the_pipeline(benchmark, request, tmp_path):
    if not request.config.getoption("benchmark_enable"):
        pytest.skip("the 70 recorded scenarios run with --benchmark-enable (tests/test_pipeline.py runs 5)")
    stats = benchmark.pedantic(measure, args=(tmp_path,), rounds=1, iterations=1)
    benchmark.extra_info["scenarios"] = stats["scenarios"]
    print(f"\n{stats['scenarios']} recorded scenarios, {len(stats['changed'])} with other findings now")
    assert stats["changed"] == {}, json.dumps(stats["changed"], indent=1)
