"""SSH fan-out to 128 real loopback sshd hosts with 64 at once: sncheck beside pdsh.

    python -m pytest tests/bench/bench_fanout_pdsh.py --benchmark-enable -s -q

The same command (``uname -a``) on the same 128 hosts (127.0.1.1-128, free ports), 64 at
a time, three ways, in alternation so that a busy machine weighs on each alike:

* ``pdsh -R ssh -f 64``: an OpenSSH client process per host (connect, key exchange,
  authentication, command, close), with OpenSSH's default key exchange (on OpenSSH 9.x the
  post-quantum hybrid sntrup761x25519) and again with curve25519-sha256, the one paramiko
  settles on with these servers, so that the key exchange is not all the difference;
* sncheck's fan-out (``--forks 64``: ``run_on_all`` with 64 threads), fresh connections:
  what the first step of a run (host facts) costs;
* sncheck's fan-out over the connections the run already holds: what every later step
  (staging, launch, cleanup) costs, since the SSH backend opens each host's connection
  once per run and reuses it.

Each prints its wall time (median and best of the rounds) and the client side's CPU time
(the ssh processes' for pdsh). Runs only under
--benchmark-enable: 128 sshd are too many for CI's quick pass. Needs pdsh (scripts/setup.sh).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from sshd_harness import SshdCluster, sshd_unavailable_reason

from sncheck.transport import Connection, run_on_all

HOSTS, FORKS, ROUNDS = 128, 64, 3
COMMAND = ["uname", "-a"]

pytestmark = pytest.mark.sshd


@pytest.fixture(scope="module")
def cluster128(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    if not request.config.getoption("benchmark_enable"):
        pytest.skip("128 sshd hosts run with --benchmark-enable only")
    reason = sshd_unavailable_reason()
    if reason:
        pytest.skip(f"real sshd benchmarks need OpenSSH: {reason}")
    if shutil.which("pdsh") is None:
        pytest.skip("pdsh is not installed (scripts/setup.sh installs it)")
    started = time.perf_counter()
    with SshdCluster(HOSTS, tmp_path_factory.mktemp("fanout128")) as cluster:
        print(f"\n{HOSTS} sshd started in {time.perf_counter() - started:.1f} s")
        yield cluster


def _pdsh(cluster: SshdCluster, kex: str | None = None) -> tuple[float, float, list[str]]:
    env = {**os.environ, "PDSH_SSH_ARGS_APPEND": f"-F {cluster.ssh_config} -o BatchMode=yes "
                                                  "-o StrictHostKeyChecking=yes"
                                                  + (f" -o KexAlgorithms={kex}" if kex else "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(["pdsh", "-R", "ssh", "-f", str(FORKS), "-w", ",".join(cluster.names),
                           " ".join(COMMAND)], env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return wall, cpu, proc.stdout.splitlines()


def _sncheck(cluster: SshdCluster, targets: list) -> tuple[float, float, dict]:
    started, cpu0 = time.perf_counter(), time.process_time()
    out = run_on_all(targets, COMMAND, timeout=60, forks=FORKS, known_hosts=cluster.known_hosts,
                     connect_timeout=30.0)
    return time.perf_counter() - started, time.process_time() - cpu0, out


def test_fan_out_128_hosts_sncheck_beside_pdsh(benchmark, cluster128: SshdCluster) -> None:  # type: ignore[no-untyped-def]
    conns = [cluster128.connection(n, connect_timeout=30.0) for n in cluster128.names]
    with ThreadPoolExecutor(FORKS) as pool:   # the connections a run holds after its first step
        list(pool.map(Connection.open, conns))
    times: dict[str, list[tuple[float, float]]] = {"pdsh": [], "pdsh_curve25519": [], "sncheck": [],
                                                   "sncheck_reused": []}
    try:
        for _ in range(ROUNDS):
            wall, cpu, lines = _pdsh(cluster128)
            assert len(lines) == HOSTS and {ln.split(":", 1)[0] for ln in lines} == set(cluster128.names)
            times["pdsh"].append((wall, cpu))
            wall, cpu, lines = _pdsh(cluster128, "curve25519-sha256")
            assert len(lines) == HOSTS
            times["pdsh_curve25519"].append((wall, cpu))
            wall, cpu, out = _sncheck(cluster128, cluster128.specs())
            assert len(out.succeeded) == HOSTS, out.failed
            assert {r.stdout for r in out.succeeded.values()} == {lines[0].split(": ", 1)[1] + "\n"}
            times["sncheck"].append((wall, cpu))
            wall, cpu, out = _sncheck(cluster128, conns)
            assert len(out.succeeded) == HOSTS, out.failed
            times["sncheck_reused"].append((wall, cpu))
        reused = benchmark.pedantic(lambda: _sncheck(cluster128, conns), rounds=1, iterations=1)
        assert len(reused[2].succeeded) == HOSTS
    finally:
        for c in conns:
            c.close()
    summary = {k: {"median_s": round(statistics.median(w for w, _ in v), 2), "best_s": round(min(w for w, _ in v), 2),
                   "cpu_s": round(statistics.median(c for _, c in v), 2)} for k, v in times.items()}
    benchmark.extra_info.update(summary, hosts=HOSTS, forks=FORKS, command=" ".join(COMMAND),
                                load_1min=round(os.getloadavg()[0], 1))
    print(f"\n`{' '.join(COMMAND)}` on {HOSTS} loopback sshd hosts, {FORKS} at once, {ROUNDS} rounds "
          f"(load {os.getloadavg()[0]:.1f}):")
    for name, label in (("pdsh", f"pdsh -R ssh -f {FORKS}"),
                        ("pdsh_curve25519", f"pdsh -R ssh -f {FORKS}, KexAlgorithms=curve25519-sha256"), ("sncheck", f"sncheck fan-out --forks {FORKS}, new connections"),
                        ("sncheck_reused", f"sncheck fan-out --forks {FORKS}, the run's open connections")):
        s = summary[name]
        print(f"  {label}: {s['median_s']} s wall (best {s['best_s']} s), {s['cpu_s']} s CPU")
