"""The Slurm backend on the loopback cluster: the torch probe across 4 nodes through a real
``srun``, ranks mapped to cards from Slurm's environment; a failing step, a node that dies
mid-step and a step that hangs each end as not_run rows naming the nodes, never a hang."""

from __future__ import annotations

import os
import shlex
import sys
import threading
import time
from pathlib import Path

import pytest

from sncheck.run.inputs import load_inventory
from sncheck.probeplan import ConnectivityPlan, Group, Round, StressPlan
from sncheck.topology import Topology
from sncheck.store.rundir import read_rows

pytestmark = [pytest.mark.slurm, pytest.mark.torch]
REPO = Path(__file__).resolve().parents[1]

INVENTORY = """\
name: loopback-srun
design:
  scale_up:  {bandwidth: "1 GB/s", latency: "100 us"}
  scale_out: {bandwidth: "1 GB/s", latency: "100 us"}
supernodes:
  - {name: leaf0, hosts: "node[1-2]", cards_per_host: 2}
  - {name: leaf1, hosts: "node[3-4]", cards_per_host: 2}
backend: {type: slurm, dist_backend: gloo}
"""


@pytest.fixture
def setup(shared_slurm_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    return _setup(shared_slurm_cluster, tmp_path, monkeypatch)


@pytest.fixture
def own_setup(slurm_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A cluster of the test's own, for a test that kills a node."""
    return _setup(slurm_cluster(cards=2), tmp_path, monkeypatch)


def _setup(cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")  # every "node" is this machine
    inv = tmp_path / "inv.yaml"
    inv.write_text(INVENTORY)
    return cluster, Topology(load_inventory(inv)), tmp_path


def backend(topo: Topology, tmp_path: Path, python: str = sys.executable, **kw):  # type: ignore[no-untyped-def]
    from sncheck.backends.slurm import SlurmBackend

    return SlurmBackend(topo, python=python, shared_dir=str(tmp_path), op_timeout_s=30, **kw)


def fake_python(tmp_path: Path, node: str, action: str) -> str:
    """A python that does ``action`` (shell) on ``node`` and is the real interpreter elsewhere."""
    path = tmp_path / f"python-{node}"
    path.write_text(f'#!/bin/sh\nif [ "$SLURMD_NODENAME" = {node} ]; then {action}; fi\n'
                    f'exec {shlex.quote(sys.executable)} "$@"\n')
    path.chmod(0o755)
    return str(path)


ALL_CARDS = tuple(f"node{n}/gpu{g}" for n in range(1, 5) for g in range(2))
ALL_REDUCE = StressPlan(groups=(Group("all", "domain", ALL_CARDS),), collectives=("all_reduce",),
                        sizes=(4096, 65536), warmup=1, iters=2)


def test_ranks_follow_slurm_nodes_and_local_ids(setup) -> None:  # type: ignore[no-untyped-def]
    cluster, topo, tmp = setup
    plan = ConnectivityPlan(rounds=(Round(0, "scale_out", (("node1/gpu1", "node4/gpu0"), ("node2/gpu0", "node3/gpu1"))),),
                            hosts=("node1", "node2", "node3", "node4"), bw_bytes=1 << 16, lat_iters=3, bw_iters=1)
    rows: list[dict] = []
    backend(topo, tmp).p2p(plan, rows.append)
    p2p = {(r["src"], r["dst"]): r for r in rows if r["kind"] == "p2p"}
    assert set(p2p) == {("node1/gpu1", "node4/gpu0"), ("node2/gpu0", "node3/gpu1")}, rows
    assert all(r["status"] == "ok" and r["checksum_ok"] for r in p2p.values())


def test_a_failing_step_names_its_node(setup) -> None:  # type: ignore[no-untyped-def]
    cluster, topo, tmp = setup
    rows: list[dict] = []
    py = fake_python(tmp, "node2", "echo 'CUDA error: uncorrectable ECC error' >&2; exit 3")
    backend(topo, tmp, python=py).collectives(ALL_REDUCE, rows.append)
    nr = {r["entity"]: r for r in rows if r["kind"] == "not_run"}
    assert set(nr) == {"node1", "node2", "node3", "node4"}, rows
    assert nr["node2"]["status"] == "error" and "exit code 3" in nr["node2"]["message"], nr["node2"]
    assert "stopped when it failed on node2" in nr["node1"]["message"]


def test_a_node_dying_mid_step_gives_findings_not_a_hang(own_setup) -> None:  # type: ignore[no-untyped-def]
    cluster, topo, tmp = own_setup
    rows: list[dict] = []
    py = fake_python(tmp, "node3", f"touch {shlex.quote(str(tmp / 'node3-started'))}; sleep 30")
    killer = threading.Thread(target=lambda: (_wait_for(tmp / "node3-started"), cluster.kill_node("node3")))
    killer.start()
    start = time.monotonic()
    b = backend(topo, tmp, python=py, job_timeout_s=60)
    b.collectives(ALL_REDUCE, rows.append)
    killer.join()
    assert time.monotonic() - start < 90
    nr = {r["entity"]: r for r in rows if r["kind"] == "not_run"}
    assert set(nr) == {"node1", "node2", "node3", "node4"}, rows
    assert nr["node3"]["status"] == "error" and "node failure" in nr["node3"]["message"], b.last_stderr
    assert "stopped when it failed on node3" in nr["node1"]["message"]
    assert not [r for r in rows if r["kind"] == "collective" and r["status"] == "ok"]


def test_a_hung_step_is_cancelled_at_its_timeout(setup) -> None:  # type: ignore[no-untyped-def]
    cluster, topo, tmp = setup
    rows: list[dict] = []
    py = fake_python(tmp, "node4", "exec sleep 600")
    start = time.monotonic()
    backend(topo, tmp, python=py, job_timeout_s=5).collectives(ALL_REDUCE, rows.append)
    assert time.monotonic() - start < 50
    nr = {r["entity"]: r for r in rows if r["kind"] == "not_run"}
    assert {r["status"] for r in nr.values()} == {"timeout"} and len(nr) == 4, rows
    assert "ran past 5s and was cancelled" in nr["node4"]["message"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and cluster.run(["squeue", "-h"]).stdout.strip():
        time.sleep(0.5)
    assert cluster.run(["squeue", "-h"]).stdout.strip() == "", "the hung step was not cancelled"


def test_host_facts_through_srun(setup, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from test_node_check import install_tools

    cluster, topo, tmp = setup
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    install_tools(bin_dir, "a100", nodes=tuple(cluster.names))  # fake nvidia-smi, ibstat, dcgmi replaying real captures
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")  # srun exports it to the tasks
    rows: list[dict] = []
    backend(topo, tmp).host_facts(("node1", "node2", "node3", "node4"), rows.append)
    facts = [r for r in rows if r["kind"] == "host_fact"]
    assert {r["host"] for r in facts} == {"node1", "node2", "node3", "node4"}
    bad = [r for r in facts if not r["ok"]]
    assert not bad, bad
    assert {r["fact"] for r in facts} >= {"reachable", "card_count", "remapped_rows", "ib_ports", "dcgmi_diag"}


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def test_stress_layer_through_the_cli(setup, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """``sncheck stress --backend slurm`` from the "login node": the same path, rows judged by rules
    that need no design values (CPU ranks on one machine have no bandwidth worth judging)."""
    import json

    from click.testing import CliRunner

    from sncheck.cli.main import main

    cluster, topo, tmp = setup
    monkeypatch.chdir(tmp)  # the shared directory for job files
    playbook = tmp / "small-stress.yaml"  # a short sweep: this is about the launch path, not the numbers
    playbook.write_text("name: small-stress\nlayers:\n  - stress: {collectives: [all_reduce], min_bytes: 4096, "
                        "max_bytes: 4096, step_factor: 2, iters: 1, warmup: 0}\ngate: critical\n")
    out = tmp / "run"
    res = CliRunner().invoke(main, ["run", str(playbook), "-i", str(tmp / "inv.yaml"), "--rules", str(REPO / "fixtures" / "rules" / "node-check.yaml"), "--out", str(out),
                                    "-q"], catch_exceptions=False)
    results = json.loads((out / "results.json").read_text())
    assert res.exit_code == 0 and results["backend"] == "slurm", res.output + json.dumps(results["findings"])[:2000]
    rows = read_rows(out)
    coll = [r for r in rows if r["kind"] == "collective"]
    assert coll and all(r["status"] == "ok" and r["wrong"] == 0 for r in coll), coll
    ranks = {r["group"]: r["ranks"] for r in coll}
    # inside a node, a supernode's domain (its step: 2 tasks on each of its nodes) and the
    # bounded plan's rail across supernodes (its step: one task on each of the 4 nodes)
    assert ranks["host:node3"] == 2 and ranks["domain:leaf0"] == ranks["domain:leaf1"] == 4, ranks
    assert ranks["cross:gpu0"] == 4, ranks


def test_fake_nccl_tests_run_through_the_same_srun_path(setup) -> None:  # type: ignore[no-untyped-def]
    """nccl-tests binaries that replay a real capture, started by real srun on all 4 nodes:
    rank 0 prints the table (as under MPI); a task that fails on node3 is named."""
    from sncheck.vendors.parsers import strip_source_header

    cluster, topo, tmp = setup
    tests_dir = tmp / "nccl-tests"
    tests_dir.mkdir()
    capture = REPO / "fixtures" / "real" / "nccl-tests" / "all_reduce_perf" / "01_h100_16ranks_2nodes_float_newcols.txt"
    (tests_dir / "all_reduce_perf.out").write_text(strip_source_header(capture.read_text()))
    log = tmp / "tasks.log"
    (tests_dir / "all_reduce_perf").write_text(
        "#!/bin/sh\n"
        f'echo "$SLURM_PROCID $SLURMD_NODENAME $SLURM_LOCALID $*" >> {shlex.quote(str(log))}\n'
        f'[ -e {shlex.quote(str(tmp / "fail-node3"))} ] && [ "$SLURMD_NODENAME" = node3 ] && exit 1\n'
        f'[ "$SLURM_PROCID" = 0 ] && cat {shlex.quote(str(tests_dir / "all_reduce_perf.out"))}\n'
        "exit 0\n")
    (tests_dir / "all_reduce_perf").chmod(0o755)
    plan = StressPlan(groups=(Group("all", "domain", ALL_CARDS),), collectives=("all_reduce",),
                      sizes=(8, 16, 32), warmup=2, iters=5)
    rows: list[dict] = []
    backend(topo, tmp, nccl_tests_dir=str(tests_dir)).collectives(plan, rows.append)
    coll = [r for r in rows if r["kind"] == "collective"]
    assert len(coll) == 31 and all(r["status"] == "ok" and r["wrong"] == 0 for r in coll), rows[-3:]
    tasks = sorted(line.split()[:3] for line in log.read_text().splitlines())
    assert len(tasks) == 8 and {t[1] for t in tasks} == {"node1", "node2", "node3", "node4"}
    assert "-b 8 -e 32 -f 2 -g 1 -c 1 -n 5 -w 2" in log.read_text()

    (tmp / "fail-node3").touch()
    rows = []
    backend(topo, tmp, nccl_tests_dir=str(tests_dir)).collectives(plan, rows.append)
    nr = [r for r in rows if r["kind"] == "not_run"]
    assert len(nr) == 1 and nr[0]["status"] == "error" and "node3" in nr[0]["message"], nr
