"""Fan-out of a trivial command to 16 real loopback sshd hosts: parallel vs one after another.

    python -m pytest tests/bench -q --benchmark-enable

Each round opens fresh connections (key exchange, auth), runs ``true`` and closes,
which is what one probe step costs on a fleet that has no connection reuse.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sshd_harness import SshdCluster, sshd_unavailable_reason

from sncheck.transport import Connection, GroupResult, Result, run_on_all

HOSTS = 16
ROUNDS = 5

pytestmark = pytest.mark.sshd


@pytest.fixture(scope="module")
def cluster16(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    reason = sshd_unavailable_reason()
    if reason:
        pytest.skip(f"real sshd benchmarks need OpenSSH: {reason}")
    with SshdCluster(HOSTS, tmp_path_factory.mktemp("bench")) as c:
        yield c


def test_fan_out_16_hosts_forks_16(benchmark, cluster16: SshdCluster) -> None:  # type: ignore[no-untyped-def]
    def parallel() -> GroupResult:
        return run_on_all(
            cluster16.specs(), ["true"], timeout=30, forks=HOSTS, known_hosts=cluster16.known_hosts
        )

    results = benchmark.pedantic(parallel, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    assert len(results.succeeded) == HOSTS, results.failed


def test_one_host_after_another_16_hosts(benchmark, cluster16: SshdCluster) -> None:  # type: ignore[no-untyped-def]
    def sequential() -> list[Result]:
        out = []
        for spec in cluster16.specs():
            with Connection(spec, known_hosts=cluster16.known_hosts) as conn:
                out.append(conn.run(["true"], timeout=30))
        return out

    results = benchmark.pedantic(sequential, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    assert len(results) == HOSTS and all(r.ok for r in results)
