"""Shared fixtures. Test helpers live in plain modules next to this file (e.g. sshd_harness)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:  # so tests/ and tests/bench/ can `import sshd_harness`
    sys.path.insert(0, str(TESTS_DIR))

if TYPE_CHECKING:
    from slurm_harness import SlurmCluster
    from sshd_harness import SshdCluster


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    # Benchmarks are named bench_*.py so that the name says what they are;
    # collect them like test modules (they run once under --benchmark-disable).
    if (
        file_path.suffix == ".py"
        and file_path.name.startswith("bench_")
        and not parent.session.isinitpath(file_path)  # named on the command line: pytest collects it already
    ):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


@pytest.fixture(autouse=True)
def _no_user_ssh(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's ~/.ssh (config, keys, known_hosts) and ssh-agent out of every test, and
    the machine's /etc/ssh/ssh_known_hosts (read after the user's, as OpenSSH reads it)."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.setattr("sncheck.transport.knownhosts.SYSTEM_FILES", ())


@pytest.fixture
def sshd_cluster(tmp_path: Path) -> Iterator[Callable[..., SshdCluster]]:
    """Factory: ``sshd_cluster(n=3, names=None)`` starts real sshd servers, stopped after the test."""
    from sshd_harness import SshdCluster, sshd_unavailable_reason  # paramiko only where needed

    reason = sshd_unavailable_reason()
    if reason:
        pytest.skip(f"real sshd tests need OpenSSH: {reason}")
    started: list[SshdCluster] = []

    def start(n: int = 3, names: list[str] | None = None) -> SshdCluster:
        cluster = SshdCluster(n, tmp_path / f"cluster{len(started)}", names)
        started.append(cluster)  # before start(): stop() must run even if start fails halfway
        return cluster.start()

    try:
        yield start
    finally:
        failures = []
        for cluster in started:  # stop every cluster even if one fails to stop
            try:
                cluster.stop()
            except RuntimeError as e:
                failures.append(e)
        if failures:
            raise failures[0]


@pytest.fixture
def slurm_cluster(tmp_path: Path) -> Iterator[Callable[..., SlurmCluster]]:
    """Factory: ``slurm_cluster(nodes=4, cards=4, health_check=None, node_env=None, switches=None)``
    starts munged, slurmctld and ``nodes`` slurmd on loopback (under a second), stopped after the test.

    Function-scoped: a test may drain, kill or reconfigure nodes without leaking into the next.
    """
    from slurm_harness import SlurmCluster, slurm_unavailable_reason

    reason = slurm_unavailable_reason()
    if reason:
        pytest.skip(f"real Slurm tests need a loopback cluster: {reason}")
    started: list[SlurmCluster] = []

    def start(_defer: bool = False, **kw: object) -> SlurmCluster:
        """``_defer=True``: configure only; the test calls ``start()`` (e.g. after installing tools)."""
        cluster = SlurmCluster(tmp_path / f"slurm{len(started)}", **kw)  # type: ignore[arg-type]
        started.append(cluster)
        if _defer:
            return cluster
        try:
            return cluster.start()
        except RuntimeError as e:
            pytest.skip(f"Slurm could not start on loopback here: {str(e).splitlines()[0]}")

    try:
        yield start
    finally:
        failures = []
        for cluster in started:
            try:
                cluster.stop()
            except RuntimeError as e:
                failures.append(e)
        if failures:
            raise failures[0]


@pytest.fixture(scope="session")
def shared_slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One loopback cluster for the whole session (4 nodes, 2 cards each), for the Slurm
    tests that leave it as they found it: no node killed, drained or reconfigured, every
    job and allocation they make cancelled before they end. A test that breaks nodes
    starts its own with ``slurm_cluster``."""
    from slurm_harness import SlurmCluster, slurm_unavailable_reason

    reason = slurm_unavailable_reason()
    if reason:
        pytest.skip(f"real Slurm tests need a loopback cluster: {reason}")
    cluster = SlurmCluster(tmp_path_factory.mktemp("shared-slurm"), nodes=4, cards=2)
    try:
        cluster.start()
    except RuntimeError as e:
        pytest.skip(f"Slurm could not start on loopback here: {str(e).splitlines()[0]}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def watch_jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The dumps of one real gloo job (tests/watch_harness.py), shared by the watch tests."""
    from watch_harness import real_job

    return real_job(tmp_path_factory.mktemp("watch-job"))
