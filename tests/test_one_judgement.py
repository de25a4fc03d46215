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

from sncheck.backends.mock import MockBackend
from sncheck.errors import ParseError
from sncheck.run.inputs import load_faults_text, load_inventory, load_inventory_text
from sncheck.topology import Topology
from sncheck.vendors.hostjudge import bind
from sncheck.vendors.nvidia.checks import COMMANDS
from sncheck.vendors.parsers import failures, parse_text

BOUND = [bind(c) for c in COMMANDS.values()]  # each command with its parse view, as a run has it

FAULTS = """faults:
  - {type: remap_pending, target: node2/gpu1}
  - {type: ib_port_down, target: node3, port: 2}
  - {type: ecc_uncorrectable, target: node4/gpu0, count: 2}
  - {type: thermal_throttle, target: node4/gpu1, factor: 0.8}
  - {type: nvlink_down, target: node3/gpu0, links: 2}
"""
# Facts a run judges against the inventory or the platform, which no output states.
DESIGN_ONLY: set[str] = set()


def _verdicts(backend, topo: Topology, rows: list[dict], cards: int) -> list[str]:
    """Every command where the run's facts and ``sncheck parse`` disagree, one line each."""
    by_display = {c.display: c for c in BOUND}
    wrong = []
    for host in topo.hosts:
        for out in backend.raw_outputs(host):
            cmd = by_display.get(out["command"])
            if cmd is None or cmd.view is None:
                continue
            facts = [r for r in rows if r.get("host") == host and r.get("fact") in cmd.facts
                     and r.get("tool") == cmd.tool]
            if not facts or out["exit_code"] not in (0, None):
                continue
            expect = cards if cmd.listing is not None and cmd.listing.cards else None
            try:
                parse_fails = bool(failures(parse_text(cmd.view, out["stdout"], expect=expect)))
            except ParseError:
                parse_fails = True
            run_fails = [r["fact"] for r in facts if not r["ok"] and r["fact"] not in DESIGN_ONLY]
            if parse_fails != bool(run_fails):
                wrong.append(f"{host} `{out['command']}` ({cmd.view}): parse {'exits 1' if parse_fails else 'exits 0'}"
                             f", run {'fails ' + ', '.join(run_fails) if run_fails else 'passes'} "
                             f"({[r['message'][:120] for r in facts]})")
    return wrong


def _agree(backend, topo: Topology) -> None:
    """The faults fail their hosts' facts, and on every command's output the run and parse agree."""
    rows = [r for r in collect(backend.host_facts, tuple(topo.hosts)) if r.get("kind") == "host_fact"]
    assert {r["host"] for r in rows if not r["ok"]} >= {"node2", "node3", "node4"}  # the faults show
    assert {r["host"] for r in rows if not r["ok"]} <= {"node2", "node3", "node4"}  # node1 is clean
    assert not _verdicts(backend, topo, rows, 2), "\n".join(_verdicts(backend, topo, rows, 2))
    compared = sum(1 for h in topo.hosts for o in backend.raw_outputs(h)
                   if o["command"] in {c.display for c in BOUND if c.view})
    assert compared >= 4 * 4, compared  # every host's listings were compared, not skipped


def test_the_mock_hosts_facts_and_sncheck_parse_agree() -> None:
    topo = Topology(load_inventory_text(
        "name: one-judgement\ndesign:\n  scale_up: {bandwidth: \"100 GB/s\", latency: \"5 us\"}\n"
        "supernodes:\n  - {name: sn0, hosts: \"node[1-4]\", cards_per_host: 2}\nbackend: {type: mock}\n"))
    _agree(MockBackend(topo, load_faults_text(FAULTS, topo), seed=0), topo)


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
