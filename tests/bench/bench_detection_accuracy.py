"""Recall and false positives over many random seeded scenarios on the mock backend.

Run: python -m pytest tests/bench/bench_detection_accuracy.py --benchmark-enable -s -q
"""

from scenarios import scenario
from test_detection_mock import run

SCENARIOS = range(1000, 1060)


def measure(tmp_path) -> dict:
    injected = found_right = false_pos = 0
    misses, extras = [], []
    for seed in SCENARIOS:
        faults, culprits = scenario(seed)
        _, found = run(tmp_path / str(seed), faults, seed)
        injected += len(culprits)
        found_right += len(found & culprits)
        false_pos += len(found - culprits)
        misses += [(seed, c) for c in culprits - found]
        extras += [(seed, c) for c in found - culprits]
    return {"scenarios": len(SCENARIOS), "injected": injected, "found": found_right,
            "recall": found_right / injected, "false_positives": false_pos, "misses": misses, "extras": extras}


def test_detection_accuracy(benchmark, tmp_path):
    stats = benchmark.pedantic(measure, args=(tmp_path,), rounds=1, iterations=1)
    benchmark.extra_info.update({k: v for k, v in stats.items() if k not in ("misses", "extras")})
    print(f"\n{stats['scenarios']} scenarios: {stats['found']}/{stats['injected']} faults found "
          f"(recall {stats['recall']:.3f}), {stats['false_positives']} false positives")
    print("misses:", stats["misses"], "extras:", stats["extras"])
    assert stats["recall"] >= 0.95 and stats["false_positives"] <= 2
