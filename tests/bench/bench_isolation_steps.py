"""A signal before every step of a two-host ``isolate --via slurm --via hostfile --apply``
(issue 30, item 8): SIGKILL then the next command, and SIGTERM, at each of the ~60 steps
(files, lock, tools, store transactions; tests/adversary.py STEP_CALLS). Every stop must
leave the store, the audit, the launcher files and Slurm agreeing (after the next
command's reconciliation, for SIGKILL). The plain run stops one seeded step of a one-host
command (tests/test_isolation_steps.py).

Run: python -m pytest tests/bench/bench_isolation_steps.py --benchmark-enable -s -q
"""

import signal

import pytest
from test_isolation_steps import fake_cluster, sweep  # noqa: F401 -- the fixture, used by name

HOSTS = ["node005", "node006"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["KILL", "TERM"])
def test_a_signal_at_every_step(benchmark, request, fake_cluster, tmp_path, sig):  # noqa: F811
    full = request.config.getoption("benchmark_enable")
    n, failures = benchmark.pedantic(sweep, args=(fake_cluster, tmp_path, HOSTS, sig, None if full else [9]),
                                     rounds=1, iterations=1)
    benchmark.extra_info.update({"steps": n, "failures": len(failures)})
    print(f"\n{signal.Signals(sig).name} before each of {n} steps: {len(failures)} left a disagreement")
    assert not failures, "\n".join(failures)
