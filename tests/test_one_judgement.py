"""One parser, one judgement (issue 28): a run's host facts over real SSH and ``sncheck parse``
on the same output say the same thing.

Real sshd hosts on loopback whose ``nvidia-smi``, ``ibstat`` and ``dcgmi`` are the fake tools
(tests/fake_tool.py), acting out faults as the real tools print them, and cut or spliced
(a listing cut after a GPU, a GPU listed twice). For every command a host ran, the output the
run read (the backend keeps it) is given to ``sncheck parse VIEW --expect CARDS`` (the cards
of a card listing, as the run has them from the inventory): where parse exits 1 the run's
facts of that command fail, and where the run passes them parse exits 0. The only difference
allowed is a fact judged against what the output cannot carry (the inventory's or the
platform's design values: NVLink speed, the IB rail count): named in :data:`DESIGN_ONLY`.

The plain run compares the mock backend's hosts (the same renderers and the same checks, no
transport: under a second); the real-sshd run of the fake tools (about 25 s on two cores)
runs with ``--benchmark-enable`` (CI's time budget), as tests/bench does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_tool import install_fake_tools
from test_ssh_backend import backend_for, collect, write_inventory
from vendor_ssh import disagreements

from sncheck.backends.mock import MockBackend
from sncheck.run.inputs import load_faults_text, load_inventory, load_inventory_text
from sncheck.topology import Topology
from sncheck.vendors.nvidia.checks import COMMANDS


FAULTS = """faults:
  - {type: remap_pending, target: node2/gpu1}
  - {type: ib_port_down, target: node3, port: 2}
  - {type: ecc_uncorrectable, target: node4/gpu0, count: 2}
  - {type: thermal_throttle, target: node4/gpu1, factor: 0.8}
  - {type: nvlink_down, target: node3/gpu0, links: 2}
"""
# Facts a run judges against the inventory or the platform, which no output states.
DESIGN_ONLY: set[str] = set()


def _agree(backend, topo: Topology) -> None:
    """The faults fail their hosts' facts, and on every command's output the run and parse agree."""
    rows = [r for r in collect(backend.host_facts, tuple(topo.hosts)) if r.get("kind") == "host_fact"]
    assert {r["host"] for r in rows if not r["ok"]} >= {"node2", "node3", "node4"}  # the faults show
    assert {r["host"] for r in rows if not r["ok"]} <= {"node2", "node3", "node4"}  # node1 is clean
    wrong, compared = disagreements({h: backend.raw_outputs(h) for h in topo.hosts}, rows, COMMANDS, 2,
                                    frozenset(DESIGN_ONLY))
    assert not wrong, "\n".join(wrong)
    assert compared >= 4 * 4, compared  # every host's listings were compared, not skipped


def test_the_mock_hosts_facts_and_sncheck_parse_agree() -> None:
    topo = Topology(load_inventory_text(
        "name: one-judgement\ndesign:\n  scale_up: {bandwidth: \"100 GB/s\", latency: \"5 us\"}\n"
        "supernodes:\n  - {name: sn0, hosts: \"node[1-4]\", cards_per_host: 2}\nbackend: {type: mock}\n"))
    _agree(MockBackend(topo, load_faults_text(FAULTS, topo), seed=0), topo)


# A GB200 NVL72 rack (the platform's commands: -q -x, nvlink -s of 18 links, nvidia-imex-ctl -N):
# the card faults the tray's tools act out. The fabric's registration states are judged by the
# platform's fabric checks alone (a value in -q -x and the fabric view), so no fabric fault here.
NVL72_FAULTS = """faults:
  - {type: remap_pending, target: t02/gpu1}
  - {type: ib_port_down, target: t03, port: 2}
  - {type: ecc_uncorrectable, target: t04/gpu0, count: 2}
  - {type: thermal_throttle, target: t04/gpu3}
  - {type: nvlink_down, target: t03/gpu0, links: 2}
"""


def test_an_nvl72_racks_facts_and_sncheck_parse_agree() -> None:
    """-q -x (query_fabric) is judged by -q's checks in parse as in the run: the rack's 18 trays
    (the IMEX capture's 18 nodes: fewer hosts fail imex_domain against the inventory)."""
    topo = Topology(load_inventory_text(
        "name: nvl\nplatform: nvidia-nvl72\nsupernodes:\n  - {name: r0, hosts: \"t[01-18]\"}\n"
        "backend: {type: mock}\n"))
    backend = MockBackend(topo, load_faults_text(NVL72_FAULTS, topo), seed=0)
    rows = [r for r in collect(backend.host_facts, tuple(topo.hosts)) if r.get("kind") == "host_fact"]
    failed = {(r["host"], r["fact"]) for r in rows if not r["ok"]}
    assert failed == {("t02", "remapped_rows"), ("t03", "nvlink"), ("t03", "ib_ports"), ("t04", "ecc"),
                      ("t04", "clock_reasons")}, failed
    outputs = {h: backend.raw_outputs(h) for h in ("t01", "t02", "t03", "t04")}
    wrong, compared = disagreements(outputs, rows, COMMANDS, 4)
    assert not wrong, "\n".join(wrong)
    ran = {o["command"].split(" --")[0] for outs in outputs.values() for o in outs}
    assert {"nvidia-smi -q -x", "nvidia-imex-ctl -N", "nvidia-smi nvlink -s"} <= ran, ran
    assert compared == 4 * 8, compared  # every command of the four trays


@pytest.mark.sshd
def test_a_runs_host_facts_and_sncheck_parse_agree(sshd_cluster, tmp_path: Path, request) -> None:
    if not request.config.getoption("benchmark_enable"):
        pytest.skip("four real sshd hosts running the fake tools: with --benchmark-enable (CI time)")
    cluster = sshd_cluster(4, ["node1", "node2", "node3", "node4"])
    for host in cluster:
        install_fake_tools(host, cards=2)
    inv = write_inventory(tmp_path / "inv.yaml", cluster, cards=2)
    topo = Topology(load_inventory(inv))
    ssh = backend_for(inv, cluster, faults=load_faults_text(FAULTS, topo), act_faults_on_real_hosts=True)
    try:
        _agree(ssh, topo)
    finally:
        ssh.close()
