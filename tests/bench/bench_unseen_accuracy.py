"""The held-out replay of issue 29, done to ourselves (opt-in: --benchmark-enable): every
class of the team's generator, and two combined classes, planted with numbers of their own
on five inventories that generator has never seen (tests/unseen_scenarios.py,
tests/data/inventories-unseen), the full pre-upgrade gate on the mock, judged as
bench_platform_accuracy judges (recall and strict precision per class, mis-levels, wrong
ends, findings left in quarantine).

Run (one worker, niced: the figures of the report of the session that wrote it):
    SNCHECK_UNSEEN_SCENARIOS=70 SNCHECK_UNSEEN_SEEDS=2 nice -n 10 \\
        python -m pytest tests/bench/bench_unseen_accuracy.py --benchmark-enable -s -q
``SNCHECK_ACCURACY_LOG`` appends each run as it ends (a long run can be read while it goes);
``SNCHECK_UNSEEN_ONLY=7003,7010`` replays those scenario numbers only; ``SNCHECK_UNSEEN_FIRST=7500``
starts the numbers there (7500 on: the three shapes added later, ``unseen_scenarios.ADDED``),
``SNCHECK_UNSEEN_FIRST_SEED=3`` the seeds. A log read again, as bench_platform_accuracy's:
    python tests/bench/bench_unseen_accuracy.py --again 20 tests/data/sweeps/unseen-....log
    python tests/bench/bench_unseen_accuracy.py tests/data/sweeps/unseen-....log    # its report
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_platform_accuracy import _logged, lean, main, report, run_one, tally  # noqa: E402
from unseen_scenarios import CLASSES, FIRST, inventory, unseen_scenario  # noqa: E402


def replay(tmp_path: Path, scenarios: list[int], seeds: range) -> dict:
    with lean():
        return tally(_logged(run_one(tmp_path, n, s, unseen_scenario, inventory) for n in scenarios for s in seeds),
                     CLASSES, unseen_scenario)


def test_unseen_accuracy(benchmark, request, tmp_path):
    import pytest

    if not request.config.getoption("benchmark_enable"):
        pytest.skip("opt-in (--benchmark-enable): the held-out replay runs many full gates")
    only = [int(n) for n in os.environ.get("SNCHECK_UNSEEN_ONLY", "").split(",") if n]
    first = int(os.environ.get("SNCHECK_UNSEEN_FIRST_SEED", "1"))
    seeds = range(first, first + int(os.environ.get("SNCHECK_UNSEEN_SEEDS", "2")))
    start = int(os.environ.get("SNCHECK_UNSEEN_FIRST", str(FIRST)))
    scenarios = only or list(range(start, start + int(os.environ.get("SNCHECK_UNSEEN_SCENARIOS", "70"))))
    stats = benchmark.pedantic(replay, args=(tmp_path, scenarios, seeds), rounds=1, iterations=1)
    benchmark.extra_info.update({k: stats[k] for k in ("runs", "recall", "precision", "card<->host", "card<->link",
                                                        "nic<->switch")})
    print("\n" + report(stats, CLASSES))
    assert stats["runs"] == len(scenarios) * len(seeds)
    assert stats["recall"] >= 0.98 and stats["precision"] >= 0.98, report(stats, CLASSES)
    assert stats["card<->host"] == 0 and stats["card<->link"] == 0 and stats["nic<->switch"] == 0
    assert not stats["wrong_end"] and not stats["quarantined"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], unseen_scenario, inventory, CLASSES))
